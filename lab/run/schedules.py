"""How a run's iterations are laid out in time across its guests (``lab run --schedule``).

* ``concurrent``: every guest's runner runs its whole range at once, each at its own pace.
* ``alternate``: one guest at a time, iteration by iteration, as the reference study ran
  iperf3 (the twins never share the host's network or CPUs).
* ``sync``: iteration i starts on every guest at once, and i+1 only when all finished i.

A schedule only orders the work; the :class:`Driver` (the controller) does it. It runs the
iterations up to ``driver.upto``: the run's n, or, for a sweep that interleaves its values
(``lab.run.sweep``), the round it is at; iterations already done are never run again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Protocol

from lab.core.clock import Clock

SCHEDULES = ("concurrent", "alternate", "sync")
STATUS_EVERY = 30.0  # seconds without an attempt from a runner before it is asked how it is


class Guest(Protocol):
    """What a schedule sees of one guest's part of the run."""

    completed: set[int]
    check_runner: bool
    heard_at: float  # when its journal last grew, or its runner was started or asked


class Driver(Protocol):
    """What a schedule asks of the controller."""

    @property
    def guests(self) -> Sequence[Any]: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def upto(self) -> int: ...
    @property
    def poll_interval(self) -> float: ...

    def missing(self, guest: Any) -> list[int]: ...
    def with_guest(self, guest: Any, action: Callable[[Any], Any]) -> Any: ...
    def ensure_running(self, guest: Any, first: int = 0, last: int = 0) -> bool: ...
    def running(self, guest: Any) -> bool: ...
    def busy(self, guest: Any, iteration: int) -> bool: ...
    def start_one(self, iteration: int, guest: Any) -> bool: ...
    def ingest(self, guest: Any) -> int: ...
    def settle(self, guest: Any) -> None: ...
    def wait(self, guests: Sequence[Any], seconds: float) -> None: ...
    def check_failures(self, guest: Any) -> None: ...
    def before_iteration(self, iteration: int, guests: Sequence[Any]) -> None: ...
    def begin_counting(self, guests: Sequence[Any]) -> None: ...
    def end_counting(self, iteration: int, guests: Sequence[Any]) -> None: ...
    def sample_backing(self, guests: Sequence[Any]) -> None: ...
    def updated(self) -> None: ...
    def stopped_by_rule(self) -> bool: ...


def run_schedule(name: str, driver: Driver) -> None:
    if driver.stopped_by_rule():  # a resumed run that had already reached its rule
        return
    SCHEDULE_RUNS[name](driver)


def concurrent(driver: Driver) -> None:
    clock = driver.clock
    while True:
        pending = [g for g in driver.guests if driver.missing(g)]
        if not pending:
            return
        # A runner is asked how it is (a Python start in its guest: under emulation about a
        # second of the guest's CPU, 0.8 ms per iteration of a long run of `null` when it was
        # every STATUS_EVERY s) only when its journal says it stopped, when its guest came
        # back, or when its journal has not grown for STATUS_EVERY s (a runner killed without
        # a word, or a long iteration).
        now = clock.monotonic()
        for guest in pending:
            if guest.check_runner or now - guest.heard_at >= STATUS_EVERY:
                driver.with_guest(guest, driver.ensure_running)
                guest.heard_at = now
        clock.sleep(driver.poll_interval)
        for guest in driver.guests:
            driver.with_guest(guest, driver.ingest)  # notes when the journal grew
        driver.sample_backing(driver.guests)  # the host side, beside what the look found
        driver.updated()
        if driver.stopped_by_rule():
            return


def alternate(driver: Driver) -> None:
    """One guest at a time, iteration by iteration, each a step of the guest's runner."""
    clock, poll = driver.clock, driver.poll_interval
    for iteration in range(1, driver.upto + 1):
        for guest in driver.guests:
            while iteration not in guest.completed:
                driver.check_failures(guest)
                driver.begin_counting([guest])
                started = driver.with_guest(guest, partial(driver.start_one, iteration))
                busy = partial(driver.busy, iteration=iteration)
                while started and driver.with_guest(guest, busy):
                    driver.wait([guest], poll / 4)
                driver.with_guest(guest, driver.settle)
                driver.end_counting(iteration, [guest])
                if not started:
                    clock.sleep(poll)
            driver.updated()
        if driver.stopped_by_rule():
            return


def sync(driver: Driver) -> None:
    """The controller is the barrier: it has each guest's runner take one step (a line on
    the channel it holds to each: sent within microseconds of each other; a runner is
    started from one thread per guest, for the rest of the pass, where it has none), and
    waits for every answer. Pairs of samples then share their moment, so whatever disturbed
    the host disturbed both (lab compare --paired)."""
    clock, poll = driver.clock, driver.poll_interval
    for iteration in range(1, driver.upto + 1):
        while todo := [g for g in driver.guests if iteration not in g.completed]:
            for guest in todo:
                driver.check_failures(guest)
            driver.before_iteration(iteration, todo)  # no command runs: CPU sets may change
            driver.begin_counting(todo)
            start = partial(driver.start_one, iteration)
            if all(getattr(g, "channel", None) is not None for g in todo):
                started = [driver.with_guest(g, start) for g in todo]
            else:
                with ThreadPoolExecutor(max_workers=len(todo)) as pool:
                    started = list(pool.map(driver.with_guest, todo, [start] * len(todo)))
            busy = partial(driver.busy, iteration=iteration)
            while any(started) and any([driver.with_guest(g, busy) for g in todo]):
                driver.wait(todo, poll / 4)
            for guest in todo:
                driver.with_guest(guest, driver.settle)
            driver.end_counting(iteration, todo)
            if not any(started):
                clock.sleep(poll)
        driver.updated()
        if driver.stopped_by_rule():
            return


SCHEDULE_RUNS: dict[str, Callable[[Driver], None]] = {
    "concurrent": concurrent,
    "alternate": alternate,
    "sync": sync,
}
