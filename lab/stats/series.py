"""What the statistics receive: one metric's samples from one guest, and which way is better.

The store reads these (:meth:`lab.store.Store.values`); the statistics take them as they
are, so nothing in :mod:`lab.stats` needs the store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Direction = Literal["lower", "higher"]


@dataclass(frozen=True, eq=False)
class Series:
    """Every sample of one metric from one guest, ordered by iteration."""

    study: str
    workload: str
    metric: str
    unit: str
    direction: Direction
    variant: str
    guest: str
    host: str
    iterations: np.ndarray
    values: np.ndarray

    @property
    def label(self) -> str:
        """The variant, qualified by guest and host only when those are not the defaults."""
        if self.host != "local":
            return f"{self.variant} ({self.guest}@{self.host})"
        return self.variant


def unique_labels(group: Sequence[Series]) -> list[str]:
    """Each series' :attr:`Series.label`, with the guest added where that label is not unique
    in ``group``: two guests of one variant on the local host are both just the variant, and
    the arms, pairs and tables keyed by label would merge them."""
    count = Counter(s.label for s in group)
    return [s.label if count[s.label] == 1 else f"{s.variant} ({s.guest})" for s in group]


SeriesKey = tuple[str, str, str, str, str, str]  # study, workload, metric, variant, host, guest


def series_key(series: Series) -> SeriesKey:
    """What tells one series of :meth:`Reads.values` from another."""
    return (series.study, series.workload, series.metric, series.variant, series.host,
            series.guest)  # fmt: skip
