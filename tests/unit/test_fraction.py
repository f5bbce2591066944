"""A study file's ``[design] fraction``: its cells, its alias structure against a published
table, and every refusal.

Montgomery, "Design and Analysis of Experiments" (8th ed.), §8.2, Table 8.3 and the alias
structure below it: the 2^(4−1) with D = ABC has the runs (1), ad, bd, ab, cd, ac, bc, abcd and
I = ABCD, A = BCD, B = ACD, C = ABD, D = ABC, AB = CD, AC = BD, AD = BC. Here A..D are mapped
to factor names by substituting letters, independently of lab.stats.designs's word algebra.
"""

from __future__ import annotations

import itertools
import json
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import lab.app.design as design_module
from lab.app.design import Design, parse_design
from lab.app.fraction import parse_fraction
from lab.app.study import parse_study
from lab.commands.study import describe_plan, plan_json
from lab.core.errors import ConfigError
from lab.stats.pairblocks import pair_counts

# A, B, C, D of the book as four two-level factors with dashes in their names, as the lab's are
NAMES = {"A": "page", "B": "prealloc", "C": "guest-thp", "D": "host-age"}
LEVELS = {"page": ("thp", "1g"), "prealloc": ("off", "on"), "guest-thp": ("always", "never"),
          "host-age": ("fresh", "aged")}  # fmt: skip
FACTORS = [(f, LEVELS[f]) for f in NAMES.values()]

MONTGOMERY_ALIASES = ["I = ABCD", "A = BCD", "B = ACD", "C = ABD", "D = ABC", "AB = CD",
                      "AC = BD", "AD = BC"]  # fmt: skip
MONTGOMERY_RUNS = ["(1)", "ad", "bd", "ab", "cd", "ac", "bc", "abcd"]  # Table 8.3


def named(line: str) -> str:
    """A line of the book's table with each letter a factor's name, joined by ':'."""
    return " = ".join(
        word if word == "I" else ":".join(NAMES[letter] for letter in word)
        for word in line.split(" = ")
    )


def cell_of(run: str) -> str:
    """A run of the book's table ("ad": A and D high, the rest low) as the lab's cell name."""
    high = {NAMES[c.upper()] for c in run if c.isalpha()} if run != "(1)" else set()
    return ".".join(f"{f}-{levels[1] if f in high else levels[0]}" for f, levels in FACTORS)


def every_cell_runs(cell: str) -> str | None:
    return None


def test_the_half_fraction_d_abc_has_montgomerys_runs_and_aliases() -> None:
    table = {"fraction": ["host-age = page * prealloc * guest-thp"]}
    got = parse_fraction("s.toml", FACTORS, table, every_cell_runs)
    assert got.generators == ("host-age = page * prealloc * guest-thp",)
    assert got.aliases == tuple(named(line) for line in MONTGOMERY_ALIASES)
    assert got.aliases[5] == "page:prealloc = guest-thp:host-age"
    assert sorted(got.cells) == sorted(cell_of(run) for run in MONTGOMERY_RUNS)
    assert got.resolution == 4


def test_the_other_half_flips_the_signs_and_runs_the_other_eight_cells() -> None:
    one = parse_fraction("s", FACTORS, {"fraction": ["host-age = page*prealloc*guest-thp"]},
                         every_cell_runs)  # fmt: skip
    other = parse_fraction("s", FACTORS, {"fraction": ["host-age = -page prealloc guest-thp"]},
                           every_cell_runs)  # fmt: skip
    assert other.generators == ("host-age = -page * prealloc * guest-thp",)
    assert other.aliases[:2] == ("I = -page:prealloc:guest-thp:host-age",
                                 "page = -prealloc:guest-thp:host-age")  # fmt: skip
    full = {".".join(f"{f}-{lv}" for (f, _), lv in zip(FACTORS, levels, strict=True))
            for levels in itertools.product(*(lv for _, lv in FACTORS))}  # fmt: skip
    assert set(one.cells) | set(other.cells) == full and not set(one.cells) & set(other.cells)


