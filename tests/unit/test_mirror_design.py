"""A study file's ``[design] blocks = "mirror"``: a 2^k in 2^(k−1) blocks of two, each cell
beside its mirror, and what compare's fit makes of it (the main effects within the blocks, the
interaction confounded with them), checked against a least squares fit of numpy's."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lab.app.study import parse_study
from lab.commands.study import describe_plan, plan_json
from lab.core.cells import cell_levels
from lab.core.errors import ConfigError
from lab.stats.effects import fit_effects

STUDY = """name = "mirror"
vcpus = 1
memory = "1G"
[factors]
{factors}
[design]
blocks = "{blocks}"
[[workload]]
name = "null"
n = 5
"""
TWO_BY_TWO = 'guest-thp = ["always", "never"]\nprealloc = ["off", "on"]'


def test_a_2x2_runs_in_two_blocks_each_cell_beside_its_mirror() -> None:
    study = parse_study(STUDY.format(factors=TWO_BY_TWO, blocks="mirror"))
    design = study.design
    assert design is not None and design.blocking == "mirror"
    assert len(design.blocks) == 2 and study.pairs == design.blocks
    assert sorted(c for block in design.blocks for c in block) == sorted(design.cells)
    for a, b in design.blocks:
        la, lb = cell_levels(a), cell_levels(b)
        assert la is not None and lb is not None and all(la[f] != lb[f] for f in la)
    assert design.confounded == ("guest-thp:prealloc",)
    lines = describe_plan(study, "lab.db", {})
    assert any("2 blocks of 2 (each cell beside its mirror" in line for line in lines)
    assert "    confounded with the blocks, not estimated: guest-thp:prealloc" in lines
    document = json.loads(plan_json(study, "lab.db", {}, "debian12"))["design"]
    assert document["blocking"] == "mirror"
    assert document["confounded_with_blocks"] == ["guest-thp:prealloc"]
    again = parse_study(STUDY.format(factors=TWO_BY_TWO, blocks="mirror"))
    assert again.design == design  # the same file, the same plan (resumable)
    pairs = parse_study(STUDY.format(factors=TWO_BY_TWO, blocks="pairs")).design
    assert pairs is not None and len(pairs.blocks) == 6 and pairs.confounded == ()


def test_compare_s_fit_of_mirror_blocks_gives_the_main_effects_and_names_the_confounded() -> None:
    design = parse_study(STUDY.format(factors=TWO_BY_TWO, blocks="mirror")).design
    assert design is not None
    rng = np.random.default_rng(4)
    effect = {"guest-thp": {"always": 0.0, "never": -0.05}, "prealloc": {"off": 0.0, "on": 0.08}}
    values, factors, blocks = [], {"guest-thp": [], "prealloc": []}, []  # type: ignore[var-annotated]
    for i, block in enumerate(design.blocks):
        for cell in block:
            levels = cell_levels(cell)
            assert levels is not None
            for _ in range(6):
                values.append(np.exp(3.0 + 0.3 * i + sum(effect[f][levels[f]] for f in levels)
                                     + rng.normal(0, 0.01)))  # fmt: skip
                for f in factors:
                    factors[f].append(levels[f])
                blocks.append(f"b{i}")
    order = {"guest-thp": ["always", "never"], "prealloc": ["off", "on"]}
    fit = fit_effects(values, factors, blocks=blocks, confidence=0.95, levels=order)
    terms = {e.term for e in fit.effects}
    assert {"guest-thp", "prealloc"} <= terms and "guest-thp:prealloc" not in terms
    assert "guest-thp:prealloc" in fit.confounded + fit.not_estimable
    # numpy's least squares on the same samples: block dummies and the two ±1 columns
    y = np.log(values)
    x = np.column_stack([
        *(np.array([b == f"b{i}" for b in blocks], float) for i in range(len(design.blocks))),
        np.where(np.array(factors["guest-thp"]) == "never", 1.0, -1.0),
        np.where(np.array(factors["prealloc"]) == "on", 1.0, -1.0),
    ])  # fmt: skip
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    ratio = {e.term: e.ratio for e in fit.effects}
    assert ratio["guest-thp"] == pytest.approx(np.exp(2 * beta[-2]), rel=1e-6)
    assert ratio["prealloc"] == pytest.approx(np.exp(2 * beta[-1]), rel=1e-6)
    assert ratio["prealloc"] == pytest.approx(np.exp(0.08), rel=0.02)


@pytest.mark.parametrize(
    ("factors", "blocks", "said"),
    [
        ('page = ["thp", "1g"]\nprealloc = ["off", "on"]', "mirror", "page-1g.prealloc-off cannot"),
        ('page = ["thp", "2m", "1g"]\nprealloc = ["off", "on"]', "mirror", r"page \(3 levels\)"),
        (TWO_BY_TWO, "random", 'must be "pairs"'),
    ],
)
def test_what_mirror_blocks_cannot_run_is_refused(factors: str, blocks: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        parse_study(STUDY.format(factors=factors, blocks=blocks))


def test_mirror_blocks_and_a_fraction_are_refused_together() -> None:
    text = STUDY.format(factors=TWO_BY_TWO, blocks="mirror").replace(
        'blocks = "mirror"', 'blocks = "mirror"\nfraction = ["prealloc = guest-thp"]'
    )
    with pytest.raises(ConfigError, match="takes the full design"):
        parse_study(text)
