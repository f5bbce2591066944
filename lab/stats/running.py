"""A running mean and standard deviation in constant memory, for a run's progress line.

Welford's update: numerically stable, one value at a time, and nothing kept per value, so
a run of 20,000 iterations costs the controller no more memory than a run of 20.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class RunningMoments:
    """Count, mean and sample standard deviation of the values added so far."""

    count: int = 0
    mean: float = 0.0
    _squares: float = 0.0  # sum of squared deviations from the running mean

    def add(self, value: float) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self._squares += delta * (value - self.mean)

    @property
    def stdev(self) -> float:
        """The sample standard deviation (n - 1); NaN below two values."""
        if self.count < 2:
            return math.nan
        return math.sqrt(max(self._squares, 0.0) / (self.count - 1))
