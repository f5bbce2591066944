"""The alternate and sync schedules step a runner that stays up (``lab.inguest.stepper``):
one start per guest and pass, then a line per iteration, and no Python started in the guest
to ask a runner how it is (that took about a second of the guest's CPU under emulation,
beside the command being measured). A stepped runner killed without a word is started again
at once: its channel says it ended."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from lab.core.clock import ManualClock
from lab.core.hostexec import Result
from lab.run.schedules import STATUS_EVERY
from tests.unit.fakeguest import NAMES, FakeChannel, FakeRunnerGuest, make_controller


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
        return super().run(args, check=check, timeout=timeout, sudo=sudo)

    def open_channel(self, argv: Sequence[str]) -> FakeChannel:
        channel = super().open_channel(argv)
        if self.dies:  # killed at once, without a word
            self.dies, self.running = False, False
        return channel


@pytest.mark.parametrize("schedule", ["alternate", "sync"])
def test_a_stepped_runner_is_started_once_and_never_asked(tmp_path: Path, schedule: str) -> None:
    clock = ManualClock()
    guests = {name: AskedGuest(name, clock) for name in NAMES}
    controller, store = make_controller(tmp_path, guests, 6, schedule=schedule, clock=clock,
                                        poll_interval=1.0)  # fmt: skip
    t0 = clock.monotonic()
    controller.run()
    for guest in guests.values():
        assert (guest.starts, guest.steps, guest.asked) == (1, 6, [])
        assert not guest.running  # told to end with the run
    assert store.completed_iterations(controller.run_id, controller.guests[0].guest_id) == set(
        range(1, 7)
    )
    assert clock.monotonic() - t0 < STATUS_EVERY  # nothing waited for a status interval
    store.close()


def test_a_stepped_runner_killed_without_a_word_is_started_again_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = ManualClock()
    guests = {name: AskedGuest(name, clock, dies_at_first_start=(name == NAMES[0]))
              for name in NAMES}  # fmt: skip
    controller, store = make_controller(tmp_path, guests, 2, schedule="sync", clock=clock,
                                        poll_interval=1.0)  # fmt: skip
    t0 = clock.monotonic()
    controller.run()
    dead, other = guests[NAMES[0]], guests[NAMES[1]]
    assert (dead.starts, dead.steps) == (2, 2)  # the step sent to the dead one failed
    assert (other.starts, other.steps, dead.asked, other.asked) == (1, 2, [], [])
    assert clock.monotonic() - t0 < STATUS_EVERY
    assert "its runner ended without finishing" in capsys.readouterr().err
    store.close()
