"""How many more boots per variant would settle an inconclusive verdict read on boot means.

``lab compare`` reads B against A from each arm's boot means (``lab.stats.boots``): Welch's
interval of the difference and the delta-method interval of the ratio, at Welch's degrees of
freedom, judged by ``lab.stats.verdict.decide``. When that verdict is inconclusive, the
interval is too wide for where it lies. Holding each arm's mean and standard deviation of its
boot means at what was observed, both intervals narrow as boots are added, and the verdict
settles once they fit beyond the threshold ("faster"/"slower") or within it ("equivalent").
The answer is the fewest boots added to each arm at which ``decide`` on those intervals says
so. It is an estimate: the next boots move the means and the sds, and an observed change that
lies at the threshold itself never settles (None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from lab.stats.difference import ratio_of_means_ci
from lab.stats.monotone import smallest_holding
from lab.stats.series import Direction
from lab.stats.verdict import Outcome, Threshold, decide

MAX_MORE = 100_000  # beyond this many more boots per variant, say that none settles it


@dataclass(frozen=True)
class ArmMeans:
    """What the verdict reads of one arm's boot means: their mean, sd and count."""

    mean: float
    sd: float
    boots: int

    @classmethod
    def of(cls, means: np.ndarray) -> ArmMeans:
        x = np.asarray(means, dtype=np.float64)
        return cls(float(x.mean()), float(x.std(ddof=1)), int(x.size))


def intervals(
    a: ArmMeans, b: ArmMeans, confidence: float
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(the percent interval of B/A − 1, Welch's interval of B − A), as ``lab.stats.boots.
    boot_difference`` reads them from boot means of these means, sds and counts."""
    var_a, var_b = a.sd**2 / a.boots, b.sd**2 / b.boots
    diff = b.mean - a.mean
    se = math.sqrt(var_a + var_b)
    if se == 0:
        diff_ci = (diff, diff)
    else:
        df = (var_a + var_b) ** 2 / (var_a**2 / (a.boots - 1) + var_b**2 / (b.boots - 1))
        half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
        diff_ci = (diff - half, diff + half)
    low, high = ratio_of_means_ci(a.mean, a.sd, a.boots, b.mean, b.sd, b.boots, confidence)
    return ((low - 1.0) * 100.0, (high - 1.0) * 100.0), diff_ci


def settles(
    a: ArmMeans,
    b: ArmMeans,
    more: int,
    direction: Direction,
    threshold: Threshold,
    confidence: float,
) -> bool:
    """Whether the verdict on ``more`` boots added to each arm, means and sds as observed,
    is decisive."""
    grown_a = ArmMeans(a.mean, a.sd, a.boots + more)
    grown_b = ArmMeans(b.mean, b.sd, b.boots + more)
    percent_ci, diff_ci = intervals(grown_a, grown_b, confidence)
    verdict = decide(percent_ci, direction, threshold, "A", "B", confidence, diff_ci, a.mean)
    return verdict.outcome != Outcome.INCONCLUSIVE


def boots_needed(
    a: np.ndarray,
    b: np.ndarray,
    direction: Direction,
    threshold: Threshold,
    confidence: float,
) -> int | None:
    """The fewest boots to add to each arm (whose boot means are ``a`` and ``b``) for the
    verdict to settle, holding their means and sds; None when no number up to
    :data:`MAX_MORE` does."""
    arm_a, arm_b = ArmMeans.of(a), ArmMeans.of(b)
    if arm_a.boots < 2 or arm_b.boots < 2:
        return None
    if not all(map(math.isfinite, (arm_a.mean, arm_b.mean, arm_a.sd, arm_b.sd))):
        return None

    def done(more: int) -> bool:
        return settles(arm_a, arm_b, more, direction, threshold, confidence)

    return smallest_holding(done, start=1, floor=1, cap=MAX_MORE)  # done(0) is false
