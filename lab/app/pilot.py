"""What ``lab plan`` reads off a pilot's samples of one metric: its smallest arm, the SD the
arms share, and how much each iteration still remembers the one before."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lab.stats.diagnostics import lag1_autocorrelation


@dataclass(frozen=True)
class PilotSpread:
    n: int  # samples of the smallest arm
    sd: float  # the arms' pooled standard deviation
    r: float  # the largest lag-1 autocorrelation of an arm, 0 when none is positive


def pilot_spread(arms: Sequence[np.ndarray]) -> PilotSpread:
    """The spread of ``arms`` (each 2 samples or more): the pooled SD weighs each arm's
    variance by its n − 1 degrees of freedom."""
    n = np.array([a.size for a in arms])
    var = np.array([a.var(ddof=1) for a in arms])
    pooled_sd = float(np.sqrt(np.sum((n - 1) * var) / np.sum(n - 1)))
    r = max(0.0, max(lag1_autocorrelation(a) for a in arms))
    return PilotSpread(int(n.min()), pooled_sd, r)
