"""A runner that cannot work: a full guest disk stops the run at once, with what to do;
a runner that keeps dying without a word stops it after a few tries, quoting its log.

Fake guests here (the bookkeeping); the proof on a real guest whose disk is filled is
tests/integration/test_guest_disk_full.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from lab.core.clock import ManualClock
from lab.core.hostexec import Result
from lab.run.controller import MAX_TROUBLES, Controller, RunFailed
from lab.store import Store
from tests.unit.fakeguest import NAMES, FakeRunnerGuest, make_controller


class SickGuest(FakeRunnerGuest):
    """A guest whose runner dies at once (``dies``) or whose spec cannot be written
    (``spec_fails``), with ``free`` bytes available to the runner's folder."""

    def __init__(self, name: str, free: int, dies: bool = False, spec_fails: bool = False):
        super().__init__(name)
        self.free, self.dies, self.spec_fails = free, dies, spec_fails
        self.asked: list[tuple[str, ...]] = []

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        timeout: float | None = None,
        sudo: bool = False,
    ) -> Result:
        args = tuple(argv)
        self.asked.append(args)
        if args[0] == "df":
            return Result(args, 0, f"   Avail\n{self.free}\n", "")
        if args[0] == "tail":
            return Result(args, 0, "Traceback ...\nOSError: [Errno 28] No space left", "")
        if args[:2] == ("python3", "-c") and self.spec_fails:
            result = Result(args, 1, "", "OSError: [Errno 28] No space left on device")
            if check:
                from lab.core.errors import GuestCommandError

                raise GuestCommandError(f"{self.name}: spec write exited 1: {result.stderr}")
            return result
        result = super().run(argv, check=check, timeout=timeout, sudo=sudo)
        if self.dies and args[0] == "python3" and args[2] == "start":
            self.running = False  # gone before its first line, as on a full disk
        return result


def controller_for(tmp_path: Path, sick: SickGuest) -> tuple[Controller, Store]:
    guests = {NAMES[0]: FakeRunnerGuest(NAMES[0], per_read=50), NAMES[1]: sick}
    controller, store = make_controller(tmp_path, guests, 20)
    controller.ctx.clock = ManualClock()  # time moves as the controller sleeps
    controller.plan.poll_interval = 1.0
    return controller, store


def test_a_full_guest_disk_stops_the_run_and_says_what_to_do(tmp_path: Path) -> None:
    sick = SickGuest(NAMES[1], free=4096, dies=True)
    controller, store = controller_for(tmp_path, sick)
    with pytest.raises(RunFailed) as caught:
        controller.run()
    message = caught.value.message
    assert message.startswith(f"{NAMES[1]}: the guest's disk is full (4096 bytes free")
    assert "its runner ended without finishing; its log ends:" in message
    assert "No space left" in message
    assert "df -h" in (caught.value.hint or "") and "resume" in (caught.value.hint or "")
    assert sick.starts == 1  # started once, found dead once, then the run stopped
    healthy = controller.guests[0]
    assert store.completed_iterations(controller.run_id, healthy.guest_id)  # kept what it did


def test_a_spec_that_cannot_be_written_on_a_full_disk_is_not_taken_for_a_lost_guest(
    tmp_path: Path,
) -> None:
    sick = SickGuest(NAMES[1], free=0, spec_fails=True)
    controller, _ = controller_for(tmp_path, sick)
    with pytest.raises(RunFailed, match=r"disk is full \(0 bytes free.*No space left on device"):
        controller.run()
    assert not controller.guests[1].unreachable
    assert sick.starts == 0


def test_a_runner_that_keeps_dying_stops_the_run_after_a_few_tries(tmp_path: Path) -> None:
    sick = SickGuest(NAMES[1], free=10 * 1024**3, dies=True)
    controller, _ = controller_for(tmp_path, sick)
    warnings: list[str] = []
    controller.ctx.warn = warnings.append  # type: ignore[method-assign]
    with pytest.raises(RunFailed) as caught:
        controller.run()
    assert f"the runner failed {MAX_TROUBLES} times in a row" in caught.value.message
    assert "its log ends: Traceback" in caught.value.message
    assert sick.starts == MAX_TROUBLES
    assert len([w for w in warnings if "will try again" in w]) == MAX_TROUBLES - 1
    assert "cat /fake/runner/" in (caught.value.hint or "")


def test_troubles_are_forgiven_once_an_attempt_is_recorded(tmp_path: Path) -> None:
    class Flaky(SickGuest):
        """Each runner does 3 iterations, then dies without a word."""

        def advance(self, count: int) -> None:
            if self.running:
                done_before = len(self.todo)
                super().advance(min(count, 3))
                if self.todo and done_before - len(self.todo) >= 1:
                    self.running = False

    sick = Flaky(NAMES[1], free=10 * 1024**3)
    controller, store = controller_for(tmp_path, sick)
    controller.run()
    guest = controller.guests[1]
    assert len(store.completed_iterations(controller.run_id, guest.guest_id)) == 20
    assert sick.starts > MAX_TROUBLES  # more deaths than the limit, each after progress
    assert guest.troubles == 0
