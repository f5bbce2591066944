"""P(verdict) under ``lab compare``'s own rule, for ``lab plan`` (issue 32, item 3).

The plan's old model was a pooled t test of B − A with 2n − 2 degrees of freedom, and an
AR(1) series counted as n·(1 − r)/(1 + r) independent samples. ``lab compare`` does
otherwise: Welch's degrees of freedom, the ratio of means on the log scale (each arm's
variance relative to its own mean), the difference's interval agreeing, and for an arm whose
lag-1 r tests significant the variance of its mean from k batch means with k − 1 degrees of
freedom (``lab.stats.batchmeans``). At 99.99 % a few degrees of freedom cost a lot: with
r = 0.5 and n = 174 the old plan promised P = 0.91 where compare delivers about 0.3.

So P(verdict) is found by applying that rule to simulated studies, drawn from what the rule
reads of each arm rather than from n samples, so that the cost does not grow with n:

- its mean, normal about the true mean with the AR(1) variance of a mean of n samples,
  σ²/n·[(1 + r)/(1 − r) − 2r(1 − rⁿ)/(n(1 − r)²)];
- whether the lag-1 test batches it: r̂₁ about normal with mean r − (1 + 3r)/n and variance
  (1 − r²)/n (Kendall 1954), against the test ``(r̂₁ + 1/n)·√n > z(0.99)``, from 8 samples;
- the variance of its mean as the rule estimates it: batched, b·v_b/n·χ²(k − 1)/(k − 1) with
  the batch size b the rule picks for r, k = ⌊n/b⌋ and v_b the variance of a mean of b; else
  s²/n with s² scaled χ²(n − 1)/(n − 1) about its AR(1) expectation n(σ² − V)/(n − 1).

Drawn apart, an autocorrelated arm's estimated r (which sets its batch size, so its degrees
of freedom) and its batch means' variance miss how they move together: P came out 3 points
high at r = 0.5, n = 271. So where r > 0 the plan's search starts from those draws and ends
on ``RAW_DRAWS`` studies of whole AR(1) samples (``scipy.signal.lfilter``) through the same
rule, up to ``RAW_VALUES`` values an arm.

The draws are seeded and shared by every n (common random numbers), so the plan is the same
every time and P rises smoothly with n. ``DRAWS`` studies put P within ±0.01 (4 standard
errors at P = 0.5). tests/unit/test_plan_rule.py checks P against simulations of whole
samples through the rule written out again; bench/stat_coverage.py prints the larger ones
of the README.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import signal, special, stats

from lab.stats.batchmeans import BIAS_BOUND, FIXED_N_ALPHA, MIN_BATCHES, MIN_SAMPLES
from lab.stats.series import Direction

DRAWS = 16_000
SEED = 20261127


@dataclass(frozen=True)
class Scenario:
    """What the plan assumes: A's mean (None: judged on the difference only), the true
    difference (positive = B better), the common sd, lag-1 r, and the verdict's threshold:
    ±``bound`` in the metric's unit, or a fraction ``relative`` of A's mean."""

    mean: float | None
    delta: float
    sd: float
    r: float
    bound: float
    relative: float | None  # the threshold as a fraction of A's mean; None: in units
    confidence: float
    direction: Direction = "lower"


def mean_variance(n: int | np.ndarray, sd: float, r: float) -> np.ndarray:
    """The variance of the mean of n samples of a stationary AR(1) series."""
    n = np.asarray(n, dtype=np.float64)
    if r == 0:
        return sd**2 / n
    return sd**2 / n * ((1 + r) / (1 - r) - 2 * r * (1 - r**n) / (n * (1 - r) ** 2))


def _batch_sizes(n: int, r_hat: np.ndarray) -> np.ndarray:
    """``lab.stats.batchmeans.batch_size`` for each study's estimated r."""
    root = max(1, math.isqrt(n))
    clipped = np.clip(r_hat, 0.0, 0.99)
    for_r = np.ceil(BIAS_BOUND * clipped / (1 - clipped**2))
    return np.minimum(np.maximum(root, for_r), max(root, n // MIN_BATCHES)).astype(np.int64)


def _arm(
    n: int, true_mean: float, s: Scenario, draws: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each study's mean, estimated variance of the mean and its degrees of freedom."""
    v_n = float(mean_variance(n, s.sd, s.r))
    means = true_mean + math.sqrt(v_n) * draws.standard_normal(DRAWS)
    # drawn at every n, used or not: the draws stay aligned from one n to the next
    test = draws.standard_normal(DRAWS)
    plain = draws.chisquare(max(n - 1, 1), DRAWS) / max(n - 1, 1)
    spare = draws.standard_normal(DRAWS)
    s2 = n * (s.sd**2 - v_n) / (n - 1)  # E[s²] of an AR(1) series
    variance = s2 / n * plain
    df = np.full(DRAWS, float(n - 1))
    if n < MIN_SAMPLES:
        return means, variance, df
    r_hat = s.r - (1 + 3 * s.r) / n + math.sqrt((1 - s.r**2) / n) * test
    batched = (r_hat + 1 / n) * math.sqrt(n) > float(stats.norm.isf(FIXED_N_ALPHA))
    size = _batch_sizes(n, r_hat)
    expected = np.ones(DRAWS)  # rows not batched keep s²/n
    nu = np.ones(DRAWS)
    for b in np.unique(size[batched]):
        rows = size == b
        mean_b, nu_b = _batch_variance(int(b), n // int(b), s.sd, s.r)
        expected[rows], nu[rows] = size[rows] / n * mean_b, nu_b
    # a scaled χ²(ν)/ν by Wilson–Hilferty from one normal draw, as ν varies by study
    chi = np.maximum(0.0, 1 - 2 / (9 * nu) + spare * np.sqrt(2 / (9 * nu))) ** 3
    variance = np.where(batched, expected * chi, variance)
    df = np.where(batched, n // size - 1.0, df)
    return means, variance, df


EXACT_BATCHES = 300  # above this many batches their correlation is left out of ν


def _batch_variance(b: int, k: int, sd: float, r: float) -> tuple[float, float]:
    """The mean of s²(batch means) for k batches of b of an AR(1) series, and the degrees of
    freedom ν of the scaled χ²(ν)/ν with its variance too. Adjacent batch means correlate,
    so s² is a weighted sum of χ²(1) terms (weights: the eigenvalues of A·C, C the batch
    means' covariance and A the centring matrix over k − 1), matched by its first two
    moments: ν = (Σλ)²/Σλ² (Satterthwaite), below the k − 1 the rule assumes."""
    v_b = float(mean_variance(b, sd, r))
    if k > EXACT_BATCHES or r == 0:
        mean = k / (k - 1) * (v_b - float(mean_variance(k * b, sd, r)))
        return mean, float(k - 1)
    # Cov(Bᵢ, Bⱼ) = σ²/b²·r^((|i−j|−1)·b + 1)·((1 − r^b)/(1 − r))² for i ≠ j
    lags = np.abs(np.subtract.outer(np.arange(k), np.arange(k)))
    across = sd**2 / b**2 * ((1 - r**b) / (1 - r)) ** 2
    cov = np.where(lags == 0, v_b, across * r ** np.maximum((lags - 1) * b + 1, 0))
    centred = cov - cov.mean(axis=0) - cov.mean(axis=1)[:, None] + cov.mean()
    ac = centred / (k - 1)  # A·C·A/(k − 1): the same traces as A·C/(k − 1)
    first, second = float(np.trace(ac)), float(np.sum(ac * ac.T))
    return first, first**2 / second


def _interval(
    estimate: np.ndarray,
    var_a: np.ndarray,
    df_a: np.ndarray,
    var_b: np.ndarray,
    df_b: np.ndarray,
    level: float,
) -> tuple[np.ndarray, np.ndarray]:
    """estimate ± t·√(var_a + var_b), t at the Welch–Satterthwaite degrees of freedom."""
    total = var_a + var_b
    df = total**2 / (var_a**2 / df_a + var_b**2 / df_b)
    half = special.stdtrit(df, 0.5 + level / 2) * np.sqrt(total)
    return estimate - half, estimate + half


RAW_VALUES = 8_000_000  # values per arm a whole-sample simulation may draw
RAW_MIN_DRAWS = 1_000
RAW_DRAWS = 4_000  # studies simulated sample by sample: P within ±0.02 (4 standard errors)


def _raw(n: int) -> int:
    """How many studies to simulate sample by sample, or 0 to draw what the rule reads.

    An autocorrelated arm's batch size follows its estimated r, which moves with the batch
    means' variance too: drawn apart they were 3 points off at r = 0.5, n = 271. Where the
    batch size cannot follow r̂ (⌊√n⌋ already beyond 40·r/(1 − r²) for any likely r̂) or n
    is too large to simulate, the drawn statistics serve."""
    studies = min(RAW_DRAWS, RAW_VALUES // n)
    return studies if studies >= RAW_MIN_DRAWS else 0


def _raw_arm(
    n: int, true_mean: float, s: Scenario, draws: np.random.Generator, studies: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rule's mean, variance of the mean and degrees of freedom from whole AR(1) samples."""
    noise = draws.standard_normal((studies, n))
    start = noise[:, :1] * s.sd  # stationary from the first sample
    x = signal.lfilter([s.sd * math.sqrt(1 - s.r**2)], [1.0, -s.r], noise[:, 1:], axis=1,
                       zi=s.r * start)[0]  # fmt: skip
    x = np.concatenate([start, x], axis=1) + true_mean
    means = x.mean(axis=1)
    d = x - means[:, None]
    r_hat = np.sum(d[:, :-1] * d[:, 1:], axis=1) / np.sum(d * d, axis=1)
    variance = x.var(axis=1, ddof=1) / n
    df = np.full(studies, n - 1.0)
    if n < MIN_SAMPLES:
        return means, variance, df
    batched = (r_hat + 1 / n) * math.sqrt(n) > float(stats.norm.isf(FIXED_N_ALPHA))
    size = _batch_sizes(n, r_hat)
    for b in np.unique(size[batched]):
        rows = batched & (size == b)
        k = n // int(b)
        batch = x[rows, : k * int(b)].reshape(-1, k, int(b)).mean(axis=2)
        variance[rows] = b * batch.var(axis=1, ddof=1) / n
        df[rows] = k - 1
    return means, variance, df


def verdict_shares(n: int, s: Scenario, whole: bool = True) -> dict[str, float]:
    """The share of simulated studies with n samples per variant that ``lab compare``
    judges "faster", "slower" and "equivalent" (in the plan's sense: faster = B better).
    ``whole=False`` draws only what the rule reads even for autocorrelated arms: quicker,
    a few points off, where the plan's search starts."""
    draws = np.random.default_rng(SEED)
    base = s.mean if s.mean is not None else 0.0
    sign = -1.0 if s.direction == "lower" else 1.0
    studies = _raw(n) if whole and s.r > 0 and n >= MIN_SAMPLES else 0
    if studies:
        mean_a, var_a, df_a = _raw_arm(n, base, s, draws, studies)
        mean_b, var_b, df_b = _raw_arm(n, base + sign * s.delta, s, draws, studies)
    else:
        mean_a, var_a, df_a = _arm(n, base, s, draws)
        mean_b, var_b, df_b = _arm(n, base + sign * s.delta, s, draws)
    with np.errstate(all="ignore"):
        diff_low, diff_high = _interval(mean_b - mean_a, var_a, df_a, var_b, df_b, s.confidence)
        diff_benefit = (sign * diff_high, sign * diff_low) if sign < 0 else (diff_low, diff_high)
        if s.relative is None or s.mean is None:
            low, high = diff_benefit
            limit = np.full(mean_a.size, s.bound)
            holds_zero = np.zeros(mean_a.size, dtype=bool)
        else:
            positive = (mean_a > 0) & (mean_b > 0)
            r_low, r_high = _interval(np.log(mean_b / mean_a), var_a / mean_a**2, df_a,
                                      var_b / mean_b**2, df_b, s.confidence)  # fmt: skip
            p_low, p_high = np.expm1(r_low), np.expm1(r_high)
            ratio_benefit = (-p_high, -p_low) if sign < 0 else (p_low, p_high)
            # where a mean is not positive the rule judges the difference against θ·|A|
            low = np.where(positive, ratio_benefit[0], diff_benefit[0])
            high = np.where(positive, ratio_benefit[1], diff_benefit[1])
            limit = np.where(positive, s.relative, s.relative * np.abs(mean_a))
            holds_zero = positive & (diff_low <= 0) & (diff_high >= 0)
        faster = (low > limit) & ~holds_zero
        slower = (high < -limit) & ~holds_zero & ~faster
        equivalent = (low >= -limit) & (high <= limit) & ~faster & ~slower
    return {
        "faster": float(faster.mean()),
        "slower": float(slower.mean()),
        "equivalent": float(equivalent.mean()),
    }
