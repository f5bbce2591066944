"""While the alternate and sync schedules wait for an iteration, the controller reads the
runner's journal and does not start a Python in the guest to ask the runner how it is
(``Controller.busy``): that took about a second of the guest's CPU under emulation, beside
the command being measured. A runner silent for STATUS_EVERY s is still asked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from lab.core.clock import ManualClock
from lab.core.hostexec import Result
from lab.run.schedules import STATUS_EVERY
from tests.unit.fakeguest import NAMES, FakeRunnerGuest, make_controller


class AskedGuest(FakeRunnerGuest):
    """Counts the runner's status commands, at the moment of the test's clock; its runner
    can die without a word at its first start."""

    def __init__(self, name: str, clock: ManualClock, dies_at_first_start: bool = False) -> None:
        super().__init__(name, per_read=1)
        self.clock, self.dies = clock, dies_at_first_start
        self.asked: list[float] = []

    def run(
        self, argv: Sequence[str], *, check: bool = True, timeout: float | None = None,
        sudo: bool = False,
    ) -> Result:  # fmt: skip
        args = list(argv)
        if args[0] == "python3" and args[2:3] == ["status"]:
            self.asked.append(self.clock.monotonic())
            assert len(self.asked) < 100, "the runner is asked over and over"
        result = super().run(args, check=check, timeout=timeout, sudo=sudo)
        if args[0] == "python3" and args[2:3] == ["start"] and self.dies:
            self.dies, self.running, self.todo = False, False, []  # killed, nothing written
            self.per_read = 0
        elif args[0] == "python3" and args[2:3] == ["start"]:
            self.per_read = 1
        return result


@pytest.mark.parametrize("schedule", ["alternate", "sync"])
def test_a_runner_at_its_iteration_is_asked_only_before_it_starts(
    tmp_path: Path, schedule: str
) -> None:
    clock = ManualClock()
    guests = {name: AskedGuest(name, clock) for name in NAMES}
    controller, store = make_controller(tmp_path, guests, 6, schedule=schedule, clock=clock,
                                        poll_interval=1.0)  # fmt: skip
    controller.run()
    for guest in guests.values():
        assert guest.starts == 6
        assert len(guest.asked) == 6  # whether one runs, before each start; none while it ran
    store.close()


def test_a_runner_silent_for_the_status_interval_is_asked_and_started_again(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    guests = {name: AskedGuest(name, clock, dies_at_first_start=(name == NAMES[0]))
              for name in NAMES}  # fmt: skip
    controller, store = make_controller(tmp_path, guests, 2, schedule="sync", clock=clock,
                                        poll_interval=1.0)  # fmt: skip
    controller.run()
    dead = guests[NAMES[0]]
    # asked before its first start; then, its journal silent, once STATUS_EVERY s had
    # passed (it no longer ran); then before each of its next two starts
    waited = [t - dead.asked[0] for t in dead.asked]
    assert len(waited) == 4 and waited[1] == pytest.approx(STATUS_EVERY, abs=1.0), waited
    assert dead.starts == 3
    assert [len(g.asked) for g in guests.values()][1] == 2  # the other: before its starts
    store.close()
