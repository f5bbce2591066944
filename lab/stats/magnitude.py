"""The magnitudes of samples the statistics compute exactly. Variances square the samples'
deviations, and Welch's degrees of freedom (scipy's) and the kurtosis square variances: with
samples near 1e100 those fourth powers overflowed (Welch's interval came out a hundred times
the means, the verdict inconclusive), near 1e300 the squares did (every mean read n/a), and
with samples that differ by less than 1e-100 they vanished (an sd of 0: intervals of no
width and a verdict as certain as it is wrong). Such samples are refused, saying so."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lab.core.errors import UsageError
from lab.stats.series import Series

LARGEST = 1e75  # a sample's size (and so a deviation's) whose fourth power is still finite
SMALLEST = 1e-75  # a spread whose fourth power is still a normal double


def refuse_inexact(series: Sequence[Series]) -> None:
    """Refuse series whose samples reach beyond :data:`LARGEST` or whose spread (maximum
    minus minimum) is nonzero and below :data:`SMALLEST`."""
    for s in series:
        if s.values.size == 0:
            continue
        unit = f" {s.unit}" if s.unit else ""
        low, high = float(np.min(s.values)), float(np.max(s.values))  # 2 ms a million
        largest, spread = max(-low, high), high - low
        if largest > LARGEST:
            said = f"reach {largest:.3g}{unit}, beyond {LARGEST:.0e}: their powers overflow"
        elif 0 < spread < SMALLEST:
            said = f"lie {spread:.3g}{unit} apart, below {SMALLEST:.0e}: their powers vanish"
        else:
            continue
        raise UsageError(
            f"{s.workload} · {s.metric}: {s.label}'s samples {said}, and no statistic of them"
            " would be right",
            hint="Store them in a unit that brings them nearer 1: lab export, scale the value"
            " column, and lab import the file into another store (--db)",
        )
