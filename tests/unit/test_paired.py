"""Paired analysis checked against scipy's paired tests and by-hand variances."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lab.stats.paired import match_iterations, paired_difference, synced_workloads
from lab.store import RunRecord


def shared_disturbance(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two twins disturbed together: a common per-iteration term plus their own noise."""
    rng = np.random.default_rng(seed)
    common = rng.normal(0, 3, n)
    return 100 + common + rng.normal(0, 1, n), 99 + common + rng.normal(0, 1, n)


def test_agrees_with_scipy_ttest_rel_and_wilcoxon() -> None:
    a, b = shared_disturbance(80, 1)
    it = np.arange(1, 81)
    got = paired_difference(it, a, it, b, 99)
    ref = stats.ttest_rel(b, a)
    ci = ref.confidence_interval(confidence_level=0.99)
    assert got.diff_ci == pytest.approx((ci.low, ci.high))
    assert (got.t_statistic, got.t_p, got.df) == pytest.approx((ref.statistic, ref.pvalue, 79))
    assert got.wilcoxon_p == pytest.approx(stats.wilcoxon(b - a).pvalue)
    # the interval by hand: mean ± t(0.995, n−1)·sd/√n
    d = b - a
    half = stats.t.ppf(0.995, 79) * d.std(ddof=1) / math.sqrt(80)
    assert got.diff_ci == pytest.approx((d.mean() - half, d.mean() + half))
    assert got.percent == pytest.approx(d.mean() / a.mean() * 100)


def test_variance_removed_by_a_shared_disturbance() -> None:
    a, b = shared_disturbance(20_000, 2)
    it = np.arange(1, a.size + 1)
    got = paired_difference(it, a, it, b, 95)
    # var(A) = var(B) = 9 + 1, var(B − A) = 2: the ratio is 0.1 and r = 9/10
    assert got.variance_ratio == pytest.approx(0.1, abs=0.005)
    assert got.correlation == pytest.approx(0.9, abs=0.005)
    assert got.variance_removed == pytest.approx(1 - got.variance_ratio)
    assert got.var_diff == pytest.approx(np.var(b - a, ddof=1))
    assert got.variance_ratio == pytest.approx(
        1 - 2 * np.cov(a, b)[0, 1] / (np.var(a, ddof=1) + np.var(b, ddof=1))
    )


def test_independent_samples_keep_their_variance() -> None:
    rng = np.random.default_rng(3)
    it = np.arange(1, 20_001)
    got = paired_difference(it, rng.normal(10, 1, it.size), it, rng.normal(10, 1, it.size), 95)
    assert got.variance_ratio == pytest.approx(1.0, abs=0.03)
    assert abs(got.correlation) < 0.03


def test_only_iterations_present_in_both_are_paired() -> None:
    it_a = np.array([1, 2, 3, 5, 6])
    it_b = np.array([2, 3, 4, 5])  # 1 and 6 failed on B, 4 on A
    a = np.array([10.0, 11.0, 12.0, 14.0, 15.0])
    b = np.array([20.0, 21.5, 22.0, 24.0])
    got = paired_difference(it_a, a, it_b, b, 95)
    assert (got.n, got.unpaired_a, got.unpaired_b) == (3, 2, 1)
    assert got.diff == pytest.approx(np.mean([20.0 - 11.0, 21.5 - 12.0, 24.0 - 14.0]))
    assert got.mean_a == pytest.approx(np.mean([11.0, 12.0, 14.0]))


def test_repeated_iteration_numbers_of_several_runs_pair_in_order() -> None:
    ia, ib = match_iterations(np.array([1, 2, 3, 1, 2]), np.array([1, 2, 1, 2, 3]))
    pairs = sorted(zip(ia.tolist(), ib.tolist(), strict=True))
    assert pairs == [(0, 0), (1, 1), (2, 4), (3, 2), (4, 3)]
    empty = match_iterations(np.array([], dtype=np.int64), np.array([1]))
    assert empty[0].size == 0


def test_too_few_pairs_give_nan_not_an_error() -> None:
    got = paired_difference(np.array([1]), np.array([1.0]), np.array([1]), np.array([2.0]), 95)
    assert got.n == 1 and math.isnan(got.t_p) and math.isnan(got.variance_ratio)
    same = paired_difference(np.arange(3), np.ones(3), np.arange(3), np.ones(3), 95)
    assert math.isnan(same.wilcoxon_p)


def run(workload: str, schedule: str | None, params: dict[str, object]) -> RunRecord:
    return RunRecord(1, "s", f"k-{workload}", workload, params, schedule, 10, None, ())


def test_synced_workloads_from_schedule_or_parameters() -> None:
    runs = [
        run("sysbench", "sync", {}),
        run("iperf3", "concurrent", {}),
        run("gdb", "concurrent", {"sync": True}),
        run("fio", None, {}),
    ]
    assert synced_workloads(runs) == {"sysbench", "gdb"}
