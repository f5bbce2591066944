"""Diagnostics against closed forms, known distributions and constructed samples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lab.stats.diagnostics import (
    THEIL_SEN_MAX_POINTS,
    diagnose,
    effective_sample_size,
    lag1_autocorrelation,
    tukey_fences,
)


def test_lag1_autocorrelation_by_hand() -> None:
    # deviations −1.5, −0.5, 0.5, 1.5: Σ products 1.25, Σ squares 5
    assert lag1_autocorrelation(np.array([1.0, 2, 3, 4])) == pytest.approx(0.25)
    assert math.isnan(lag1_autocorrelation(np.array([1.0, 1.0, 1.0])))


def test_ar1_series_recovers_phi_and_effective_n() -> None:
    rng = np.random.default_rng(1)
    n, phi = 100_000, 0.6
    noise = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = noise[0]
    for t in range(1, n):
        x[t] = phi * x[t - 1] + noise[t]
    d = diagnose(x + 100, None, 95)
    assert d.lag1_autocorrelation == pytest.approx(phi, abs=0.01)
    assert d.effective_n == pytest.approx(n * 0.4 / 1.6, rel=0.05)
    assert any("correlated" in w for w in d.warnings)


def test_effective_n_bounds() -> None:
    assert effective_sample_size(100, -0.3) == 100  # negative r is not credited
    assert effective_sample_size(100, 0.5) == pytest.approx(100 / 3)
    assert effective_sample_size(100, 1.0) == 1.0


def test_moments_match_known_distribution() -> None:
    # exponential: skewness 2, excess kurtosis 6
    x = np.random.default_rng(2).exponential(3.0, 400_000)
    d = diagnose(x, None, 95)
    assert d.skewness == pytest.approx(2.0, abs=0.05)
    assert d.excess_kurtosis == pytest.approx(6.0, abs=0.5)
    assert d.skewness == pytest.approx(stats.skew(x, bias=False))
    assert d.kendall_points == 100_000 and d.n == 400_000  # drift on evenly spaced samples


def test_sigma_counts_and_expectation_like_the_study() -> None:
    # a GDB-like sample: normal body, six builds at +22σ as in the study's worst case
    rng = np.random.default_rng(3)
    z = rng.standard_normal(24_000)
    z = (z - z.mean()) / z.std(ddof=1)
    x = 147.0 + 14.5 * z
    x[:6] = 147.0 + 14.5 * 30
    d = diagnose(x, None, 99.99)
    mean, sd = x.mean(), x.std(ddof=1)
    assert d.above_6sd == int(np.sum((x - mean) / sd >= 6)) == 6
    assert d.above_3sd == int(np.sum((x - mean) / sd >= 3))
    assert d.expected_3sd == pytest.approx(24_000 * 0.0013499, rel=1e-4)  # table value of 1−Φ(3)
    assert d.expected_6sd == pytest.approx(24_000 * 9.866e-10, rel=1e-3)
    assert d.most_extreme_value == pytest.approx(147.0 + 14.5 * 30)
    assert d.most_extreme_sd == pytest.approx((x[0] - mean) / sd)
    assert any("beyond ±6σ" in w and "heavy tails" in w for w in d.warnings)


def test_tukey_fences_closed_form() -> None:
    x = np.arange(1.0, 101.0)  # quartiles 25.75 and 75.25 (linear interpolation)
    assert tukey_fences(x, 1.5) == pytest.approx((25.75 - 74.25, 75.25 + 74.25))
    with_outliers = np.concatenate([x, [200.0, 260.0, -160.0]])
    d = diagnose(with_outliers, None, 95)
    low, high = tukey_fences(with_outliers, 1.5)
    outer = tukey_fences(with_outliers, 3.0)
    assert d.tukey_outliers == int(np.sum((with_outliers < low) | (with_outliers > high))) == 3
    assert d.tukey_far_out == int(np.sum((with_outliers < outer[0]) | (with_outliers > outer[1])))


def test_drift_is_found_with_theil_sen_slope() -> None:
    rng = np.random.default_rng(4)
    it = np.arange(1, 5001)
    x = 100 + 0.002 * it + rng.normal(0, 1, it.size)
    d = diagnose(x, it, 99)
    assert d.theil_sen_ci[0] < 0.002 < d.theil_sen_ci[1]
    assert d.theil_sen_points == THEIL_SEN_MAX_POINTS  # subsampled above 2000 points
    assert d.kendall_tau > 0 and d.kendall_p < 1e-6
    assert d.kendall_tau == pytest.approx(stats.kendalltau(it, x).statistic)
    assert d.drift_percent == pytest.approx(d.theil_sen_slope * 4999 / x.mean() * 100)
    assert any("drift" in w for w in d.warnings)


def test_exact_line_slope_without_subsampling() -> None:
    it = np.arange(1, 101)
    d = diagnose(3.0 * it + 7, it, 95)
    assert d.theil_sen_slope == pytest.approx(3.0)
    assert d.theil_sen_points == 100


def test_warm_up_is_flagged() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(100, 1, 1000)
    x[:50] += 5  # the first 50 iterations are 5 % slower
    d = diagnose(x, None, 95)
    assert d.warmup_n == 50
    assert d.warmup_mean / d.rest_mean - 1 == pytest.approx(0.05, abs=0.005)
    assert d.warmup_p < 1e-10
    assert any("warm-up" in w for w in d.warnings)


def test_clean_normal_sample_has_no_warnings() -> None:
    d = diagnose(np.random.default_rng(6).normal(100, 2, 5000), None, 99.99)
    assert d.warnings == ()


def test_too_few_for_warm_up_check() -> None:
    d = diagnose(np.array([1.0, 2, 3, 4, 5, 6]), None, 95)
    assert d.warmup_n == 0 and math.isnan(d.warmup_p)
