"""Verdicts at small n: the ratio's interval covers as often as it says, and a verdict never
contradicts the difference's own interval (issue: 3 samples a side gave "B is faster").

The coverage is measured by simulation (normal samples of known means), an independent
check of the interval's formula; the rates are printed (pytest -s shows them).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from lab.stats.difference import compare, ratio_of_means_ci
from lab.stats.verdict import Outcome, decide

A_MEAN, A_SD, B_MEAN, B_SD = 100.0, 5.0, 95.0, 8.0
TRUE_RATIO = B_MEAN / A_MEAN


def miss_rate(n: int, confidence: float, simulations: int, seed: int = 7) -> float:
    rng = np.random.default_rng(seed + n)
    a = rng.normal(A_MEAN, A_SD, size=(simulations, n))
    b = rng.normal(B_MEAN, B_SD, size=(simulations, n))
    ma, mb = a.mean(axis=1), b.mean(axis=1)
    sa, sb = a.std(axis=1, ddof=1), b.std(axis=1, ddof=1)
    missed = 0
    for i in range(simulations):
        low, high = ratio_of_means_ci(ma[i], sa[i], n, mb[i], sb[i], n, confidence)
        missed += not low <= TRUE_RATIO <= high
    return missed / simulations


@pytest.mark.parametrize("n", [2, 3, 5, 10, 30])
def test_the_ratio_interval_covers_at_its_nominal_level(n: int) -> None:
    simulations, nominal_miss = 6000, 0.10
    rate = miss_rate(n, 0.90, simulations)
    print(f"n={n}: the 90 % interval of B/A missed in {rate:.4f} of {simulations} studies")
    se = (nominal_miss * (1 - nominal_miss) / simulations) ** 0.5
    # a normal quantile (as before) missed 0.262 at n=2, 0.186 at n=3, 0.153 at n=5 here
    assert rate <= nominal_miss + 4 * se


def test_three_samples_a_side_at_99_99_give_no_verdict_welch_does_not_support() -> None:
    a, b = np.array([100.0, 101.0, 102.0]), np.array([90.0, 91.0, 92.0])
    welch = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.9999)
    assert welch.low < 0 < welch.high  # (-22.7, 2.7): the difference may be nothing
    diff = compare(a, b, 0.9999)
    assert diff.diff_ci == pytest.approx((welch.low, welch.high))
    verdict = decide(diff.percent_ci, "lower", 0.01, "A", "B", 0.9999, diff.diff_ci)
    assert verdict.outcome == Outcome.INCONCLUSIVE
    assert diff.percent_ci[0] < 0 < diff.percent_ci[1]  # the ratio's own interval holds 1 now


def test_a_ratio_interval_beyond_the_threshold_with_a_difference_holding_zero_is_inconclusive() -> (
    None
):
    verdict = decide((-12.0, -6.0), "lower", 0.01, "A", "B", 0.9999, diff_ci=(-22.7, 2.7))
    assert verdict.outcome == Outcome.INCONCLUSIVE and "holds 0" in verdict.text
    agreed = decide((-12.0, -6.0), "lower", 0.01, "A", "B", 0.9999, diff_ci=(-12.0, -6.0))
    assert agreed.outcome == Outcome.FASTER


def brunner_munzel_abs(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """|Brunner–Munzel statistic| of y against x, by scipy, for scipy's permutation test."""
    x, y = np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1)
    out = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # scipy warns at complete separation (statistic ±inf)
        for xi, yi in zip(x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1]), strict=True):
            out.append(abs(stats.brunnermunzel(yi, xi).statistic))
    return np.array(out).reshape(x.shape[:-1])


@pytest.mark.parametrize(
    ("a", "b"),
    [([1.0, 2.0], [3.0, 4.0]), ([5.0, 1.0, 2.0], [3.0, 7.0, 4.0, 6.0]),
     ([1.0, 2.0, 2.0, 3.0], [2.0, 4.0, 5.0, 6.0, 5.0])],
)  # fmt: skip
def test_brunner_munzel_at_small_n_is_the_exact_permutation_p(
    a: list[float], b: list[float]
) -> None:
    """At 2 vs 2, completely separated, the t approximation said p = 0; every one of the 6
    splits is equally likely, so the exact p is 2/6. The reference: scipy's exact
    permutation test of the same statistic."""
    x, y = np.array(a), np.array(b)
    got = compare(x, y, 0.95).brunner_munzel_p
    if a == [1.0, 2.0]:
        # complete separation: the statistic is infinite, which scipy's permutation test
        # cannot compare (inf - inf); the closed form: 2 of the 6 splits are as extreme
        assert got == pytest.approx(2 / 6)
        return
    reference = stats.permutation_test(
        (x, y), brunner_munzel_abs, permutation_type="independent", alternative="greater",
        n_resamples=100_000,
    ).pvalue  # fmt: skip
    assert got == pytest.approx(reference)


def test_two_samples_a_side_at_99_99_give_an_unbounded_interval_not_an_overflow() -> None:
    """Found on real guests: n = 2 at 99.99 % made math.exp overflow inside lab compare."""
    a, b = np.array([1.0, 1.0001]), np.array([1.0, 1000.0])  # df near 1: t is 6,366
    diff = compare(a, b, 0.9999)
    assert diff.ratio_ci[1] == float("inf") and 0 <= diff.ratio_ci[0] < diff.ratio
    verdict = decide(diff.percent_ci, "lower", 0.01, "A", "B", 0.9999, diff.diff_ci)
    assert verdict.outcome == Outcome.INCONCLUSIVE
