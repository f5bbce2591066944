"""The variant effect with the host as a blocking factor (`lab compare --by host`).

Hosts differ (CPU, memory, load), so twins are compared within their host first: the
difference of means B − A on each host with Welch's interval. Those differences are then
combined by inverse-variance weighting (a fixed-effect meta-analysis): the combined
difference and its standard error ``1/sqrt(sum w)``; its interval and p-value use Student's
t with Welch–Satterthwaite degrees of freedom for that weighted sum of the arms' variances
(with one host, exactly Welch's interval; with many samples, the normal one). Cochran's Q
says whether the hosts disagree about the effect beyond chance.

A host whose arms are both constant (quantised data, a cached result) has a standard error of
0, and 1/se² would give it an infinite weight (it divided by zero). Then the hosts are
weighted equally instead: the plain mean of their differences, whose variance
Σ seᵢ²/k² needs no weight to be finite. That estimate is unbiased whatever the hosts'
variances; the constant host adds no sampling error to it (its samples show none), and
Cochran's Q, which needs every host's variance, is not computed (NaN).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from lab.stats.difference import welch
from lab.stats.series import Series


@dataclass(frozen=True)
class BlockDifference:
    block: str
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    difference: float  # mean(B) − mean(A)
    se: float
    ci: tuple[float, float]  # Welch's interval
    p: float
    var_a: float  # sample variances (ddof 1), for the combined degrees of freedom
    var_b: float


@dataclass(frozen=True)
class BlockedDifference:
    workload: str
    metric: str
    unit: str
    a: str
    b: str
    confidence: float  # percent
    blocks: tuple[BlockDifference, ...]
    skipped: tuple[str, ...]  # blocks without two samples of each variant, and why
    difference: float
    se: float
    df: float  # Welch–Satterthwaite
    ci: tuple[float, float]
    p: float
    q: float  # Cochran's Q over the blocks (NaN when the hosts are weighted equally)
    q_p: float  # its p-value (chi-squared, blocks − 1 degrees of freedom)

    @property
    def weighting(self) -> str:
        """How the hosts were combined, in words."""
        return weighting(self.blocks)

    @property
    def percent(self) -> float:
        """The combined difference relative to A's mean, weighted as the differences are."""
        base = float(np.sum(shares(self.blocks) * [b.mean_a for b in self.blocks]))
        if base == 0:  # a count that never moved on A (perf.cpu_migrations): no percent
            return math.nan
        return 100.0 * self.difference / base


def block_difference(
    block: str, a: np.ndarray, b: np.ndarray, confidence: float
) -> BlockDifference:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # constant arms: scipy's NaN, said so
        low, high, _, p = welch(a, b, confidence / 100.0)
    var_a, var_b = float(np.var(a, ddof=1)), float(np.var(b, ddof=1))
    se = float(np.sqrt(var_a / a.size + var_b / b.size))
    return BlockDifference(
        block, a.size, b.size, float(a.mean()), float(b.mean()), float(b.mean() - a.mean()),
        se, (low, high), p, var_a, var_b,
    )  # fmt: skip


def _constant(blocks: Sequence[BlockDifference]) -> list[str]:
    return [b.block for b in blocks if not b.se > 0]


def shares(blocks: Sequence[BlockDifference]) -> np.ndarray:
    """Each block's share of the combined difference: w/Σw with w = 1/se², or 1/k each
    when a block's standard error is 0 (its weight would be infinite)."""
    if _constant(blocks):
        return np.full(len(blocks), 1.0 / len(blocks))
    w = 1.0 / np.array([b.se for b in blocks]) ** 2
    return w / np.sum(w)


def weighting(blocks: Sequence[BlockDifference]) -> str:
    """How :func:`combine` weights these blocks, in words."""
    constant = _constant(blocks)
    if not constant:
        return "weighted by 1/se²"
    return (
        f"weighted equally: the arms of {', '.join(constant)} are constant (se 0, an"
        " infinite 1/se² weight)"
    )


def combine(
    blocks: Sequence[BlockDifference], confidence: float
) -> tuple[float, float, float, tuple[float, float], float, float, float]:
    """(difference, se, df, interval, p, Q, p of Q) of the inverse-variance weighted blocks
    (equally weighted when a block's se is 0; then Q and its p are NaN)."""
    d = np.array([b.difference for b in blocks])
    share = shares(blocks)
    mean = float(np.sum(share * d))
    # The combined variance is sum(share² · (var_a/n_a + var_b/n_b)) over the blocks
    # (1/Σw for inverse-variance shares): Satterthwaite's degrees of freedom for that sum of
    # independent variance estimates.
    terms = [(c**2 * b.var_a / b.n_a, b.n_a - 1) for c, b in zip(share, blocks, strict=True)] + [
        (c**2 * b.var_b / b.n_b, b.n_b - 1) for c, b in zip(share, blocks, strict=True)
    ]
    variance = sum(t for t, _ in terms)
    se = float(np.sqrt(variance))
    if se == 0:  # every arm of every host constant: the difference is what it is
        p = 1.0 if mean == 0 else 0.0
        return mean, 0.0, math.inf, (mean, mean), p, math.nan, math.nan
    df = float(variance**2 / sum(t**2 / n for t, n in terms if t > 0))
    t = float(stats.t.ppf(0.5 + confidence / 200.0, df))
    p = float(2 * stats.t.sf(abs(mean) / se, df))
    if _constant(blocks):
        q, q_p = math.nan, math.nan
    else:
        w = 1.0 / np.array([b.se for b in blocks]) ** 2
        q = float(np.sum(w * (d - mean) ** 2))
        q_p = float(stats.chi2.sf(q, len(blocks) - 1)) if len(blocks) > 1 else math.nan
    return mean, se, df, (mean - t * se, mean + t * se), p, q, q_p


def by_host(
    series: Sequence[Series], order: Sequence[str], confidence: float
) -> list[BlockedDifference]:
    """One blocked comparison per (workload, metric) with two variants: the first of
    ``order`` present is A, the next B. A host's guests of one variant are pooled."""
    groups: dict[tuple[str, str, str], list[Series]] = {}
    for s in series:
        groups.setdefault((s.study, s.workload, s.metric), []).append(s)
    found = []
    for (_, workload, metric), group in groups.items():
        variants = sorted(
            {s.variant for s in group},
            key=lambda v: (v not in order, order.index(v) if v in order else 0, v),
        )
        if len(variants) < 2:
            continue
        a, b = variants[:2]
        values: dict[str, dict[str, list[np.ndarray]]] = {}
        for s in group:
            if s.variant in (a, b):
                values.setdefault(s.host, {}).setdefault(s.variant, []).append(s.values)
        blocks, skipped = [], []
        for host, arms in sorted(values.items()):
            xa = np.concatenate(arms.get(a, [np.array([])]))
            xb = np.concatenate(arms.get(b, [np.array([])]))
            if xa.size < 2 or xb.size < 2:
                skipped.append(f"{host}: {xa.size} samples of {a}, {xb.size} of {b}")
                continue
            blocks.append(block_difference(host, xa, xb, confidence))
        if not blocks:
            continue
        diff, se, df, ci, p, q, q_p = combine(blocks, confidence)
        found.append(
            BlockedDifference(
                workload,
                metric,
                group[0].unit,
                a,
                b,
                confidence,
                tuple(blocks),
                tuple(skipped),
                diff,
                se,
                df,
                ci,
                p,
                q,
                q_p,
            )
        )
    return found


def as_dict(result: BlockedDifference) -> Mapping[str, object]:
    return {
        "workload": result.workload, "metric": result.metric, "unit": result.unit,
        "a": result.a, "b": result.b, "confidence": result.confidence,
        "hosts": [
            {"host": b.block, "n_a": b.n_a, "n_b": b.n_b, "mean_a": b.mean_a, "mean_b": b.mean_b,
             "difference": b.difference, "se": b.se, "ci": list(b.ci), "p": b.p}
            for b in result.blocks
        ],
        "skipped": list(result.skipped),
        "combined": {"difference": result.difference, "se": result.se, "df": result.df,
                     "ci": list(result.ci),
                     "p": result.p, "percent": result.percent, "cochran_q": result.q,
                     "cochran_q_p": result.q_p, "weighting": result.weighting},
    }  # fmt: skip
