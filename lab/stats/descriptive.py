"""The reference study's table: mean, samples, standard deviation, min, max and margin of error.

The study's margin of error is the normal-theory half-width ``z(1-α/2)·s/√n`` at a
99.99 % confidence level; with its own n, means and standard deviations this gives its
published 0.24 / 0.23 s (sysbench), 0.03 / 0.03 Gbit/s (iperf3) and 0.36 / 0.36 s (GDB).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from lab.core.errors import UsageError


def check_confidence(confidence: float) -> float:
    """A confidence level as a fraction; accepts 0.9999 or 99.99 (percent)."""
    # rounded so that 99.99 % is exactly 0.9999, not 0.9998999999999999
    level = round(confidence / 100, 12) if confidence > 1 else confidence
    if not 0 < level < 1:
        raise UsageError(
            f"confidence level {confidence} is not between 0 and 100 %",
            hint="Give it in percent, e.g. --confidence 99.99",
        )
    return level


def z_value(confidence: float) -> float:
    """The two-sided standard normal quantile z(1-α/2) for a confidence level (fraction)."""
    return float(stats.norm.ppf(0.5 + check_confidence(confidence) / 2))


def margin_of_error(sd: float, n: float, confidence: float) -> float:
    """``z(1-α/2)·sd/√n``: the half-width of the normal confidence interval of a mean."""
    if n < 1:
        return math.nan
    return z_value(confidence) * sd / math.sqrt(n)


@dataclass(frozen=True)
class Summary:
    """One variant's column of the study's table, plus the median."""

    n: int
    mean: float
    sd: float
    min: float
    max: float
    median: float
    confidence: float
    margin: float

    @property
    def ci(self) -> tuple[float, float]:
        return (self.mean - self.margin, self.mean + self.margin)


def summarize(values: np.ndarray, confidence: float) -> Summary:
    """The study's statistics of one sample; the sd is the sample sd (n-1 denominator)."""
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        raise UsageError("no samples to summarize", hint="Check the --workload and --study names")
    sd = float(np.std(x, ddof=1)) if n > 1 else math.nan
    level = check_confidence(confidence)
    return Summary(
        n=n,
        mean=float(np.mean(x)),
        sd=sd,
        min=float(np.min(x)),
        max=float(np.max(x)),
        median=float(np.median(x)),
        confidence=level,
        margin=margin_of_error(sd, n, level),
    )
