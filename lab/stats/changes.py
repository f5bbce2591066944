"""Change points in a metric's history across versions, each with a ratio interval.

``lab history`` lists a metric by version (guest kernel, QEMU, libvirt, image recipe, a
repository's revision), each version with its samples. The change points are found by
ruptures (C. Truong, L. Oudre, N. Vayatis, "Selective review of offline change point
detection methods", Signal Processing 167, 2020): PELT with an l1 cost (a change in the
median) on the per-version medians, penalty 2σ̂·log n with σ̂ the noise sd estimated from the
median absolute first difference (robust to the jumps themselves). bench/changepoints.py
chose it among ruptures, MongoDB's E-divisive and Apache Otava (docs/statistics.md).

**Each change point's size** is the ratio of means after/before, mean of the segment after
over mean of the segment before (adjacent segments only, up to the neighbouring change
points), with Fieller's interval under Welch's unequal variances: the set of ratios ρ that
Welch's t-test of "mean after = ρ · mean before" does not reject at 1 − confidence. It is
unbounded when the mean before is not clearly above 0.

**Selection.** A location chosen because the data jump there makes an interval from the same
data too narrow and too far from 1 (the jump is partly noise that the search picked). So when
every version has at least 2 samples the samples are split: the change points are found on
the even-numbered samples of each version (0, 2, 4, ...) and the intervals computed from the
odd-numbered ones only, which played no part in the choice, so the interval holds at its
level for the segments chosen (conditional on the split). A history with a version of one
sample cannot be split: then both use every sample and the interval is marked ``selective``,
an interval for the chosen segments that ignores their choice, narrower than it should be.
No p-value is given for a change point: one computed after the search would not mean one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from lab.core.errors import UsageError
from lab.stats.descriptive import check_confidence

METHOD = "ruptures PELT, l1 cost on per-version medians, penalty 2σ̂·log n"
MIN_SEGMENT = 3  # versions; a shorter segment is one odd version, not a level


@dataclass(frozen=True)
class ChangePoint:
    """A change between ``versions[index - 1]`` and ``versions[index]``, and its size."""

    index: int  # the first version after the change
    version: str
    before: tuple[int, int]  # versions [start, stop) of the segment before
    after: tuple[int, int]
    n_before: int  # samples the interval read
    n_after: int
    ratio: float  # mean after / mean before
    ratio_ci: tuple[float, float]
    confidence: float
    selective: bool  # True: located and measured on the same samples (see the module text)

    @property
    def percent(self) -> float:
        return (self.ratio - 1) * 100


def fieller_welch(
    after: np.ndarray, before: np.ndarray, confidence: float
) -> tuple[float, tuple[float, float]]:
    """mean(after)/mean(before) and the ratios ρ where Welch's test of after vs ρ·before is
    not rejected at 1 − confidence (its degrees of freedom taken at each ρ)."""
    x, y = np.asarray(after, np.float64), np.asarray(before, np.float64)
    if x.size < 2 or y.size < 2:
        return math.nan, (math.nan, math.nan)
    alpha = 1 - check_confidence(confidence)
    mx, my = float(x.mean()), float(y.mean())
    vx, vy = float(x.var(ddof=1)) / x.size, float(y.var(ddof=1)) / y.size
    ratio = mx / my if my else math.nan

    def excess(rho: float) -> float:  # |t(ρ)| − its critical value: 0 at the bounds
        v = vx + rho * rho * vy
        if v <= 0:
            return math.inf if mx != rho * my else -math.inf
        df = v * v / (vx * vx / (x.size - 1) + rho**4 * vy * vy / (y.size - 1))
        return abs(mx - rho * my) / math.sqrt(v) - float(stats.t.isf(alpha / 2, df))

    if not math.isfinite(ratio) or excess(ratio) >= 0:
        return ratio, (-math.inf, math.inf)
    # far from the ratio |t| tends to |my|/√vy: past the critical value the interval closes
    bounds = []
    for direction in (-1.0, 1.0):
        step = max(abs(ratio), 1e-12) * 0.01
        edge = ratio
        while excess(edge + direction * step) < 0:
            step *= 2
            if step > 1e12 * max(1.0, abs(ratio)):
                edge = direction * math.inf
                break
        if math.isinf(edge):
            bounds.append(edge)
            continue
        lo, hi = sorted((ratio, ratio + direction * step))
        bounds.append(float(optimize.brentq(excess, lo, hi, xtol=1e-12 * max(1.0, abs(ratio)))))
    return ratio, (bounds[0], bounds[1])


def noise_sd(y: np.ndarray) -> float:
    """The noise sd of a piecewise-constant series from its median absolute first difference."""
    if y.size < 3:
        return 0.0
    return float(1.4826 * np.median(np.abs(np.diff(y))) / math.sqrt(2))


def locate(medians: np.ndarray) -> list[int]:
    """Indices of the first version after each change in the per-version medians."""
    import ruptures as rpt  # deferred: only lab history needs it

    n = int(medians.size)
    sd = noise_sd(medians)
    if n < 2 * MIN_SEGMENT or sd <= 0:
        return []
    algo = rpt.Pelt(model="l1", min_size=MIN_SEGMENT, jump=1).fit(medians)
    return [int(i) for i in algo.predict(pen=2 * sd * math.log(n))[:-1]]


def change_points(
    history: Sequence[tuple[str, Sequence[float]]], confidence: float = 0.95
) -> list[ChangePoint]:
    """The change points of a history (oldest version first), each with the ratio interval
    of its adjacent segments (see the module's text for the split)."""
    if not history:
        return []
    versions = [str(v) for v, _ in history]
    samples = [np.asarray(s, dtype=np.float64) for _, s in history]
    if any(s.size == 0 or not np.all(np.isfinite(s)) for s in samples):
        empty = next(
            v
            for v, s in zip(versions, samples, strict=True)
            if s.size == 0 or not np.all(np.isfinite(s))
        )
        raise UsageError(
            f"version {empty} has no usable samples (none, or not numbers)",
            hint="Leave that version out of the history, or measure it again",
        )
    split = all(s.size >= 2 for s in samples)
    locating = [s[0::2] for s in samples] if split else samples
    measuring = [s[1::2] for s in samples] if split else samples
    medians = np.array([float(np.median(s)) for s in locating])
    cuts = locate(medians)
    edges = [0, *cuts, len(versions)]
    out = []
    for k, cut in enumerate(cuts, start=1):
        before, after = (edges[k - 1], cut), (cut, edges[k + 1])
        b = np.concatenate(measuring[before[0] : before[1]])
        a = np.concatenate(measuring[after[0] : after[1]])
        ratio, ci = fieller_welch(a, b, confidence)
        out.append(ChangePoint(cut, versions[cut], before, after, int(b.size), int(a.size),
                               ratio, ci, check_confidence(confidence), not split))  # fmt: skip
    return out
