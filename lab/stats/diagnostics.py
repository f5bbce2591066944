"""Are the study's formulas fit for these samples? Shape, outliers, dependence, drift, warm-up.

The margin of error assumes independent samples from one distribution with a finite variance.
Each check here is a way that assumption fails in a long benchmark loop:

- shape: skewness, excess kurtosis, and the counts beyond ±3σ and ±6σ next to what a normal
  distribution would give (the study's GDB builds had 6 and 11 samples beyond +6σ, where a
  normal distribution of 24,000 samples expects 0.00002);
- outliers: Tukey's fences (1.5 and 3 interquartile ranges beyond the quartiles) and the
  most extreme value in σ;
- dependence: the lag-1 autocorrelation r in iteration order and the effective sample size
  ``n·(1−r)/(1+r)`` of an AR(1) process (the margin of error of an autocorrelated arm is the
  batch means', ``lab.stats.difference.mean_margin``: one margin in every output);
- drift: Kendall's tau of value against iteration and the Theil–Sen slope with its interval
  (on at most 100,000 and 600 evenly spaced samples: ``kendall_points``, ``theil_sen_points``);
- warm-up: the first iterations against the rest (Welch's test).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from lab.stats.descriptive import check_confidence

THEIL_SEN_MAX_POINTS = 600  # Theil–Sen sorts n²/2 slopes: above this, evenly spaced points
KENDALL_MAX_POINTS = 100_000  # plenty to see a drift; keeps a million-sample arm under 0.1 s
WARMUP_ALERT_P = 0.001


@dataclass(frozen=True)
class Diagnostics:
    n: int
    skewness: float
    excess_kurtosis: float
    above_3sd: int
    below_3sd: int
    above_6sd: int
    below_6sd: int
    expected_3sd: float  # per side, for a normal distribution of n samples
    expected_6sd: float
    tukey_fences: tuple[float, float]  # 1.5 IQR
    tukey_outer_fences: tuple[float, float]  # 3 IQR
    tukey_outliers: int  # beyond the 1.5 IQR fences
    tukey_far_out: int  # beyond the 3 IQR fences
    most_extreme_sd: float  # signed, (x − mean)/sd of the value farthest from the mean
    most_extreme_value: float
    lag1_autocorrelation: float
    effective_n: float
    kendall_tau: float
    kendall_p: float
    kendall_points: int
    theil_sen_slope: float  # per iteration
    theil_sen_ci: tuple[float, float]
    theil_sen_points: int
    warmup_n: int  # 0 when there are too few iterations to check
    warmup_mean: float
    rest_mean: float
    warmup_p: float
    drift_percent: float  # Theil–Sen slope over the whole iteration span, in % of the mean
    warnings: tuple[str, ...]


def lag1_autocorrelation(x: np.ndarray) -> float:
    """r₁ = Σ(xₜ − x̄)(xₜ₊₁ − x̄) / Σ(xₜ − x̄)², the usual sample autocorrelation at lag 1."""
    if x.size < 3:
        return math.nan
    d = x - x.mean()
    denom = float(np.dot(d, d))
    return math.nan if denom == 0 else float(np.dot(d[:-1], d[1:]) / denom)


def effective_sample_size(n: int, r1: float) -> float:
    """n·(1−r)/(1+r) for an AR(1) process; never above n (negative r is not credited)."""
    if math.isnan(r1) or r1 <= 0:
        return float(n)
    if r1 >= 1:
        return 1.0
    return max(1.0, n * (1 - r1) / (1 + r1))


def tukey_fences(x: np.ndarray, k: float) -> tuple[float, float]:
    return _fences(np.percentile(x, [25, 75]), k)


def _fences(quartiles: np.ndarray, k: float) -> tuple[float, float]:
    """The fences k interquartile ranges beyond the quartiles (q1, q3)."""
    q1, q3 = quartiles
    iqr = q3 - q1
    return (float(q1 - k * iqr), float(q3 + k * iqr))


def _evenly(n: int, limit: int) -> np.ndarray:
    """Indices of at most ``limit`` evenly spaced samples out of n (all of them if n <= limit)."""
    if n <= limit:
        return np.arange(n)
    return np.linspace(0, n - 1, limit).round().astype(np.int64)


def _theil_sen(
    iterations: np.ndarray, x: np.ndarray, confidence: float
) -> tuple[float, float, float, int]:
    if x.size < 3:
        return (math.nan, math.nan, math.nan, int(x.size))
    idx = _evenly(x.size, THEIL_SEN_MAX_POINTS)
    iterations, x = iterations[idx], x[idx]
    res = stats.theilslopes(x, iterations, alpha=confidence)
    return (float(res.slope), float(res.low_slope), float(res.high_slope), int(x.size))


def diagnose(values: np.ndarray, iterations: np.ndarray | None, confidence: float) -> Diagnostics:
    """Every check on one arm's samples, in iteration order."""
    x = np.asarray(values, dtype=np.float64)
    it = np.arange(1, x.size + 1) if iterations is None else np.asarray(iterations)
    level = check_confidence(confidence)
    n = int(x.size)
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else math.nan
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        skew = float(stats.skew(x, bias=False)) if n > 2 else math.nan
        kurt = float(stats.kurtosis(x, fisher=True, bias=False)) if n > 3 else math.nan
        z = (x - mean) / sd if sd > 0 else np.zeros_like(x)
        step = _evenly(n, KENDALL_MAX_POINTS)
        tau = stats.kendalltau(it[step], x[step]) if n > 2 else None
    extreme = int(np.argmax(np.abs(z))) if n else 0
    quartiles = np.percentile(x, [25, 75])  # once for both fences: a partition of every sample
    inner = _fences(quartiles, 1.5)
    outer = _fences(quartiles, 3.0)
    r1 = lag1_autocorrelation(x)
    n_eff = effective_sample_size(n, r1)
    slope, slope_low, slope_high, points = _theil_sen(it, x, level)
    warm_n = min(max(5, n // 20), 50)
    warm = x[:warm_n]
    rest = x[warm_n:]
    if rest.size >= 2 * warm_n and warm_n >= 5:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            warm_p = float(stats.ttest_ind(warm, rest, equal_var=False).pvalue)
        warm_mean, rest_mean = float(warm.mean()), float(rest.mean())
    else:
        warm_n, warm_p, warm_mean, rest_mean = 0, math.nan, math.nan, math.nan
    diag = Diagnostics(
        n=n,
        skewness=skew,
        excess_kurtosis=kurt,
        above_3sd=int(np.count_nonzero(z >= 3)),
        below_3sd=int(np.count_nonzero(z <= -3)),
        above_6sd=int(np.count_nonzero(z >= 6)),
        below_6sd=int(np.count_nonzero(z <= -6)),
        expected_3sd=float(n * stats.norm.sf(3)),
        expected_6sd=float(n * stats.norm.sf(6)),
        tukey_fences=inner,
        tukey_outer_fences=outer,
        tukey_outliers=int(np.count_nonzero((x < inner[0]) | (x > inner[1]))),
        tukey_far_out=int(np.count_nonzero((x < outer[0]) | (x > outer[1]))),
        most_extreme_sd=float(z[extreme]) if n else math.nan,
        most_extreme_value=float(x[extreme]) if n else math.nan,
        lag1_autocorrelation=r1,
        effective_n=n_eff,
        kendall_tau=float(tau.statistic) if tau is not None else math.nan,
        kendall_p=float(tau.pvalue) if tau is not None else math.nan,
        kendall_points=int(step.size),
        theil_sen_slope=slope,
        theil_sen_ci=(slope_low, slope_high),
        theil_sen_points=points,
        warmup_n=warm_n,
        warmup_mean=warm_mean,
        rest_mean=rest_mean,
        warmup_p=warm_p,
        drift_percent=slope * float(it[-1] - it[0]) / abs(mean) * 100 if n and mean else math.nan,
        warnings=(),
    )
    return replace(diag, warnings=tuple(alerts(diag)))


def alerts(d: Diagnostics) -> list[str]:
    """What a reader should worry about, in words; empty when nothing stands out."""
    found: list[str] = []
    if d.above_6sd + d.below_6sd > max(1.0, 100 * 2 * d.expected_6sd):
        found.append(
            f"{d.above_6sd + d.below_6sd} samples beyond ±6σ where a normal distribution expects"
            f" {2 * d.expected_6sd:.2g}: heavy tails, the normal margin of error is optimistic"
        )
    elif d.above_3sd + d.below_3sd > 2 * (2 * d.expected_3sd) + 3:
        found.append(
            f"{d.above_3sd + d.below_3sd} samples beyond ±3σ where a normal distribution expects"
            f" {2 * d.expected_3sd:.1f}"
        )
    if abs(d.skewness) > 1:
        found.append(f"skewed (skewness {d.skewness:+.2f})")
    if d.lag1_autocorrelation > 0.1:
        found.append(
            f"successive samples are correlated (lag-1 r = {d.lag1_autocorrelation:.2f}):"
            f" effective n {d.effective_n:,.0f} of {d.n:,}; its margin of error and intervals"
            " are from batch means"
        )
    if d.kendall_p < 0.001 and abs(d.drift_percent) >= 0.1:
        found.append(
            f"drift over iteration order (Kendall τ {d.kendall_tau:+.3f}, p {d.kendall_p:.1g}):"
            f" {d.drift_percent:+.2f} % over the run"
        )
    if d.warmup_n and d.warmup_p < WARMUP_ALERT_P:
        change = (d.warmup_mean / d.rest_mean - 1) * 100 if d.rest_mean else math.nan
        found.append(
            f"warm-up: the first {d.warmup_n} iterations differ from the rest by {change:+.2f} %"
            f" (Welch p {d.warmup_p:.1g}); consider discarding them as warm-up"
        )
    return found
