"""A sweep's statistics: the multiplicity corrections against statsmodels, each value's p
against the tests it inverts, corrected verdicts, and the crossing on constructed data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from lab.core.sweeps import Axis, points
from lab.stats.analysis import MetricComparison, analyse
from lab.stats.multiplicity import Correction, benjamini_hochberg, holm
from lab.stats.series import Direction, Series
from lab.stats.sweep import ALPHA_FLOOR, claim_p, compare_sweep, verdict_at
from lab.stats.verdict import Outcome, Threshold

ONE_PERCENT = Threshold(0.01)


# -- the corrections, against an independent implementation ----------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_holm_and_bh_agree_with_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 30))
    p = rng.uniform(0, 1, m) ** rng.uniform(1, 8)  # many small ones, as a real family has
    if m > 3:
        p[1] = p[2]  # a tie
    for ours, method in ((holm, "holm"), (benjamini_hochberg, "fdr_bh")):
        reject, expected, *_ = multipletests(p, alpha=0.05, method=method)
        assert np.allclose(ours(p), expected, rtol=1e-12, atol=0)
        assert ((np.array(ours(p)) <= 0.05) == reject).all()


def test_holm_and_bh_on_a_published_example() -> None:
    # Holm (1979) and Benjamini & Hochberg (1995) step through sorted p-values; by hand:
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04: Holm ×4, ×3, ×2, ×1, then running maximum
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: ×4/1, ×4/2, ×4/3, ×4/4 = 0.02, 0.02, 0.04, 0.04, then running minimum from the top
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert holm([0.9]) == (0.9,) and benjamini_hochberg([0.9]) == (0.9,)
    assert holm([0.6, 0.7]) == (1.0, 1.0)  # capped at 1


# -- each value's p ---------------------------------------------------------------------------


def _arms(seed: int, n: int, shift: float, sd: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.normal(100.0, sd, n)
    return a, rng.normal(100.0 + shift, sd, n)


@pytest.mark.parametrize(("seed", "shift", "claim"), [
    (1, -3.0, Outcome.FASTER),  # B 3 % lower, lower is better
    (2, 3.0, Outcome.SLOWER),
    (3, 0.0, Outcome.EQUIVALENT),
])  # fmt: skip
def test_a_value_s_p_is_the_alpha_at_which_its_verdict_appears(
    seed: int, shift: float, claim: Outcome
) -> None:
    a, b = _arms(seed, 40, shift, sd=1.5)
    got, p = claim_p(a, b, "lower", ONE_PERCENT)
    assert got == claim
    assert ALPHA_FLOOR < p < 1
    assert verdict_at(a, b, "lower", ONE_PERCENT, 1 - p * 1.001).outcome == claim
    assert verdict_at(a, b, "lower", ONE_PERCENT, 1 - p * 0.999).outcome == Outcome.INCONCLUSIVE


def test_no_verdict_at_any_alpha_is_p_1_and_one_near_the_threshold_has_a_large_p() -> None:
    a, b = _arms(4, 40, -1.0, sd=1.5)  # B 1 % better: right at the threshold
    _, p = claim_p(a, b, "lower", ONE_PERCENT)
    assert p > 0.3 and verdict_at(a, b, "lower", ONE_PERCENT, 0.99).outcome == Outcome.INCONCLUSIVE
    # A's mean is 0: a change in % is undefined, and no α makes it a verdict
    zero = np.array([-1.0, 1.0, -2.0, 2.0])
    assert claim_p(zero, zero + 5, "lower", ONE_PERCENT) == (Outcome.INCONCLUSIVE, 1.0)
    separated = _arms(6, 30, -10.0, sd=0.1)  # p far below any α anyone asks for
    assert claim_p(*separated, "lower", ONE_PERCENT) == (Outcome.FASTER, ALPHA_FLOOR)


def test_a_faster_verdict_s_p_is_that_of_the_two_tests_it_needs() -> None:
    """Independently: "faster" needs the ratio's interval beyond the threshold (a one-sided
    t test of log(B/A) against log(1 − t) on the Welch–Satterthwaite df, doubled for the
    two-sided interval) and Welch's interval of B − A to exclude 0 (Welch's p); its p is
    the larger of the two."""
    a, b = _arms(5, 12, -2.5, sd=1.0)
    got, p = claim_p(a, b, "lower", ONE_PERCENT)
    assert got == Outcome.FASTER
    ma, mb = a.mean(), b.mean()
    va, vb = a.var(ddof=1) / (a.size * ma**2), b.var(ddof=1) / (b.size * mb**2)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    q = (math.log(0.99) - math.log(mb / ma)) / math.sqrt(va + vb)
    p_ratio = 2 * stats.t.sf(q, df)
    p_welch = stats.ttest_ind(b, a, equal_var=False).pvalue
    assert p == pytest.approx(max(p_ratio, p_welch), rel=1e-6)


def test_p_at_or_below_alpha_exactly_when_compare_gives_the_verdict() -> None:
    for seed in range(8):
        a, b = _arms(10 + seed, 6, -2.0, sd=1.0)
        _, p = claim_p(a, b, "lower", ONE_PERCENT)
        for alpha in (0.001, 0.01, 0.05, 0.2):
            (c,) = analyse(_series("x", a, b), 1 - alpha, ONE_PERCENT, order=["thp", "shp1g"])
            assert (c.pairs[0].verdict.outcome != Outcome.INCONCLUSIVE) == (p <= alpha)


# -- the family and its crossing, on constructed data -----------------------------------------


def _series(
    study: str, a: np.ndarray, b: np.ndarray, direction: Direction = "lower"
) -> list[Series]:
    made = []
    for variant, values in (("thp", a), ("shp1g", b)):
        made.append(Series(study, "sysbench-memory", "total_time_s", "s", direction, variant,
                           f"lab-{variant}", "local", np.arange(1, values.size + 1),
                           values))  # fmt: skip
    return made


def _family(
    shifts: dict[str, float], confidence: float = 0.99, n: int = 30, seed: int = 0
) -> tuple[list[tuple[tuple[str, str], ...]], list[MetricComparison]]:
    """One comparison per value of total_size: B shifted by ``shifts[value]`` % of A."""
    axis = Axis("total_size", tuple(shifts))
    made = []
    for i, point in enumerate(points([axis])):
        rng = np.random.default_rng(seed + i)
        a = rng.normal(100.0, 0.5, n)
        b = rng.normal(100.0 * (1 + shifts[point[0][1]] / 100), 0.5, n)
        (c,) = analyse(_series("hp", a, b), confidence, ONE_PERCENT, order=["thp", "shp1g"])
        made.append(c)
    return points([axis]), made


def test_the_crossing_is_the_smallest_value_where_b_is_better_beyond_the_threshold() -> None:
    # given out of order: the crossing orders by size, 4M < 16M < 64M < 1G
    shifts = {"1G": -5.0, "4M": 0.0, "64M": -5.0, "16M": 0.0}
    where, comparisons = _family(shifts)
    found = compare_sweep("sw", where, ["r1", "r2", "r3", "r4"], comparisons)
    outcomes = {v.label: v.verdict.outcome for v in found.values}
    assert outcomes == {"total_size=1G": Outcome.FASTER, "total_size=4M": Outcome.EQUIVALENT,
                        "total_size=64M": Outcome.FASTER,
                        "total_size=16M": Outcome.EQUIVALENT}  # fmt: skip
    (crossing,) = found.crossings
    assert (crossing.value, crossing.not_above) == ("64M", ())
    assert crossing.describe(ONE_PERCENT).startswith(
        "crossing: total_size=64M, the smallest value where B is better beyond ±1 %"
    )
    assert [v.run for v in found.values] == ["r1", "r2", "r3", "r4"]  # the sweep's order kept
    assert "Holm" in found.note() and "family-wise" in found.note()


def test_a_value_above_the_crossing_where_b_is_not_better_is_named() -> None:
    where, comparisons = _family({"4M": 0.0, "64M": -5.0, "1G": 0.0, "4G": -5.0})
    (crossing,) = compare_sweep("sw", where, ["a", "b", "c", "d"], comparisons).crossings
    assert (crossing.value, crossing.not_above) == ("64M", ("1G",))
    assert crossing.describe(ONE_PERCENT).endswith("not at the larger 1G")


def test_no_crossing_when_b_is_better_nowhere() -> None:
    where, comparisons = _family({"4M": 0.0, "64M": 5.0})  # B worse at 64M
    found = compare_sweep("sw", where, ["a", "b"], comparisons)
    assert [v.verdict.outcome for v in found.values] == [Outcome.EQUIVALENT, Outcome.SLOWER]
    (crossing,) = found.crossings
    assert crossing.value is None
    assert "none, B is better beyond ±1 % at no value of total_size" in crossing.describe(
        ONE_PERCENT
    )


def test_a_verdict_that_holds_alone_but_not_in_the_family_becomes_inconclusive() -> None:
    # The same samples at two values: both have the same p. At α between p and 2p each is
    # "faster" alone; Holm adjusts both to 2p > α, Benjamini–Hochberg both to p ≤ α.
    a, b = _arms(7, 20, -1.8, sd=0.8)
    claim, p = claim_p(a, b, "lower", ONE_PERCENT)
    assert claim == Outcome.FASTER and 1e-6 < p < 0.3
    alpha = 1.5 * p
    where = points([Axis("total_size", ("4M", "64M"))])
    comparisons = [analyse(_series("hp", a, b), 1 - alpha, ONE_PERCENT,
                           order=["thp", "shp1g"])[0] for _ in where]  # fmt: skip
    assert all(c.pairs[0].verdict.outcome == Outcome.FASTER for c in comparisons)
    found = compare_sweep("sw", where, ["a", "b"], comparisons)
    assert [v.p_adjusted for v in found.values] == pytest.approx([2 * p, 2 * p], rel=1e-9)
    assert all(v.alone.outcome == Outcome.FASTER for v in found.values)
    assert all(v.verdict.outcome == Outcome.INCONCLUSIVE for v in found.values)
    text = found.values[0].verdict.text
    assert "inconclusive once corrected for the 2 values of the sweep: on its own faster" in text
    assert f"Holm over the 2 values of the sweep: p {p:.3g}, adjusted {2 * p:.3g} > α" in text
    assert found.crossings[0].value is None
    bh = compare_sweep("sw", where, ["a", "b"], comparisons, Correction.BH)
    assert [v.p_adjusted for v in bh.values] == pytest.approx([p, p], rel=1e-9)
    assert all(v.verdict.outcome == Outcome.FASTER for v in bh.values)
    assert "Benjamini–Hochberg over the 2 values of the sweep" in bh.values[0].verdict.text
    assert bh.crossings[0].value == "4M"
    assert "false discovery rate" in bh.note()


def test_several_keys_give_a_crossing_along_the_first_for_each_of_the_others() -> None:
    axes = [Axis("total_size", ("4M", "64M")), Axis("threads", ("1", "2"))]
    shifts = {("4M", "1"): 0.0, ("64M", "1"): -5.0, ("4M", "2"): -5.0, ("64M", "2"): -5.0}
    comparisons = []
    for i, point in enumerate(points(axes)):
        rng = np.random.default_rng(i)
        a = rng.normal(100.0, 0.5, 30)
        b = rng.normal(100.0 * (1 + shifts[(point[0][1], point[1][1])] / 100), 0.5, 30)
        comparisons += analyse(_series("hp", a, b), 0.99, ONE_PERCENT, order=["thp", "shp1g"])
    found = compare_sweep("sw", points(axes), ["a", "b", "c", "d"], comparisons)
    assert found.axis == "total_size"
    got = {c.rest: c.value for c in found.crossings}
    assert got == {(("threads", "1"),): "64M", (("threads", "2"),): "4M"}
    assert found.crossings[0].describe(ONE_PERCENT).startswith("crossing (with threads=1):")
