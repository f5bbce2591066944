"""The concurrent schedule asks a runner how it is only when its journal has gone quiet.

Asking is a command in the guest (a Python start: under emulation about a second of the
guest's CPU), so a runner whose attempts keep coming is not asked; one silent for
STATUS_EVERY seconds is, as is one whose journal says it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lab.core.clock import ManualClock
from lab.run.schedules import STATUS_EVERY, concurrent


@dataclass(eq=False)
class FakeGuest:
    completed: set[int] = field(default_factory=set)
    check_runner: bool = True
    heard_at: float = 0.0


@dataclass
class FakeDriver:
    """Each look (one per poll_interval) brings ``per_look(look)`` attempts to each guest."""

    per_look: Callable[[int], int]
    upto: int = 200
    poll_interval: float = 1.0
    clock: ManualClock = field(default_factory=ManualClock)
    guests: Sequence[FakeGuest] = field(default_factory=lambda: [FakeGuest(), FakeGuest()])
    asked: list[tuple[int, float]] = field(default_factory=list)  # (guest, when)
    looks: int = 0

    def missing(self, guest: FakeGuest) -> list[int]:
        return [i for i in range(1, self.upto + 1) if i not in guest.completed]

    def with_guest(self, guest: FakeGuest, action: Callable[[FakeGuest], Any]) -> Any:
        return action(guest)

    def ensure_running(self, guest: FakeGuest, first: int = 0, last: int = 0) -> bool:
        guest.check_runner = False
        self.asked.append((self.guests.index(guest), self.clock.monotonic()))
        return True

    def ingest(self, guest: FakeGuest) -> int:
        if guest is self.guests[0]:
            self.looks += 1
        new = self.per_look(self.looks)
        done = len(guest.completed)
        guest.completed.update(range(done + 1, min(done + new, self.upto) + 1))
        if new:  # as the controller's ingest does when the journal grew
            guest.heard_at = self.clock.monotonic()
        return new

    def sample_backing(self, guests: Sequence[FakeGuest]) -> None:
        pass

    def updated(self) -> None:
        pass

    def stopped_by_rule(self) -> bool:
        return False


def test_a_runner_whose_attempts_keep_coming_is_asked_once() -> None:
    driver = FakeDriver(per_look=lambda look: 2)  # 100 s of short iterations
    concurrent(driver)  # type: ignore[arg-type]
    assert [guest for guest, _ in driver.asked] == [0, 1]  # at the start only


def test_a_quiet_runner_is_asked_every_status_interval() -> None:
    # a first attempt, then silence for 100 s (a killed runner, or a long iteration)
    driver = FakeDriver(per_look=lambda look: 1 if look == 1 or look > 100 else 0, upto=20)
    start = driver.clock.monotonic()
    concurrent(driver)  # type: ignore[arg-type]
    times = [when - start for guest, when in driver.asked if guest == 0]
    assert times == [0.0, 1.0 + STATUS_EVERY, 1.0 + 2 * STATUS_EVERY, 1.0 + 3 * STATUS_EVERY]


def test_a_runner_whose_journal_says_it_stopped_is_asked_at_the_next_pass() -> None:
    driver = FakeDriver(per_look=lambda look: 2, upto=40)

    def ingest(guest: FakeGuest, real: Callable[[FakeGuest], int] = driver.ingest) -> int:
        if guest is driver.guests[1] and driver.looks == 5:
            guest.check_runner = True  # a "stopped" line came
        return real(guest)

    driver.ingest = ingest  # type: ignore[method-assign]
    concurrent(driver)  # type: ignore[arg-type]
    assert [guest for guest, _ in driver.asked] == [0, 1, 1]
