"""Autocorrelated samples (issue 19, 2.2): the fixed-n intervals and the stopping rule keep
their error rates on AR(1) data, measured by simulation; independent data keep Welch's.

The rates are printed (pytest -s shows them). AR(1) series xₜ = r·xₜ₋₁ + εₜ are simulated
from their definition, started in their stationary distribution.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lab.stats.batchmeans import autocorrelated, batch_size, lag1_z, long_run
from lab.stats.difference import compare, mean_intervals, ratio_of_means_ci
from tests.unit.helpers import ar1


def not_above(count: int, studies: int, rate: float) -> bool:
    """A count no higher than ``rate`` allows (one-sided binomial test at 0.001)."""
    return float(stats.binomtest(count, studies, rate, alternative="greater").pvalue) > 0.001


@pytest.mark.parametrize("seed", range(6))
def test_independent_samples_keep_scipys_welch_interval(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(100, 3, 60), rng.normal(98, 5, 45)
    assert not autocorrelated(a) and not autocorrelated(b)  # these seeds: r₁ not significant
    d = compare(a, b, 0.99, resamples=20)
    res = stats.ttest_ind(b, a, equal_var=False)
    ci = res.confidence_interval(confidence_level=0.99)
    assert d.diff_ci == (float(ci.low), float(ci.high))  # exactly, not approximately
    assert (d.welch_df, d.welch_p) == (float(res.df), float(res.pvalue))
    assert d.ratio_ci == ratio_of_means_ci(a.mean(), a.std(ddof=1), a.size, b.mean(),
                                           b.std(ddof=1), b.size, 0.99)  # fmt: skip
    assert d.method == "Welch" and d.batches_a is None and d.batches_b is None


def test_the_lag1_test_is_at_its_level_on_independent_samples() -> None:
    """(r₁ + 1/n)·√n against the normal: the share of independent series called autocorrelated."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=(4000, 100))
    rate = float(np.mean([autocorrelated(row) for row in x]))
    print(f"\nindependent series of 100 called autocorrelated at α = 0.01: {rate:.4f}")
    assert 0.003 < rate < 0.02
    assert lag1_z(np.arange(20.0)) > 3 and autocorrelated(np.arange(20.0))


def test_batch_means_against_their_definition() -> None:
    rng = np.random.default_rng(3)
    x = ar1(rng, 0.5, (1, 103))[0]
    batches = long_run(x)
    b = batches.size
    assert b == batch_size(103, batches.r) and b >= math.isqrt(103)
    means = [x[i * b : (i + 1) * b].mean() for i in range(103 // b)]
    assert batches.batches == len(means)
    assert batches.sd == pytest.approx(math.sqrt(b * stats.tvar(means)))
    assert batch_size(10_000, 0.0) == 100 and batch_size(400, 0.5) == 27
    assert batch_size(100, 0.9) == 20  # no fewer than 5 batches


def miss_rates(r: float, n: int, studies: int, level: float) -> tuple[float, float, float, float]:
    """Misses of the true difference (0) and ratio (1) by the lab's intervals and by Welch's,
    and the share of arms batched."""
    rng = np.random.default_rng(int(r * 100) + n)
    a = 100 + 2 * ar1(rng, r, (studies, n))
    b = 100 + 2 * ar1(rng, r, (studies, n))
    missed = ratio_missed = batched = 0
    for x, y in zip(a, b, strict=True):
        m = mean_intervals(x, y, level)
        missed += not m.diff_ci[0] <= 0 <= m.diff_ci[1]
        ratio_missed += not m.ratio_ci[0] <= 1 <= m.ratio_ci[1]
        batched += (m.batches_a is not None) + (m.batches_b is not None)
    naive = float(np.mean(stats.ttest_ind(b, a, axis=1, equal_var=False).pvalue < 1 - level))
    return missed / studies, ratio_missed / studies, naive, batched / (2 * studies)


@pytest.mark.parametrize(("r", "n"), [(0.0, 100), (0.2, 400), (0.5, 100), (0.5, 400)])
def test_fixed_n_interval_covers_at_its_level_on_ar1_samples(r: float, n: int) -> None:
    studies, level = 2000, 0.95
    missed, ratio_missed, naive, batched = miss_rates(r, n, studies, level)
    print(
        f"\nAR(1) r = {r}, n = {n} a side, {studies} studies, 95 %: the interval of B − A missed"
        f" in {missed:.4f}, the ratio's in {ratio_missed:.4f} (Welch on the raw samples"
        f" {naive:.4f}); arms on batch means {batched:.3f}"
    )
    for rate in (missed, ratio_missed):
        assert not_above(round(rate * studies), studies, 1 - level)
        assert rate > 0.5 * (1 - level)  # not bought with a far wider interval
    if r >= 0.5:
        assert batched > 0.99
        assert naive > 2 * (1 - level)  # what the batch means mend
