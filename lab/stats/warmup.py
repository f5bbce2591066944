"""Warm-up: the first iterations after a boot that are not like the rest.

Two ways to leave them out:

- **declared**: discard the first k iterations of every boot (``discard_per_boot``), when the
  study knows its warm-up (page cache, JIT, huge page pool being faulted in);
- **detected**: ``suggest_warmup`` looks for one change in the mean with the CUSUM test. The
  centred partial sums Sⱼ = Σᵢ≤ⱼ (xᵢ − x̄), divided by σ̂·√n, approach a Brownian bridge
  when the mean does not change, so for long runs their largest absolute value is compared
  with the Kolmogorov distribution (``scipy.stats.kstwobign``) (E. S. Page, "Continuous
  inspection schemes", Biometrika 41, 1954; M. Csörgő and L. Horváth, "Limit Theorems in
  Change-Point Analysis", Wiley, 1997, ch. 1). The change is placed at the split that fits
  two means best (least squares), and σ̂ is pooled within those two segments, so the step
  itself does not inflate it. That σ̂ is also the smallest over the splits, which makes the
  statistic larger than the limit says at small n: at n = 10 the Kolmogorov p fell below
  0.01 in 4.8 % of runs of independent normal samples (issue 19). Up to
  ``PERMUTATION_MAX_N`` samples the p-value is therefore a permutation test of the same
  statistic (``PERMUTATIONS`` orderings of the run's own samples, a fixed seed): without a
  change every order is equally likely, so it holds its level exactly for any exchangeable
  samples. Above, the Kolmogorov p is used: in 200,000 runs each at n = 200, 300, 500,
  1,000 and 2,000 it rejected 0.96, 0.88, 0.89, 0.92 and 0.97 % at α = 0.01 (at n = 50,
  1.18 %); tests/unit/test_warmup.py prints the rates of both. A
  significant change in the first half of the run is a warm-up; one later on is drift or
  a disturbance and is reported as such, not cut. ``mser5`` gives the MSER-5 truncation
  point of White (K. P. White, "An effective truncation heuristic for bias reduction in
  simulation output", Simulation 69, 1997) as a second opinion: it always proposes a cut,
  and on data with no warm-up it often cuts a few batches, which is why it is not the default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

CUSUM_ALPHA = 0.01
MIN_SAMPLES = 10
MSER_BATCH = 5
PERMUTATIONS = 999  # p = (1 + orderings at least as extreme) / 1000: its smallest is 0.001
PERMUTATION_MAX_N = 200  # above, the Kolmogorov limit holds the level (and costs 1/30th)
PERMUTATION_SEED = 20261119  # fixed: the same samples give the same p
_CHUNK_ELEMENTS = 1_000_000  # orderings are scored this many values at a time


@dataclass(frozen=True, eq=False)
class WarmupSplit:
    """Samples kept and discarded by a declared per-boot warm-up."""

    kept_iterations: np.ndarray
    kept_values: np.ndarray
    discarded_iterations: np.ndarray
    discarded_values: np.ndarray


def discard_per_boot(
    iterations: np.ndarray, values: np.ndarray, boots: Sequence[str] | np.ndarray, k: int
) -> WarmupSplit:
    """Drop the first ``k`` iterations (by iteration number) after each boot."""
    it = np.asarray(iterations)
    x = np.asarray(values, dtype=np.float64)
    boot = np.asarray(boots, dtype=object)
    if not it.size == x.size == boot.size:
        raise ValueError("iterations, values and boots must have the same length")
    # rank of each sample within its boot, in iteration order
    order = np.lexsort((it, boot.astype(str)))
    rank = np.empty(it.size, dtype=np.int64)
    sorted_boots = boot[order].astype(str)
    starts = np.r_[0, np.flatnonzero(sorted_boots[1:] != sorted_boots[:-1]) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, it.size])) if it.size else starts
    rank[order] = np.arange(it.size) - group_start
    drop = rank < max(0, k)
    return WarmupSplit(it[~drop], x[~drop], it[drop], x[drop])


@dataclass(frozen=True)
class WarmupSuggestion:
    """How many leading iterations to discard, and the evidence."""

    n: int  # 0 when no warm-up was found
    method: str
    statistic: float
    p: float
    change_at: int  # where the mean changes (samples before it), even when not a warm-up
    shift: float  # mean of the first ``change_at`` samples minus the mean of the rest
    text: str


def _statistics(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cusum_statistic` of each row: (statistics, ĵ of each), vectorised.

    Three arrays the size of ``rows`` at most, reused in place (a million samples are 8 MB
    each: written as expressions, their temporaries took 124 MB for 3.1M samples)."""
    n = rows.shape[1]
    centred = rows - rows.mean(axis=1, keepdims=True)
    total = np.einsum("ij,ij->i", centred, centred)  # Σ(xᵢ − x̄)², without squaring a copy
    partial = np.cumsum(centred, axis=1, out=centred)[:, :-1]  # S₁ … Sₙ₋₁, in place
    split = np.arange(1, n, dtype=np.float64)  # j …
    split *= n - split  # … then j(n − j)
    fit = np.square(partial)
    fit /= split  # the between-segment sum of squares over n
    del split
    best = np.argmax(fit, axis=1)
    # within-segment sum of squares at the best split: the total minus the between part
    within = np.maximum(total - n * fit[np.arange(rows.shape[0]), best], 0.0)
    del fit
    within[within <= total * 1e-12] = 0.0  # a perfect step, up to rounding
    sd = np.sqrt(within / (n - 2))
    peak = np.maximum(np.max(partial, axis=1), -np.min(partial, axis=1))  # max |Sⱼ|
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = np.where(sd > 0, peak / (sd * math.sqrt(n)), np.where(peak > 0, math.inf, 0.0))
    return statistic, best + 1


