"""The runner driven step by step (``runner step``), run for real as a local process from the
zipapp the controller ships, over a channel to its stdin and stdout (``ProcessChannel``):
what the paired schedules use instead of a runner started per iteration."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.guests.channel import ProcessChannel, wait_any
from lab.inguest.journal import JournalEntry, durable_length, parse_journal_line, read_journal
from tests.unit.test_runner import GuestDir, copied_guest, running


@pytest.fixture(name="guest")
def guest_fixture(tmp_path: Path) -> Iterator[GuestDir]:
    yield from copied_guest(tmp_path)


def stepper(guest: GuestDir, key: str, **spec: Any) -> ProcessChannel:
    path = guest.root / f"{key}.spec.json"
    values = {"workload": "test", "argv": ["true"], "end_iteration": 100, **spec}
    path.write_text(json.dumps(values))
    guest.started.add(key)
    argv = [sys.executable, "-I", "-S", str(guest.app), "step", "--dir", str(guest.dir),
            "--run-key", key, "--spec", str(path)]  # fmt: skip
    return ProcessChannel(argv)


def answer(channel: ProcessChannel, timeout: float = 30.0) -> dict[str, Any]:
    """The next line the runner says, as JSON."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = channel.lines()
        if found:
            assert len(found) == 1, found
            return dict(json.loads(found[0]))
        assert not channel.closed, "the runner ended"
        wait_any([channel], deadline - time.monotonic())
    raise AssertionError("no answer")


def test_each_step_runs_one_iteration_and_answers_with_its_journal_line(guest: GuestDir) -> None:
    channel = stepper(guest, "steps", metrics_from={"wall_s": "wall_s"})
    assert answer(channel)["ready"] is True
    answers = []
    for iteration in (3, 1, 2):  # the controller says which, in any order
        channel.send_line(f"go {iteration}")
        answers.append(answer(channel))
    lines = [parse_journal_line(json.dumps(a) + "\n") for a in answers]
    assert all(isinstance(e, JournalEntry) and e.ok for e in lines)
    assert [e.iteration for e in lines if isinstance(e, JournalEntry)] == [3, 1, 2]
    channel.send_line("go 1")  # done already: not run again
    assert answer(channel) == {"skipped": 1}
    channel.send_line("end")
    channel.close()
    entries = guest.entries("steps")
    assert [(e.iteration, e.attempt) for e in entries] == [(3, 1), (1, 1), (2, 1)]
    assert [e.line() for e in entries] == [e.line() for e in lines if isinstance(e, JournalEntry)]
    assert guest.events("steps")[-1] == "stopped" and not guest.status("steps")["running"]


def test_a_closed_channel_mid_step_finishes_the_iteration_then_the_runner_exits_and_resumes(
    guest: GuestDir,
) -> None:
    """The controller killed (its end of the channel gone) while a command is timed: the
    attempt ends and is journalled, the runner exits; the next stepper takes up from it."""
    channel = stepper(guest, "cut", argv=["sleep", "0.5"], metrics_from={"wall_s": "wall_s"})
    assert answer(channel)["ready"] is True
    channel.send_line("go 1")
    guest.wait("cut", lambda rs: any(getattr(r, "event", None) == "begin" for r in rs))
    pid = channel.proc.pid
    os.close(channel.stdin.fileno())  # no "end": the channel just goes
    channel.stdout.close()
    channel.proc.wait(timeout=30)
    assert not running(pid)
    entries = guest.entries("cut")
    assert [(e.iteration, e.attempt, e.ok) for e in entries] == [(1, 1, True)]
    assert entries[0].wall is not None and entries[0].wall >= 0.5
    again = stepper(guest, "cut", argv=["true"], metrics_from={"wall_s": "wall_s"})
    assert answer(again)["ready"] is True
    again.send_line("go 1")
    assert answer(again) == {"skipped": 1}
    again.send_line("go 2")
    assert answer(again)["iteration"] == 2
    again.close()


def test_a_killed_stepper_leaves_an_interrupted_attempt_that_the_next_one_records(
    guest: GuestDir,
) -> None:
    channel = stepper(guest, "kill", argv=["sleep", "30"], metrics_from={"wall_s": "wall_s"})
    assert answer(channel)["ready"] is True
    channel.send_line("go 1")
    guest.wait("kill", lambda rs: any(getattr(r, "event", None) == "begin" for r in rs))
    os.kill(channel.proc.pid, signal.SIGKILL)
    channel.proc.wait(timeout=30)
    # The controller sees the channel end, with nothing said. Not at once: killed while it
    # started the command, the runner leaves a child holding its stdout until the exec.
    deadline = time.monotonic() + 10
    while not channel.closed and time.monotonic() < deadline:
        assert channel.lines() == []
        wait_any([channel], 0.1)
    assert channel.closed
    again = stepper(guest, "kill", argv=["true"], metrics_from={"wall_s": "wall_s"})
    assert answer(again)["ready"] is True  # its start ended the orphaned sleep
    again.send_line("go 1")
    retried = answer(again)
    assert (retried["iteration"], retried["attempt"], retried["ok"]) == (1, 2, True)
    again.close()
    first = guest.entries("kill")[0]
    assert (first.attempt, first.ok) == (1, False) and "killed" in (first.error or "")


def test_a_second_stepper_of_a_busy_key_says_so_and_exits(guest: GuestDir) -> None:
    channel = stepper(guest, "busy")
    assert answer(channel)["ready"] is True
    other = stepper(guest, "busy")
    said = answer(other)
    assert said["busy"] is True and said["pid"] == channel.proc.pid
    assert other.proc.wait(timeout=30) == 0
    channel.close()


def test_sigterm_stops_the_command_being_timed(guest: GuestDir) -> None:
    channel = stepper(guest, "term", argv=["sleep", "30"], metrics_from={"wall_s": "wall_s"})
    assert answer(channel)["ready"] is True
    channel.send_line("go 1")
    guest.wait("term", lambda rs: any(getattr(r, "event", None) == "begin" for r in rs))
    assert guest.stop("term")["stopped"] is True
    stopped = answer(channel)
    assert stopped["ok"] is False and "stopped" in stopped["error"]
    channel.close()
    assert guest.events("term")[-1] == "stopped"


def test_an_attempt_a_restart_interrupted_is_durable_when_the_stepper_is_ready(
    guest: GuestDir,
) -> None:
    """The attempt a guest reset cut short is journalled as failed by the next start, and is
    behind a ``synced`` line by its ``ready``: the controller reads no further than the last
    one, and no answer carries this attempt. It was read nowhere when the run's last step
    followed (its run ended with the attempt missing from the store)."""
    guest.dir.mkdir()
    old_boot = "00000000-0000-0000-0000-000000000000"
    lines = [{"v": 1, "event": "start", "time": 100.0},
             {"v": 1, "event": "begin", "time": 101.5, "iteration": 2, "attempt": 1,
              "boot_id": old_boot}]  # fmt: skip
    journal = guest.dir / "reset.journal"
    journal.write_text("".join(json.dumps(x) + "\n" for x in lines))
    channel = stepper(guest, "reset")
    assert answer(channel)["ready"] is True
    data = journal.read_bytes()
    durable = read_journal(data[: durable_length(data)].decode())
    failed = [r for r in durable if isinstance(r, JournalEntry)]
    assert [(r.iteration, r.attempt, r.ok) for r in failed] == [(2, 1, False)]
    channel.send_line("end")
    channel.close()
