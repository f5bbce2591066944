"""Designs and their alias structure, against published tables.

Montgomery, "Design and Analysis of Experiments" (8th ed.), §8.2: the 2^(4−1) fraction with
D = ABC is resolution IV, I = ABCD, with A = BCD, B = ACD, C = ABD, D = ABC, AB = CD, AC = BD,
AD = BC; §8.5 (and Example 8.7): the 2^(5−2) with D = AB, E = AC has I = ABD = ACE = BCDE and
A = BD = CE = ABCDE, …, BE = CD = ABC = ADE. Jain's ch. 19 gives the same 2^(4−1)'s sign table.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from lab.core.errors import UsageError
from lab.stats.designs import all_terms, fractional, full_factorial, two_level
from lab.stats.pairblocks import pair_blocks, pair_counts


def test_half_fraction_d_abc_aliases_as_published() -> None:
    design = fractional("ABC", ["D = ABC"])
    assert design.alias_lines() == [
        "I = ABCD",
        "A = BCD",
        "B = ACD",
        "C = ABD",
        "D = ABC",
        "AB = CD",
        "AC = BD",
        "AD = BC",
    ]
    assert design.resolution == 4
    assert [" ".join(t) for t in design.estimable_terms()] == [
        "A", "B", "C", "D", "A B", "A C", "A D",
    ]  # fmt: skip


def test_quarter_fraction_aliases_as_published() -> None:
    design = fractional("ABC", ["D = AB", "E = AC"])
    assert design.alias_lines() == [
        "I = ABD = ACE = BCDE",
        "A = BD = CE = ABCDE",
        "B = AD = CDE = ABCE",
        "C = AE = BDE = ABCD",
        "D = AB = BCE = ACDE",
        "E = AC = BCD = ABDE",
        "BC = DE = ABE = ACD",
        "BE = CD = ABC = ADE",
    ]
    assert design.resolution == 3
    # Up to two-factor interactions, as the book's tables usually stop.
    assert design.alias_lines(2)[1:3] == ["A = BD = CE", "B = AD"]


def test_aliases_agree_with_the_runs_columns() -> None:
    """Independently of the word algebra: two terms are aliased exactly when their ±1
    columns over the fraction's runs are equal or opposite, a negative generator included."""
    fractions = (("ABC", ["D = ABC"]), ("ABC", ["D = -AB", "E = AC"]), ("ABCD", ["E = ABCD"]))
    for base, gens in fractions:
        design = fractional(base, gens)
        x = 2 * np.array(design.runs) - 1
        column = {t: np.prod(x[:, [design.factors.index(f) for f in t]], axis=1)
                  for t in all_terms(design.factors)}  # fmt: skip
        sets = design.aliases()
        listed = {t for a in sets for t in a.terms}
        assert len(sets) == len(design.runs) - 1  # one per degree of freedom but the mean
        for alias in sets:
            first = column[alias.estimable]
            for term, sign in zip(alias.terms, alias.signs, strict=True):
                assert np.array_equal(column[term], sign * first)
        for a, b in itertools.combinations([a.estimable for a in sets], 2):
            assert abs(column[a] @ column[b]) == 0  # estimable terms are orthogonal
        for term in set(column) - listed:  # the words of the defining relation
            assert abs(column[term].sum()) == len(design.runs)


def test_fraction_runs_are_the_published_sign_table() -> None:
    # Jain Table 19.x / Montgomery Table 8.3: D = ABC, runs in standard order.
    design = fractional("ABC", ["D = ABC"])
    assert [tuple(2 * v - 1 for v in run) for run in design.runs] == [
        (-1, -1, -1, -1), (1, -1, -1, 1), (-1, 1, -1, 1), (1, 1, -1, -1),
        (-1, -1, 1, 1), (1, -1, 1, -1), (-1, 1, 1, -1), (1, 1, 1, 1),
    ]  # fmt: skip


def test_full_and_mixed_designs() -> None:
    assert len(two_level("ABC").runs) == 8
    assert two_level("ABC").aliases() and two_level("ABC").defining_relation == []
    mixed = full_factorial({"guest-thp": ("always", "madvise", "never"), "prealloc": ("off", "on")})
    cells = mixed.cells()
    assert len(cells) == 6
    assert Counter(c["guest-thp"] for c in cells) == {"always": 2, "madvise": 2, "never": 2}
    assert cells[0] == {"guest-thp": "always", "prealloc": "off"}
    assert cells[1] == {"guest-thp": "madvise", "prealloc": "off"}
    with pytest.raises(UsageError, match="two-level"):
        mixed.aliases()


@pytest.mark.parametrize(
    "generators",
    [["D = AE"], ["D = AB", "D = AC"], ["D = A"], ["D = AB", "E = BA"], ["A = BC"]],
)
def test_bad_generators_are_refused(generators: list[str]) -> None:
    with pytest.raises(UsageError):
        fractional("ABC", generators)


def test_long_factor_names() -> None:
    design = fractional(["page", "prealloc", "thp"], ["numa = page*prealloc*thp"])
    assert design.alias_lines()[:2] == ["I = page:prealloc:thp:numa", "page = prealloc:thp:numa"]


@pytest.mark.parametrize("cells", [3, 4, 6, 7])
def test_pair_blocks_are_balanced_and_seeded(cells: int) -> None:
    names = [f"c{i}" for i in range(cells)]
    blocks = pair_blocks(names, seed=7, replicates=2)
    assert len(blocks) == cells * (cells - 1)  # b = λ·v(v−1)/2 with λ = 2
    assert set(pair_counts(blocks).values()) == {2}
    assert Counter(c for b in blocks for c in b) == {n: 2 * (cells - 1) for n in names}
    assert blocks == pair_blocks(names, seed=7, replicates=2)
    assert blocks != pair_blocks(names, seed=8, replicates=2)


def test_pair_blocks_randomise_the_order_within_blocks() -> None:
    names = [f"c{i}" for i in range(8)]
    firsts = Counter(b[0] for seed in range(200) for b in pair_blocks(names, seed=seed))
    # Each cell is first in half its 7 blocks on average: 200·3.5 = 700, sd ≈ 24.
    assert all(600 < n < 800 for n in firsts.values())
    with pytest.raises(UsageError):
        pair_blocks(["a"], seed=1)