def cusum_statistic(values: np.ndarray) -> tuple[float, int]:
    """(max |Sⱼ| / (σ̂·√n), ĵ): the CUSUM statistic and the samples before the change.

    ĵ is the least-squares split (it maximises Sⱼ²·n/(j(n−j)), the two-segment fit), which
    places a change near either end better than the peak of |Sⱼ|.
    """
    statistic, j = _statistics(np.asarray(values, dtype=np.float64)[np.newaxis, :])
    return float(statistic[0]), int(j[0])


def permutation_p(values: np.ndarray, statistic: float) -> float:
    """(1 + orderings whose statistic reaches ``statistic``) / (1 + ``PERMUTATIONS``): the
    share of random orderings of the samples at least as extreme, counting the observed one."""
    x = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(PERMUTATION_SEED)
    rows = max(1, _CHUNK_ELEMENTS // x.size)
    extreme, done = 0, 0
    while done < PERMUTATIONS:
        count = min(rows, PERMUTATIONS - done)
        shuffled = rng.permuted(np.broadcast_to(x, (count, x.size)), axis=1)
        found, _ = _statistics(shuffled)
        # the same value reached by a different order must count despite rounding
        extreme += int(np.count_nonzero(found >= statistic * (1 - 1e-9)))
        done += count
    return (1 + extreme) / (1 + PERMUTATIONS)


def suggest_warmup(values: np.ndarray, alpha: float = CUSUM_ALPHA) -> WarmupSuggestion:
    """The CUSUM test for one change in the mean; a warm-up if significant in the first half."""
    x = np.asarray(values, dtype=np.float64)
    exact = x.size <= PERMUTATION_MAX_N
    how = f"permutation p, {PERMUTATIONS} orderings" if exact else "Kolmogorov p"
    method = f"CUSUM test for a change in the mean ({how}, α = {alpha:g})"
    if x.size < MIN_SAMPLES:
        text = f"too few samples ({x.size}) to look for a warm-up; {MIN_SAMPLES} are needed"
        return WarmupSuggestion(0, method, math.nan, math.nan, 0, math.nan, text)
    statistic, j = cusum_statistic(x)
    p = permutation_p(x, statistic) if exact else float(stats.kstwobign.sf(statistic))
    shift = float(x[:j].mean() - x[j:].mean())
    where = f"after iteration {j} of {x.size} (the mean moves by {-shift:+.4g})"
    if p >= alpha:
        text = f"no warm-up: no significant change in the mean (p = {p:.3g})"
        return WarmupSuggestion(0, method, statistic, p, j, shift, text)
    if j > x.size // 2:
        text = (
            f"the mean changes {where}, p = {p:.3g}: too late for a warm-up; look at the"
            " run-order plot for a disturbance or drift"
        )
        return WarmupSuggestion(0, method, statistic, p, j, shift, text)
    text = (
        f"warm-up of {j} iterations: the mean changes {where}, p = {p:.3g}; discard them"
        f" (declare a warm-up of {j} per boot) or run longer"
    )
    return WarmupSuggestion(j, method, statistic, p, j, shift, text)


def mser_scores(values: np.ndarray, batch: int = MSER_BATCH) -> np.ndarray:
    """MSER(d) = Σ_{i>d}(Zᵢ − Z̄_d)² / (m − d)² for batch means Zᵢ, d = 0 … m/2."""
    x = np.asarray(values, dtype=np.float64)
    m = x.size // batch
    z = x[: m * batch].reshape(m, batch).mean(axis=1)
    rest = np.arange(m, 0, -1)  # m − d
    tail_sum = np.cumsum(z[::-1])[::-1]
    tail_squares = np.cumsum((z * z)[::-1])[::-1]
    scores = (tail_squares - tail_sum**2 / rest) / rest**2
    return scores[: m // 2 + 1]


def mser5(values: np.ndarray) -> WarmupSuggestion:
    """White's MSER-5 truncation point (in iterations), for comparison with the CUSUM test."""
    x = np.asarray(values, dtype=np.float64)
    method = f"MSER-{MSER_BATCH} truncation (White 1997)"
    if x.size < 2 * MSER_BATCH * 2:
        text = f"too few samples ({x.size}) for MSER-{MSER_BATCH}"
        return WarmupSuggestion(0, method, math.nan, math.nan, 0, math.nan, text)
    scores = mser_scores(x)
    d = int(np.argmin(scores)) * MSER_BATCH
    shift = float(x[:d].mean() - x[d:].mean()) if d else 0.0
    text = f"MSER-{MSER_BATCH} truncates {d} iterations"
    return WarmupSuggestion(d, method, float(scores.min()), math.nan, d, shift, text)
