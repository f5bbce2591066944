"""Time, handed in: the real clock, or a manual one that tests advance themselves."""

from __future__ import annotations

import time
from dataclasses import dataclass


class Clock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> float:
        """Wall-clock seconds since the epoch."""
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass
class ManualClock(Clock):
    """A clock that only moves when slept on or advanced: waits in tests take no time."""

    t: float = 1_000_000.0

    def monotonic(self) -> float:
        return self.t

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds
