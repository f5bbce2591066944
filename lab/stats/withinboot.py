"""Iterations that remember the one before, inside a boot: what a boots plan must know of them.

Within one boot the iterations of a guest often follow each other like an AR(1) series of lag-1
autocorrelation r (the page cache, a daemon's cycle). A boot mean of n of them then varies as

    Var(ȳ_boot) = σ²_between + σ²_within / n · f(n, r),
    f(n, r) = 1 + 2 Σ_{k=1}^{n−1} (1 − k/n) r^k = (1 + r)/(1 − r) − 2r(1 − rⁿ) / (n(1 − r)²),

not σ²_between + σ²_within / n: at r = 0.5 and n = 20 a boot mean is worth 7, not 20,
independent iterations. A boots plan that leaves f out plans too few boots (issue 40: promised
power 0.91, delivered 0.77).

The pilot's variance components are read under the same model. r is estimated from lag-1
products of deviations from each boot's own mean, pooled over every boot and never across a
boot's edge (where the boot effect would pass for correlation). Centring on a boot's mean
biases that ratio down by about (1 + 3r)/m for boots of m (Kendall); so r is the value whose
*expected* pooled ratio, worked out exactly for the pilot's boot sizes, equals the one
observed. The one-way ANOVA of ``lab.stats.boots`` assumes independent iterations: with AR(1)
its within-boot mean square estimates σ²_within·(m − f(m))/(m − 1) and its between-boot part
absorbs the rest. With boots of sizes m_b, N samples,

    σ²_within = SSW / Σ (m_b − f(m_b)),
    σ²_between = max(0, (SSB − σ²_within · Σ (1 − m_b/N) f(m_b)) / (N − Σ m_b²/N)),

the method of moments again, equal to the ANOVA's at r = 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from lab.stats.boots import BootComponents, components

MAX_R = 0.99  # beyond this the pilot cannot tell r from a drift


def inflation(n: float | np.ndarray, r: float) -> np.ndarray:
    """f(n, r): the variance of a mean of n AR(1) values over that of n independent ones."""
    n = np.asarray(n, dtype=np.float64)
    if r == 0:
        return np.ones_like(n)
    return (1 + r) / (1 - r) - 2 * r * (1 - r**n) / (n * (1 - r) ** 2)


def boot_mean_variance(between: float, within: float, n: float, r: float) -> float:
    """The variance of one boot mean of n iterations: σ²_between + σ²_within / n · f(n, r)."""
    return between + within / n * float(inflation(n, r))


def _groups(boots: Sequence[object] | np.ndarray) -> np.ndarray:
    labels = np.asarray(boots)
    if labels.dtype.kind not in "iu":
        labels = labels.astype(str)
    return np.unique(labels, return_inverse=True)[1].reshape(-1)


@dataclass(frozen=True)
class Lag1Sums:
    """The pooled lag-1 products and squares of deviations from each boot's mean."""

    products: float  # Σ over boots, Σ_t d_t·d_{t+1}, both in the same boot
    squares: float  # Σ over boots, Σ_t d_t²
    sizes: np.ndarray  # the iterations of each boot

    @property
    def ratio(self) -> float:
        return self.products / self.squares if self.squares > 0 else math.nan


def lag1_sums(values: np.ndarray, boots: Sequence[object] | np.ndarray) -> Lag1Sums:
    """The lag-1 sums of one arm (values in iteration order, ``boots`` their boot labels)."""
    x = np.asarray(values, dtype=np.float64)
    group = _groups(boots)
    if group.size != x.size:
        raise ValueError("values and boots must have the same length")
    sizes = np.bincount(group)
    means = np.bincount(group, weights=x) / np.maximum(sizes, 1)
    d = x - means[group]
    same = group[:-1] == group[1:]  # neighbours in one boot: never across its edge
    products = float(np.sum((d[:-1] * d[1:])[same]))
    return Lag1Sums(products, float(np.dot(d, d)), sizes[sizes > 0])


def expected_ratio(r: float, sizes: np.ndarray) -> float:
    """E[Σ products] / E[Σ squares] of :func:`lag1_sums` for AR(1) boots of ``sizes``: per
    boot of m, the centred covariance D = CΣC has trace m − f(m) and first off-diagonal sum
    (m − 1)(r + g) − 2mg + 2a₀, g = f(m)/m (Σ's mean), a₀ = (1 − rᵐ)/(m(1 − r)) (its first
    row's mean)."""
    m = np.asarray(sizes, dtype=np.float64)
    m = m[m >= 2]
    if m.size == 0:
        return math.nan
    f = inflation(m, r)
    g = f / m
    a0 = 1 / m if r == 0 else (1 - r**m) / (m * (1 - r))
    products = (m - 1) * (r + g) - 2 * m * g + 2 * a0
    return float(np.sum(products) / np.sum(m - f))


def estimate_r(sums: Sequence[Lag1Sums]) -> float:
    """r within boots, pooled over the boots of every arm given: the r in [0, 0.99] whose
    expected pooled ratio is the observed one (0 when the observed one is at or below what
    independent iterations give, or the boots are too short to tell)."""
    products = sum(s.products for s in sums)
    squares = sum(s.squares for s in sums)
    sizes = np.concatenate([s.sizes for s in sums]) if sums else np.zeros(0)
    if squares <= 0:
        return 0.0
    observed = products / squares
    low, high = expected_ratio(0.0, sizes), expected_ratio(MAX_R, sizes)
    if not math.isfinite(low) or high - low < 1e-9 or observed <= low:
        return 0.0  # boots of two say nothing of r: their two deviations are opposite
    if observed >= high:
        return MAX_R
    return float(optimize.brentq(lambda r: expected_ratio(r, sizes) - observed, 0.0, MAX_R,
                                 xtol=1e-10))  # fmt: skip


def corrected(comp: BootComponents, r: float) -> tuple[float, float, float]:
    """(σ²_between, σ²_within, the effective degrees of freedom Σ (m_b − f(m_b)) of
    σ²_within) of one arm under AR(1) r within its boots; the ANOVA's own at r = 0."""
    m = comp.sizes.astype(np.float64)
    n = float(m.sum())
    f = inflation(m, r)
    spare = float(np.sum(m - f))
    ssw = comp.within * (n - m.size) if math.isfinite(comp.within) else math.nan
    within = ssw / spare if spare > 0 else math.nan
    if m.size < 2 or not math.isfinite(within):
        return math.nan, within, spare
    grand = float(np.sum(m * comp.means)) / n
    ssb = float(np.sum(m * (comp.means - grand) ** 2))
    weight = n - float(np.sum(m**2)) / n
    between = max(0.0, (ssb - within * float(np.sum((1 - m / n) * f))) / weight)
    return between, within, spare


@dataclass(frozen=True)
class BootPilot:
    """What a pilot of several boots per arm says for a boots plan."""

    between: float  # σ²_between, the mean over the arms
    within: float  # σ²_within of one iteration about its boot's level, pooled over the arms
    r: float  # lag-1 autocorrelation within boots, pooled over boots and arms (≥ 0)
    observed: float  # the pooled lag-1 ratio before its bias is taken out
    arms: tuple[BootComponents, ...]


def boot_pilot(arms: Sequence[tuple[np.ndarray, Sequence[object] | np.ndarray]]) -> BootPilot:
    """The pilot's variance components and r from each arm's (values, boot labels)."""
    sums = [lag1_sums(values, boots) for values, boots in arms]
    r = estimate_r(sums)
    comps = tuple(components(values, boots) for values, boots in arms)
    parts = [corrected(c, r) for c in comps]
    between = float(np.mean([b for b, _, _ in parts]))
    spare = np.array([s for _, _, s in parts])
    within = float(np.sum(spare * np.array([w for _, w, _ in parts])) / spare.sum())
    products = sum(s.products for s in sums)
    squares = sum(s.squares for s in sums)
    return BootPilot(between, within, r, products / squares if squares else math.nan, comps)
