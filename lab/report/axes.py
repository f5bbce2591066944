"""What an axis of the report shows: the span of the changes in %, what lies beyond it, and
labels wrapped to the figure.

One absurd interval (retransmits from 0 to 1e9: a change of +1e11 %, an interval out to
1e16 %) used to set the axis alone, every other metric's change collapsing onto 0 under a
``1e16`` multiplier; and one wide one (−1,885 %) among changes of a few % hid the ±1 %
band and every other row. The span is the changes within :data:`GAP` times the typical one
(the lower median of their sizes, or the threshold); the intervals that reach no further
than three times that; what lies beyond is drawn at the axis's end as an arrowhead
labelled with its value.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

GAP = 10.0  # a change this many times the typical one is off the axis
REACH = 3.0  # interval ends within three times the changes' span are drawn whole
PAD = 0.08  # room beyond the span, for an arrowhead, in parts of the span


def change_bounds(
    points: Sequence[float], ends: Sequence[float], threshold: float = 0.0
) -> tuple[float, float]:
    """Where the change axis's drawn values end (in %): 0, ±threshold, the changes at most
    :data:`GAP` times the typical one (the lower median of their sizes, at least the
    threshold and 1 %: one far-out change of two is not typical), and the interval ends
    within :data:`REACH` times that span. A change or an end beyond is drawn at these
    bounds as an arrowhead."""
    sizes = sorted(abs(p) for p in points if math.isfinite(p))
    typical = sizes[(len(sizes) - 1) // 2] if sizes else 0.0
    kept = GAP * max(threshold, typical, 1.0)
    core = [p for p in points if math.isfinite(p) and abs(p) <= kept]
    low, high = min(*core, -threshold, 0.0), max(*core, threshold, 0.0)
    room = max(high - low, 2 * threshold, 1.0)
    reach = (low - REACH * room, high + REACH * room)
    drawn = [e for e in ends if math.isfinite(e) and reach[0] <= e <= reach[1]]
    return min([low, *drawn]), max([high, *drawn])


def limits(bounds: tuple[float, float]) -> tuple[float, float]:
    """The axis's limits: the bounds with room for an arrowhead at each end."""
    pad = PAD * (bounds[1] - bounds[0] or 1.0)
    return bounds[0] - pad, bounds[1] + pad


def percent_text(value: float) -> str:
    """A change in % as a label beside an arrowhead: '+3.79e16 %', '-5.15 %'."""
    return f"{value:+.3g}".replace("e+", "e") + " %"


def wrapped(label: str, chars: int) -> str:
    """``label`` in lines of at most ``chars`` characters (a long word cut), so that a long
    metric name or unit fits beside its axis instead of running off the figure."""
    if len(label) <= chars:
        return label
    return "\n".join(textwrap.wrap(label, max(8, chars), break_on_hyphens=False)) or label


def chars_for(inches: float, fontsize: float = 10.0) -> int:
    """About how many characters of DejaVu Sans at ``fontsize`` points fit in ``inches``."""
    return max(8, int(inches * 72 / (0.62 * fontsize)))
