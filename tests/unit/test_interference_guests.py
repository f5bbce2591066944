"""A running study whose guest vanishes ends in bounded time, says so once while it waits,
and holds one connection per guest at a time however often it retries.

Seen on the real pair: guests replaced under a run left it waiting silently for over 20
minutes. The guests here are tests/unit/fakeguest.py's, one of which stops answering (every
SSH call fails, as for a destroyed guest) after a few iterations; time is a ManualClock.
The proof on the real pair is tests/integration/test_interference.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import libvirt
import pytest

from lab.app.run import RunRequest, check_request, command_line
from lab.cli import build_parser
from lab.commands import run as run_command
from lab.core.clock import ManualClock
from lab.core.config import config_from_mapping
from lab.core.errors import ConfigError, GuestError, UsageError
from lab.core.hostexec import Result
from lab.run.controller import Controller, GuestLost
from lab.run.steps import LOOK_UP_EVERY
from tests.unit.fakeguest import NAMES, FakeChannel, FakeRunnerGuest, make_controller

DOMAIN = """<domain type='test'><name>{name}</name><memory>1024</memory>
<os><type>hvm</type></os></domain>"""


class VanishingGuest(FakeRunnerGuest):
    """Answers until ``vanish()``; then every call opens a connection (as GuestShell's
    first call does) and fails. Counts the connections open at once."""

    def __init__(self, name: str) -> None:
        super().__init__(name, per_read=2)
        self.gone = False
        self.vanish_at: int | None = 4  # journal reads before it vanishes (once)
        self.connected = False
        self.opened = self.most_open = self.failures = 0

    def vanish(self) -> None:
        self.gone = True

    def _call(self) -> None:
        if not self.connected:
            self.connected = True
            self.opened += 1
        self.most_open = max(self.most_open, int(self.connected))
        if self.gone:
            self.failures += 1
            raise GuestError(f"{self.name}: SSH to 198.18.0.7 failed: No route to host")

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        timeout: float | None = None,
        sudo: bool = False,
    ) -> Result:
        self._call()
        return super().run(argv, check=check, timeout=timeout, sudo=sudo)

    def open_channel(self, argv: Sequence[str]) -> FakeChannel:
        self._call()
        return super().open_channel(argv)

    def on_step(self) -> None:
        """A stepped runner's guest vanishes after as many steps as reads would have."""
        self._call()
        if self.vanish_at is not None and self.steps >= self.vanish_at:
            self.vanish_at = None
            self.vanish()

    def read_bytes(self, remote: str, offset: int, size: int) -> bytes | None:
        self._call()
        data = super().read_bytes(remote, offset, size)
        at = self.vanish_at
        if remote.endswith(".journal") and at is not None and self.reads >= at:
            self.vanish_at = None  # after a few iterations: destroyed mid-run
            self.vanish()
        return data

    def close(self) -> None:
        self.connected = False


def lost_run(tmp_path: Path, schedule: str) -> tuple[Controller, VanishingGuest, list[str]]:
    gone = VanishingGuest(NAMES[1])
    guests = {NAMES[0]: FakeRunnerGuest(NAMES[0], per_read=5), NAMES[1]: gone}
    controller, _ = make_controller(tmp_path, guests, 30, schedule=schedule)
    controller.ctx.clock = ManualClock()
    controller.plan.poll_interval = 1.0
    controller.plan.guest_timeout = 60.0
    controller.plan.resume = "`lab run probe --n 30`"
    warnings: list[str] = []
    controller.ctx.warn = warnings.append  # type: ignore[method-assign]
    return controller, gone, warnings


@pytest.mark.parametrize("schedule", ["concurrent", "alternate", "sync"])
def test_a_vanished_guest_stops_the_run_after_the_guest_timeout_with_status_4(
    tmp_path: Path, schedule: str
) -> None:
    controller, gone, warnings = lost_run(tmp_path, schedule)
    clock = controller.ctx.clock
    assert isinstance(clock, ManualClock)
    start = clock.t
    with pytest.raises(GuestLost) as caught:
        controller.run()
    waited = clock.t - start
    assert 60 <= waited < 80  # the timeout, and not much more
    assert caught.value.exit_code == 4
    message, hint = caught.value.message, caught.value.hint or ""
    assert message.startswith(f"{NAMES[1]} did not answer for 6")
    assert "(--guest-timeout 60)" in message and "No route to host" in message
    assert f"with {len(controller.guests[1].completed)} of 30 iterations stored" in message
    assert "resume with `lab run probe --n 30`" in hint
    said = [w for w in warnings if "unreachable" in w]
    assert said == [
        f"{NAMES[1]} unreachable, will retry for up to 60 s, then the run stops (status 4):"
        f" SSH fails: {NAMES[1]}: SSH to 198.18.0.7 failed: No route to host"
    ]  # once, not once per retry
    assert gone.failures > 10  # it kept trying...
    assert gone.most_open == 1  # ...over one connection at a time
    assert controller.guests[0].completed  # the other guest's iterations are stored