def test_each_cell_of_the_fraction_keeps_its_generator() -> None:
    """Independently of the word algebra: in every cell, guest-thp's ±1 level is the product
    of page's and prealloc's (first level −1, second +1); the first factor changes fastest."""
    factors = FACTORS[:3]
    got = parse_fraction("s", factors, {"fraction": ["guest-thp = page * prealloc"]},
                         every_cell_runs)  # fmt: skip
    signs = []
    for cell in got.cells:
        levels = dict(part.rsplit("-", 1) for part in cell.split("."))
        signs.append([1 if levels[f] == lv[1] else -1 for f, lv in factors])
    assert all(a * b == c for a, b, c in signs)
    assert [s[:2] for s in signs] == [[-1, -1], [1, -1], [-1, 1], [1, 1]]
    assert got.aliases == ("I = page:prealloc:guest-thp", "page = prealloc:guest-thp",
                           "prealloc = page:guest-thp", "guest-thp = page:prealloc")  # fmt: skip
    assert got.resolution == 3


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({"fraction": ["host-age = page * speed"]}, "names 'speed', which is not a factor"),
        ({"fraction": ["age = page * prealloc"]}, "names 'age', which is not a factor"),
        ({"fraction": ["host-age page prealloc"]}, "is not of the form 'FACTOR = FACTOR"),
        ({"fraction": ["host-age = "]}, "is not of the form"),
        ({"fraction": [3]}, "is not of the form"),
        ({"fraction": []}, "must list one or more generators"),
        ({"fraction": "host-age = page * prealloc"}, "must list one or more generators"),
        ({"fractions": ["host-age = page * prealloc"]},
         r"takes one key, fraction \(not fractions\)"),
        ({"fraction": ["host-age = page"]}, "makes host-age the same as page"),
        ({"fraction": ["host-age = page * host-age"]}, "names host-age twice"),
        ({"fraction": ["host-age = page * page"]}, "names page twice"),
        ({"fraction": ["host-age = page * prealloc", "host-age = page * guest-thp"]},
         "define a factor twice"),
        ({"fraction": ["host-age = page * prealloc", "guest-thp = page * prealloc"]},
         "alias a factor with a main effect or each other"),
    ],
)  # fmt: skip
def test_bad_generators_are_refused_naming_the_file(table: object, expected: str) -> None:
    with pytest.raises(ConfigError, match=r"^s\.toml: \[design\] .*" + expected):
        parse_fraction("s.toml", FACTORS, table, every_cell_runs)


def test_a_factor_of_more_than_two_levels_is_refused() -> None:
    factors = [("page", ("thp", "2m", "1g")), *FACTORS[1:]]
    with pytest.raises(ConfigError, match=r"every factor at two levels; page \(3 levels\)"):
        parse_fraction("s.toml", factors, {"fraction": ["host-age = prealloc * guest-thp"]},
                       every_cell_runs)  # fmt: skip


def refusing(cell: str) -> Callable[[str], str | None]:
    return lambda name: "libvirt refuses it" if name == cell else None


def test_a_fraction_that_loses_a_cell_is_refused_and_the_other_half_offered() -> None:
    factors = FACTORS[:3]
    table = {"fraction": ["guest-thp = page * prealloc"]}
    lost = "page-1g.prealloc-off.guest-thp-always"  # a cell of this half, not of the other
    with pytest.raises(ConfigError, match=f"holds cell {re.escape(lost)}, which cannot run") as e:
        parse_fraction("s.toml", factors, table, refusing(lost))
    assert "no longer keeps its alias sets apart" in (e.value.hint or "")
    assert '[design] fraction = ["guest-thp = -page * prealloc"]' in (e.value.hint or "")
    other = {"fraction": ["guest-thp = -page * prealloc"]}
    assert lost not in parse_fraction("s.toml", factors, other, refusing(lost)).cells


def test_the_lab_refuses_a_half_of_page_and_prealloc_1g_on_demand_is_in_both_halves() -> None:
    """With the lab's own factors: 1 GiB pages on demand (page-1g with prealloc-off) is in
    every half of page × prealloc × guest-thp, so no half runs; the hint says so."""
    text = STUDY.format(design='[design]\nfraction = ["guest-thp = page * prealloc"]\n')
    lost = r"page-1g\.prealloc-off\.guest-thp-.*libvirt refuses"
    with pytest.raises(ConfigError, match=lost) as e:
        parse_study(text)
    assert "The other half holds such a cell too" in (e.value.hint or "")


STUDY = """name = "frac"
vcpus = 1
memory = "1G"
[factors]
page = ["thp", "1g"]
prealloc = ["off", "on"]
guest-thp = ["always", "never"]
{design}
[[workload]]
name = "null"
n = 5
"""


