"""B − A: every estimate checked against a closed form, a published example or scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lab.stats.difference import (
    cliffs_delta,
    cohens_d,
    compare,
    median_se,
    rank_test,
    ratio_of_means_ci,
    welch,
)


def test_welch_interval_matches_the_closed_form() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(10, 1, 40), rng.normal(11, 3, 25)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))  # Welch–Satterthwaite
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    low, high, got_df, p = welch(a, b, 95)
    diff = b.mean() - a.mean()
    assert got_df == pytest.approx(df)
    assert (low, high) == pytest.approx((diff - half, diff + half))
    assert p == pytest.approx(2 * stats.t.sf(abs(diff) / math.sqrt(va + vb), df))


def test_ratio_interval_agrees_with_a_bootstrap() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.normal(100, 10, 1500), rng.normal(97, 12, 1500)
    low, high = ratio_of_means_ci(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1),
                                  b.size, 0.95)  # fmt: skip
    boot = stats.bootstrap(
        (a, b), lambda x, y, axis=-1: y.mean(axis=axis) / x.mean(axis=axis),
        confidence_level=0.95, n_resamples=3000, method="percentile", random_state=3,
    )  # fmt: skip
    width = high - low
    assert low == pytest.approx(boot.confidence_interval.low, abs=0.05 * width)
    assert high == pytest.approx(boot.confidence_interval.high, abs=0.05 * width)
    assert low < b.mean() / a.mean() < high


def test_ratio_undefined_for_non_positive_means() -> None:
    assert all(math.isnan(v) for v in ratio_of_means_ci(0.0, 1, 10, 1.0, 1, 10, 0.95))


def test_median_se_agrees_with_scipy_bootstrap() -> None:
    rng = np.random.default_rng(4)
    x = rng.exponential(2.0, 500)
    ours = median_se(x, np.random.default_rng(5), 2000, 10_000)
    theirs = stats.bootstrap((x,), np.median, n_resamples=2000, random_state=6).standard_error
    assert ours == pytest.approx(theirs, rel=0.12)


def test_subsampled_median_se_matches_asymptotic_formula() -> None:
    # the median of n normal values has standard error √(π/2)·σ/√n
    rng = np.random.default_rng(7)
    n = 400_000
    x = rng.normal(50, 4, n)
    ours = median_se(x, np.random.default_rng(8), 1000, 10_000)
    assert ours == pytest.approx(math.sqrt(math.pi / 2) * 4 / math.sqrt(n), rel=0.1)


def test_compare_reports_subsampled_bootstrap() -> None:
    rng = np.random.default_rng(9)
    big = compare(rng.normal(10, 1, 30_000), rng.normal(10.1, 1, 20_000), 99.99)
    assert big.bootstrap.subsampled and big.bootstrap.m == 5_000 and big.bootstrap.n == 30_000
    assert "m-out-of-n" in big.bootstrap.describe()
    small = compare(rng.normal(10, 1, 300), rng.normal(10.1, 1, 300), 99.99)
    assert not small.bootstrap.subsampled and "m-out-of-n" not in small.bootstrap.describe()


def test_brunner_munzel_published_example() -> None:
    # Brunner & Munzel (2000) pain scores, as in scipy's and R lawstat's documentation
    x1 = np.array([1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 1, 1], dtype=float)
    x2 = np.array([3, 3, 4, 3, 1, 2, 3, 1, 1, 5, 4], dtype=float)
    d = compare(x1, x2, 95, resamples=100)
    assert d.brunner_munzel_p == pytest.approx(0.0057862, abs=1e-6)
    assert rank_test(x1, x2).brunner_munzel_statistic == pytest.approx(3.1374675, abs=1e-6)


@pytest.mark.parametrize(
    ("seed", "na", "nb", "levels"),
    [(1, 30, 45, 5), (2, 200, 17, 0), (3, 1000, 1000, 40), (4, 8, 9, 3)],
)
def test_rank_test_equals_scipy_brunnermunzel(seed: int, na: int, nb: int, levels: int) -> None:
    rng = np.random.default_rng(seed)
    if levels:  # many ties
        a = rng.integers(0, levels, na).astype(float)
        b = rng.integers(1, levels + 1, nb).astype(float)
    else:
        a, b = rng.normal(0, 1, na), rng.normal(0.3, 3, nb)
    ours = rank_test(a, b)
    theirs = stats.brunnermunzel(a, b)
    assert ours.brunner_munzel_statistic == pytest.approx(theirs.statistic, rel=1e-9)
    assert ours.brunner_munzel_p == pytest.approx(theirs.pvalue, rel=1e-7, abs=1e-300)


def test_rank_test_complete_separation() -> None:
    """3 vs 3 completely separated: 2 of the C(6, 3) = 20 equally likely splits are as
    extreme, so the exact p is 0.1 (the t approximation said 0)."""
    ours = rank_test(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    assert ours.brunner_munzel_p == pytest.approx(2 / 20) and ours.cliff_delta == 1.0
    big = rank_test(np.arange(1.0, 9.0), np.arange(9.0, 17.0))  # C(16, 8) > EXACT_SPLITS
    assert big.brunner_munzel_p == 0.0 and big.cliff_delta == 1.0


def test_cohens_d_closed_form() -> None:
    a = np.array([1.0, 2, 3, 4, 5])
    assert cohens_d(a, a + 1) == pytest.approx(1 / math.sqrt(2.5))
    assert cohens_d(a + 1, a) == pytest.approx(-1 / math.sqrt(2.5))


def test_cliffs_delta_counts_every_pair_and_ties() -> None:
    rng = np.random.default_rng(10)
    a, b = rng.integers(0, 6, 37).astype(float), rng.integers(1, 7, 29).astype(float)
    brute = sum(np.sign(y - x) for x in a for y in b) / (a.size * b.size)
    assert cliffs_delta(a, b) == pytest.approx(brute)
    u = stats.mannwhitneyu(b, a).statistic  # U counts ties as halves: δ = 2U/(nm) − 1
    assert cliffs_delta(a, b) == pytest.approx(2 * u / (a.size * b.size) - 1)
    assert cliffs_delta(np.array([1.0, 2]), np.array([3.0, 4])) == 1.0


def test_compare_direction_is_b_minus_a() -> None:
    a = np.array([10.0, 11, 12, 13, 14] * 20)
    b = a - 2
    d = compare(a, b, 95, resamples=200)
    assert d.diff == pytest.approx(-2) and d.median_diff == pytest.approx(-2)
    assert d.ratio == pytest.approx(10 / 12) and d.percent == pytest.approx((10 / 12 - 1) * 100)
    assert d.diff_ci[0] < -2 < d.diff_ci[1]
    assert d.percent_ci[0] < d.percent < d.percent_ci[1]
    assert d.cliff_delta < 0 and d.cohen_d < 0


def test_compare_is_reproducible_with_its_seed() -> None:
    rng = np.random.default_rng(11)
    a, b = rng.normal(0, 1, 500) + 5, rng.normal(0, 1, 500) + 5
    assert compare(a, b, 99).median_diff_ci == compare(a, b, 99).median_diff_ci
    assert compare(a, b, 99, seed=1).median_diff_ci != compare(a, b, 99, seed=2).median_diff_ci


@pytest.mark.parametrize("n", [2, 3, 11, 12])
def test_median_se_of_odd_and_even_samples_agrees_with_scipy_bootstrap(n: int) -> None:
    # each resample's median is drawn from its order statistics' law, not from m values:
    # even n averages the two middle ones, which a wrong law for the second would miss
    x = np.random.default_rng(n).exponential(2.0, n)
    ours = median_se(x, np.random.default_rng(5), 20_000, 10_000)
    theirs = stats.bootstrap((x,), np.median, n_resamples=20_000, random_state=6).standard_error
    assert ours == pytest.approx(theirs, rel=0.04)


@pytest.mark.parametrize("m", [100, 101])
def test_m_out_of_n_median_se_agrees_with_resampling_m_values(m: int) -> None:
    x = np.random.default_rng(12).normal(0, 1, 3000)
    ours = median_se(x, np.random.default_rng(5), 20_000, m)
    idx = np.random.default_rng(3).integers(0, x.size, (20_000, m))
    direct = np.std(np.median(x[idx], axis=1), ddof=1) * math.sqrt(m / x.size)
    assert ours == pytest.approx(direct, rel=0.04)