def test_a_guest_that_comes_back_in_time_does_not_stop_the_run(tmp_path: Path) -> None:
    controller, gone, warnings = lost_run(tmp_path, "concurrent")
    clock = controller.ctx.clock
    assert isinstance(clock, ManualClock)
    sleep = clock.sleep

    def sleep_then_return(seconds: float) -> None:
        sleep(seconds)
        if gone.gone and gone.failures >= 30:  # about 30 s of retries: back before 60
            gone.gone = False

    clock.sleep = sleep_then_return  # type: ignore[method-assign]
    controller.run()
    assert all(len(g.completed) == 30 for g in controller.guests)
    assert len([w for w in warnings if "unreachable, will retry" in w]) == 1


def test_ctrl_c_while_a_guest_is_lost_stays_ctrl_c(tmp_path: Path) -> None:
    """Stopping the runners (after Ctrl-C) retries a lost guest, but does not turn the
    interruption into a lost-guest error."""
    controller, gone, _ = lost_run(tmp_path, "concurrent")
    gone.vanish()
    controller.guests[1].lost_at = controller.clock.monotonic() - 3600
    controller.stop_runners()  # no GuestLost
    assert gone.failures == 2  # stop, then a last look at its journal: both refused


def test_why_a_guest_is_gone_is_read_from_libvirt(tmp_path: Path) -> None:
    controller, _, _ = lost_run(tmp_path, "concurrent")
    conn = libvirt.open("test:///default")
    controller.ctx.__dict__["libvirt"] = conn
    guest = controller.guests[1]
    err = GuestError("SSH failed")
    assert controller.why_lost(guest, err).startswith("its domain no longer exists")
    dom = conn.defineXML(DOMAIN.format(name=guest.record.name))
    try:
        guest.domain_uuid = dom.UUIDString()
        assert controller.why_lost(guest, err) == "its domain is not running (`lab status`)"
        dom.undefine()
        dom = conn.defineXML(DOMAIN.format(name=guest.record.name))  # a new one, same name
        assert controller.why_lost(guest, err) == (
            "it was replaced by another guest of the same name (a new `lab up`)"
        )
    finally:
        dom.undefine()


class HungChannel(FakeChannel):
    """A stepped runner's channel that takes lines and, once its guest hangs, answers none."""

    def send_line(self, line: str) -> None:
        assert isinstance(self.guest, HungGuest)
        if not self.guest.hung:
            super().send_line(line)


class HungGuest(FakeRunnerGuest):
    """Destroyed after a few steps without closing the connection (no reset ever comes, as
    on the real pair): its channel answers nothing, a request over the connection open when
    it went waits out its 60 s bound before it fails, and a new connection fails at once."""

    def __init__(self, name: str, clock: ManualClock) -> None:
        super().__init__(name, per_read=2)
        self.clock, self.hung, self.dead_connection, self.bounded = clock, False, False, 0

    def on_step(self) -> None:
        if not self.hung and self.steps >= 4:
            self.hung = self.dead_connection = True

    def _call(self) -> None:
        if not self.hung:
            return
        if self.dead_connection:
            self.bounded += 1
            self.clock.sleep(60)
        raise GuestError(f"{self.name}: SSH to 198.18.0.7 failed: No route to host")

    def run(
        self, argv: Sequence[str], *, check: bool = True, timeout: float | None = None,
        sudo: bool = False,
    ) -> Result:  # fmt: skip
        self._call()
        return super().run(argv, check=check, timeout=timeout, sudo=sudo)

    def open_channel(self, argv: Sequence[str]) -> FakeChannel:
        self._call()
        super().open_channel(argv)
        return HungChannel(self)

    def read_bytes(self, remote: str, offset: int, size: int) -> bytes | None:
        self._call()
        return super().read_bytes(remote, offset, size)

    def close(self) -> None:
        self.dead_connection = False