@pytest.fixture
def expressible(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for libvirt's refusals: every cell can run (no page-1g.prealloc-off)."""
    monkeypatch.setattr(design_module, "cell_problem", every_cell_runs)


@pytest.mark.usefixtures("expressible")
def test_a_fractional_study_runs_the_fractions_cells_every_pair_once(tmp_path: Path) -> None:
    got = parse_study(STUDY.format(design='[design]\nfraction = ["guest-thp = page * prealloc"]'))
    design = got.design
    assert design is not None and design.fraction == ("guest-thp = page * prealloc",)
    assert len(design.cells) == 4 and design.left_out == ()
    assert set(pair_counts(design.blocks).values()) == {1} and len(design.blocks) == 6
    assert {c for block in design.blocks for c in block} == set(design.cells)
    full = parse_study(STUDY.format(design=""))
    assert full.design is not None and full.design.fraction == () and len(full.design.cells) == 8
    lines = describe_plan(got, "lab.db", {})
    assert "    fraction 2^(3-1) of resolution III: guest-thp = page * prealloc" in lines
    assert "    defining relation: I = page:prealloc:guest-thp" in lines
    assert "      page = prealloc:guest-thp" in lines
    assert "      guest-thp = page:prealloc" in lines
    again = parse_study(STUDY.format(design='[design]\nfraction = ["guest-thp = page * prealloc"]'))
    assert again.design == design  # the same file, the same plan (resumable)
    document = json.loads(plan_json(got, "lab.db", {}, "debian12"))["design"]
    assert document["fraction"] == ["guest-thp = page * prealloc"]
    assert document["aliases"][0] == "I = page:prealloc:guest-thp"
    assert document["cells"] == list(design.cells) and document["left_out"] == []


def test_design_without_factors_is_refused() -> None:
    text = 'name = "s"\nvariants = ["thp", "shp1g"]\nvcpus = 1\nmemory = "1G"\n'
    text += '[design]\nfraction = ["a = b * c"]\n[[workload]]\nname = "null"\nn = 5\n'
    with pytest.raises(ConfigError, match=r"\[design\] needs \[factors\]"):
        parse_study(text)


def test_a_full_design_is_as_before() -> None:
    """No [design]: the design and its seed are what they were before fractions."""
    got = parse_design("s", {"page": ["thp", "1g"], "prealloc": ["off", "on"]})
    assert isinstance(got, Design) and got.fraction == () and got.aliases == ()
    assert got.seed == zlib.crc32(b'[["page", ["thp", "1g"]], ["prealloc", ["off", "on"]]]')


def test_guest_thp_crosses_in_a_study_file() -> None:
    """Its levels set the kernel's command line: the probe boots a kernel as the lab's images
    do, so a design takes them (an image with its own bootloader is `lab up`'s refusal)."""
    got = parse_design("s", {"page": ["thp", "1g"], "guest-thp": ["always", "never"]})
    assert len(got.cells) == 4 and got.left_out == ()


def alias_matrix(cells: list[str]) -> np.ndarray:
    """What each main effect's least-squares estimate over ``cells`` also holds of each
    two-factor interaction: (X1'X1)^-1 X1'X2, the ±1 columns read from the cells' names."""
    coded = np.array([[1.0 if f"{f}-{lv[1]}" in cell.split(".") else -1.0 for f, lv in FACTORS]
                      for cell in cells])  # fmt: skip
    x1 = np.column_stack([np.ones(len(cells)), coded])
    pairs = itertools.combinations(range(len(FACTORS)), 2)
    x2 = np.column_stack([coded[:, i] * coded[:, j] for i, j in pairs])
    return np.asarray(np.linalg.solve(x1.T @ x1, x1.T @ x2))[1:]


def test_a_fraction_that_loses_a_cell_mixes_main_effects_with_two_factor_interactions() -> None:
    """Why a lost cell is refused: in the resolution IV 2^(4−1) no main effect holds any
    two-factor interaction; without any one of its 8 cells each main effect's estimate holds
    1/3 of every one of them (Montgomery's alias matrix, §8.2, computed here)."""
    table = {"fraction": ["host-age = page * prealloc * guest-thp"]}
    cells = list(parse_fraction("s", FACTORS, table, every_cell_runs).cells)
    assert np.allclose(alias_matrix(cells), 0.0)
    for lost in cells:
        assert np.allclose(np.abs(alias_matrix([c for c in cells if c != lost])), 1 / 3)
