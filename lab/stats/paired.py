"""Paired analysis of synchronised runs: iteration i of A against iteration i of B.

When both twins start each iteration together, whatever disturbs the host during that
iteration (another tenant, a cron job, thermal throttling) tends to slow both: their
samples correlate, and the difference Dᵢ = Bᵢ − Aᵢ varies less than two independent samples
would. The paired analysis uses that: Student's paired t interval and test on the Dᵢ, and
the Wilcoxon signed-rank test as its rank-based companion (any textbook, e.g. Hollander,
Wolfe & Chicken, "Nonparametric Statistical Methods", 3rd ed., 2014, ch. 3). How much
pairing helped is var(D) / (var(A) + var(B)), which is 1 − 2·cov(A, B)/(var(A) + var(B)):
1 for independent samples, near 0 when a shared disturbance dominates. Only iterations
with a successful sample in both arms are paired; the others are counted, never guessed.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy import stats

from lab.stats.descriptive import check_confidence

SYNCED_SCHEDULES = ("sync", "synced", "paired")


@dataclass(frozen=True)
class PairedDifference:
    """B − A over the iterations both arms completed."""

    confidence: float
    n: int  # pairs
    unpaired_a: int  # samples of A without a partner in B
    unpaired_b: int
    mean_a: float  # over the paired iterations only
    mean_b: float
    diff: float
    diff_ci: tuple[float, float]
    t_statistic: float
    df: int
    t_p: float
    wilcoxon_p: float
    var_a: float
    var_b: float
    var_diff: float
    correlation: float  # Pearson r of the pairs

    @property
    def variance_ratio(self) -> float:
        """var(B − A) / (var(A) + var(B)): below 1 when pairing removed variance."""
        total = self.var_a + self.var_b
        return self.var_diff / total if total > 0 else math.nan

    @property
    def variance_removed(self) -> float:
        """The share of the unpaired variance of B − A that pairing removed (1 − the ratio)."""
        return 1 - self.variance_ratio

    @property
    def percent(self) -> float:
        """The mean difference in percent of A's mean (over the paired iterations)."""
        return self.diff / self.mean_a * 100 if self.mean_a else math.nan

    @property
    def percent_ci(self) -> tuple[float, float]:
        """The interval in percent of A's mean, which is taken as known."""
        if not self.mean_a:
            return (math.nan, math.nan)
        return (self.diff_ci[0] / self.mean_a * 100, self.diff_ci[1] / self.mean_a * 100)


def _occurrence(iterations: np.ndarray) -> np.ndarray:
    """For each sample, how many earlier samples (in stored order) share its iteration."""
    order = np.argsort(iterations, kind="stable")
    ranked = iterations[order]
    occurrence = np.empty(iterations.size, dtype=np.int64)
    occurrence[order] = np.arange(iterations.size) - np.searchsorted(ranked, ranked, side="left")
    return occurrence


def match_iterations(
    iterations_a: np.ndarray, iterations_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Indices into A and B of the samples that share an iteration, in run and iteration order.

    With several runs concatenated an iteration number repeats; its k-th occurrence in A
    pairs with its k-th occurrence in B.
    """
    it_a = np.asarray(iterations_a, dtype=np.int64)
    it_b = np.asarray(iterations_b, dtype=np.int64)
    if not it_a.size or not it_b.size:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    low = min(int(it_a.min()), int(it_b.min()))
    base = max(int(it_a.max()), int(it_b.max())) - low + 1
    key_a = _occurrence(it_a) * base + (it_a - low)
    key_b = _occurrence(it_b) * base + (it_b - low)
    _, index_a, index_b = np.intersect1d(key_a, key_b, assume_unique=True, return_indices=True)
    return index_a, index_b


def paired_difference(
    iterations_a: np.ndarray,
    values_a: np.ndarray,
    iterations_b: np.ndarray,
    values_b: np.ndarray,
    confidence: float,
) -> PairedDifference:
    """The paired analysis of B against A at ``confidence`` (fraction or percent)."""
    level = check_confidence(confidence)
    index_a, index_b = match_iterations(iterations_a, iterations_b)
    a = np.asarray(values_a, dtype=np.float64)[index_a]
    b = np.asarray(values_b, dtype=np.float64)[index_b]
    n = int(a.size)
    nan2 = (math.nan, math.nan)
    var_a = float(np.var(a, ddof=1)) if n > 1 else math.nan
    var_b = float(np.var(b, ddof=1)) if n > 1 else math.nan
    d = b - a
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        if n > 1:
            res = stats.ttest_rel(b, a)
            ci = res.confidence_interval(confidence_level=level)
            t, p, low, high = float(res.statistic), float(res.pvalue), float(ci.low), float(ci.high)
        else:
            t, p, (low, high) = math.nan, math.nan, nan2
        r = float(np.corrcoef(a, b)[0, 1]) if n > 2 else math.nan
    return PairedDifference(
        confidence=level,
        n=n,
        unpaired_a=int(np.asarray(values_a).size - n),
        unpaired_b=int(np.asarray(values_b).size - n),
        mean_a=float(a.mean()) if n else math.nan,
        mean_b=float(b.mean()) if n else math.nan,
        diff=float(d.mean()) if n else math.nan,
        diff_ci=(low, high),
        t_statistic=t,
        df=max(0, n - 1),
        t_p=p,
        wilcoxon_p=wilcoxon_p(d),
        var_a=var_a,
        var_b=var_b,
        var_diff=float(np.var(d, ddof=1)) if n > 1 else math.nan,
        correlation=r,
    )


def wilcoxon_p(d: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p of the differences (zeros dropped; NaN if none left)."""
    if np.count_nonzero(d) < 1:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scipy's note on small samples
        return float(stats.wilcoxon(d, zero_method="wilcox").pvalue)


class RunFacts(Protocol):
    """What :func:`synced_workloads` reads of a run (a :class:`lab.store.RunRecord` has it)."""

    @property
    def workload(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def schedule(self) -> str | None: ...


def synced_workloads(runs: Iterable[RunFacts]) -> frozenset[str]:
    """Workloads with a run whose schedule (or ``sync``/``paired`` parameter) synchronised it."""
    names = set()
    for run in runs:
        flagged = any(bool(run.params.get(key)) for key in ("sync", "paired"))
        if flagged or (run.schedule or "").lower() in SYNCED_SCHEDULES:
            names.add(run.workload)
    return frozenset(names)
