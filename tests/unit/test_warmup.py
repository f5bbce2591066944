"""Warm-up: declared per boot, and detected on data with a known warm-up or none."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lab.stats.warmup import (
    CUSUM_ALPHA,
    PERMUTATIONS,
    cusum_statistic,
    discard_per_boot,
    mser5,
    mser_scores,
    permutation_p,
    suggest_warmup,
)


def test_discard_the_first_k_of_each_boot() -> None:
    iterations = np.array([1, 2, 3, 4, 5, 6, 7, 8])
    values = iterations * 10.0
    boots = ["b1", "b1", "b1", "b2", "b2", "b2", "b2", "b3"]  # the guest rebooted twice
    split = discard_per_boot(iterations, values, boots, 2)
    assert split.discarded_iterations.tolist() == [1, 2, 4, 5, 8]
    assert split.kept_iterations.tolist() == [3, 6, 7]
    assert split.kept_values.tolist() == [30.0, 60.0, 70.0]
    assert discard_per_boot(iterations, values, boots, 0).kept_values.size == 8


def test_discard_follows_iteration_order_not_storage_order() -> None:
    split = discard_per_boot(np.array([3, 1, 2]), np.array([3.0, 1.0, 2.0]), ["x"] * 3, 1)
    assert split.discarded_values.tolist() == [1.0]
    assert discard_per_boot(np.array([]), np.array([]), [], 1).kept_values.size == 0
    with pytest.raises(ValueError, match="same length"):
        discard_per_boot(np.array([1]), np.array([1.0, 2.0]), ["x"], 1)


def test_kolmogorov_critical_value_is_the_published_one() -> None:
    """sup|Brownian bridge| exceeds 1.358 with probability 0.05, 1.628 with 0.01 (tables)."""
    assert stats.kstwobign.isf(0.05) == pytest.approx(1.3581, abs=1e-4)
    assert stats.kstwobign.isf(0.01) == pytest.approx(1.6276, abs=1e-4)


def test_cusum_statistic_by_hand() -> None:
    x = np.array([5.0, 6.0, 1.0, 2.0, 1.0, 0.0])
    # centred partial sums with mean 2.5: 2.5, 6.0, 4.5, 4.0, 2.5 → peak 6.0; the best split
    # into two means is also after 2 samples (5.5 | 1.0)
    within = (0.25 + 0.25) + (0.0 + 1.0 + 0.0 + 1.0)  # around 5.5 and around 1.0
    expected = 6.0 / (math.sqrt(within / 4) * math.sqrt(6))
    assert cusum_statistic(x) == pytest.approx((expected, 2))


def test_known_warmup_of_30_iterations_is_found() -> None:
    rng = np.random.default_rng(1)
    found = []
    for _ in range(200):
        x = rng.normal(100, 1, 300)
        x[:30] += 5  # five standard deviations slower while warming up
        found.append(suggest_warmup(x).n)
    assert np.median(found) == 30 and np.percentile(found, 95) <= 32
    x = rng.normal(100, 1, 300)
    x[:30] += 5
    got = suggest_warmup(x)
    assert got.p < 1e-6 and got.shift == pytest.approx(5, abs=0.5)
    assert got.text.startswith(f"warm-up of {got.n} iterations") and "CUSUM" in got.method


def test_no_warmup_suggests_zero_almost_always() -> None:
    rng = np.random.default_rng(2)
    results = [suggest_warmup(rng.normal(100, 1, 300)) for _ in range(1000)]
    zero = sum(r.n == 0 for r in results) / len(results)
    rejected = sum(r.p < 0.05 for r in results)
    assert zero >= 0.98  # α = 0.01, and the later half never counts
    # the test's size: about 5 % at α = 0.05 (the bridge limit is slightly conservative)
    assert stats.binomtest(rejected, 1000, 0.05).pvalue > 0.001
    assert results[0].text.startswith("no warm-up")


def test_a_late_shift_is_not_a_warmup() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(100, 1, 300)
    x[250:] += 3
    got = suggest_warmup(x)
    assert got.n == 0 and got.change_at == 250 and "too late for a warm-up" in got.text


def test_too_few_samples() -> None:
    assert suggest_warmup(np.ones(5)).n == 0 and "too few" in suggest_warmup(np.ones(5)).text
    assert mser5(np.ones(10)).n == 0


def test_mser_scores_by_hand() -> None:
    x = np.arange(40.0) ** 0.5
    z = x.reshape(8, 5).mean(axis=1)
    by_hand = [np.sum((z[d:] - z[d:].mean()) ** 2) / (8 - d) ** 2 for d in range(5)]
    assert mser_scores(x) == pytest.approx(by_hand)


def test_mser5_finds_the_known_warmup() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(100, 1, 300)
    x[:30] += 5
    got = mser5(x)
    assert got.n == 30 and got.method == "MSER-5 truncation (White 1997)"


@pytest.mark.parametrize(("n", "runs"), [(10, 4000), (30, 4000), (100, 1500), (1000, 4000)])
def test_false_alarm_rate_is_at_most_alpha_at_every_n(n: int, runs: int) -> None:
    """Issue 19: the Kolmogorov p fell below α = 0.01 in 4.8 % of runs of independent normal
    samples at n = 10 (1.7 % at n = 30). Simulated here, and printed (pytest -s): the share of
    runs with p < α must not exceed α beyond three binomial standard errors."""
    rng = np.random.default_rng(19 + n)
    rejected = sum(suggest_warmup(rng.normal(100, 1, n)).p < CUSUM_ALPHA for _ in range(runs))
    rate = rejected / runs
    bound = CUSUM_ALPHA + 3 * math.sqrt(CUSUM_ALPHA * (1 - CUSUM_ALPHA) / runs)
    print(f"CUSUM false alarms at n = {n}: {rate:.4f} of {runs} runs (α = {CUSUM_ALPHA})")
    assert rate <= bound


def test_the_permutation_p_is_exact_on_a_run_with_a_step() -> None:
    """Against scipy's permutation_test of the same statistic, on a run with a real step."""
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1, 40)
    x[:6] += 1.5
    statistic, _ = cusum_statistic(x)
    ref = stats.permutation_test(
        (x,), lambda v: cusum_statistic(v)[0], permutation_type="pairings",
        n_resamples=PERMUTATIONS, alternative="greater", random_state=1,
    )  # fmt: skip
    assert ref.statistic == pytest.approx(statistic)
    got = permutation_p(x, statistic)
    assert got == pytest.approx(ref.pvalue, abs=4 * math.sqrt(got * (1 - got) / PERMUTATIONS))
    assert suggest_warmup(x).p == got and "permutation p" in suggest_warmup(x).method