def test_a_silent_stepped_guest_whose_domain_is_gone_is_not_read_over_its_dead_connection(
    tmp_path: Path,
) -> None:
    """Silent mid-step: libvirt is asked every LOOK_UP_EVERY s. With the domain gone no
    answer can come, so the run stops then (status 4), instead of a journal read over the
    dead connection waiting out the request's 60 s bound, or the guest timeout after it."""
    clock = ManualClock()
    hung = HungGuest(NAMES[1], clock)
    guests = {NAMES[0]: FakeRunnerGuest(NAMES[0], per_read=5), NAMES[1]: hung}
    controller, _ = make_controller(
        tmp_path, guests, 30, schedule="sync", clock=clock, poll_interval=1.0
    )
    controller.ctx.__dict__["libvirt"] = libvirt.open("test:///default")  # no such domain
    controller.plan.guest_timeout = 20.0
    controller.wait = lambda _guests, seconds: clock.sleep(seconds)  # type: ignore[method-assign]
    warnings: list[str] = []
    controller.ctx.warn = warnings.append  # type: ignore[method-assign]
    start = clock.t
    with pytest.raises(GuestLost) as caught:
        controller.run()
    waited = clock.t - start
    assert hung.bounded == 0, "a request went over the dead connection"
    assert LOOK_UP_EVERY <= waited < LOOK_UP_EVERY + 5  # not STATUS_EVERY, nor a timeout
    assert caught.value.exit_code == 4
    assert caught.value.message.startswith(
        f"{NAMES[1]}: its domain no longer exists (destroyed and undefined: `lab down`, or virsh)"
    )
    assert [w for w in warnings if "unreachable" in w] == []  # no wait to announce


@pytest.mark.parametrize("schedule", ["concurrent", "alternate", "sync"])
def test_a_guest_whose_domain_is_gone_stops_the_run_at_once_with_status_4(
    tmp_path: Path, schedule: str
) -> None:
    # issue 39 §5: destroyed and undefined, it waited out the whole guest timeout (330 s on
    # the real pair); a guest that is only silent still gets the wait (the test above it)
    controller, gone, warnings = lost_run(tmp_path, schedule)
    controller.ctx.__dict__["libvirt"] = libvirt.open("test:///default")  # no such domain
    clock = controller.ctx.clock
    assert isinstance(clock, ManualClock)
    start = clock.t
    with pytest.raises(GuestLost) as caught:
        controller.run()
    assert clock.t - start < 10  # where the timeout is 60
    assert caught.value.exit_code == 4
    stored = len(controller.guests[1].completed)
    assert caught.value.message == (
        f"{NAMES[1]}: its domain no longer exists (destroyed and undefined: `lab down`, or"
        f" virsh); the run stopped with {stored} of 30 iterations stored for it"
    )
    assert "resume with `lab run probe --n 30`" in (caught.value.hint or "")
    assert [w for w in warnings if "unreachable" in w] == []
    assert gone.failures <= 2  # not retried


def test_the_guest_timeout_comes_from_lab_toml_or_the_command_line() -> None:
    assert config_from_mapping({}).guest_timeout == 300
    assert config_from_mapping({"guest_timeout": 45}).guest_timeout == 45
    with pytest.raises(ConfigError, match="guest_timeout"):
        config_from_mapping({"guest_timeout": 0})
    args = build_parser().parse_args(["run", "null", "--n", "3", "--guest-timeout", "20"])
    assert run_command.request(args).guest_timeout == 20.0
    with pytest.raises(UsageError, match="--guest-timeout must be above 0"):
        check_request(RunRequest("null", 3, guest_timeout=0))


def test_the_resume_command_holds_what_the_run_key_and_its_store_depend_on() -> None:
    request = RunRequest(
        "null", 5, schedule="alternate", until="verdict", swap_every=2, db="/r/x.db", study="s"
    )
    assert command_line(request) == [
        "lab", "run", "null", "--n", "5", "--study", "s", "--schedule", "alternate",
        "--until", "verdict", "--swap-every", "2", "--db", "/r/x.db",
    ]  # fmt: skip
    assert "--schedule" not in command_line(RunRequest("null", 5))  # sync, the default
