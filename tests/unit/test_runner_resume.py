"""Resuming after the runner is SIGKILLed: no iteration lost, none stored twice.

The rule under test: an attempt whose ``begin`` line has no result line was interrupted; the
next start records it as failed ("interrupted") and runs the iteration again with the next
attempt number. Iterations with an ok line are never run again.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.inguest.journal import JournalEntry, JournalEvent
from tests.unit.test_runner import BOOT_ID, GuestDir, copied_guest, running


@pytest.fixture(name="guest")
def guest_fixture(tmp_path: Path) -> Iterator[GuestDir]:
    yield from copied_guest(tmp_path)


def runner_pid(guest: GuestDir, key: str) -> int | None:
    """The pid of the runner holding the run key's lock, looked up in this process: without
    a CLI start-up, so the runner cannot finish between the look and the kill."""
    with open(guest.dir / f"{key}.pid", "rb") as stream:
        try:
            fcntl.flock(stream, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return int(stream.read())
    return None


def kill(guest: GuestDir, key: str) -> bool:
    """SIGKILL the runner of ``key`` if it still runs; True if it was killed."""
    pid = runner_pid(guest, key)
    if pid is None:
        return False
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while runner_pid(guest, key) is not None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return True


def assert_complete(entries: list[JournalEntry], n: int) -> None:
    """Iterations 1..n each have exactly one ok entry and no (iteration, attempt) repeats."""
    keys = Counter(e.key for e in entries)
    assert all(count == 1 for count in keys.values()), keys
    ok = Counter(e.iteration for e in entries if e.ok)
    assert sorted(ok) == list(range(1, n + 1))
    assert set(ok.values()) == {1}


def test_sigkill_during_an_attempt_then_restart(guest: GuestDir) -> None:
    # Attempt 1 of iteration 4 hangs (and says its pid), so the kill lands while it runs.
    child = guest.root / "child.pid"
    script = (
        f'if [ "$LAB_ITERATION.$LAB_ATTEMPT" = 4.1 ]; then echo $$ > {child}; exec sleep 60; fi'
    )
    spec = dict(end_iteration=8, argv=["sh", "-c", script], metrics_from={"wall_s": "wall_s"})
    guest.start("resume", **spec)
    guest.wait("resume", lambda rs: child.exists() and child.read_text().strip() != "")
    begin = guest.records("resume")[-1]
    assert isinstance(begin, JournalEvent) and (begin.event, begin.iteration) == ("begin", 4)
    assert kill(guest, "resume")
    orphan = int(child.read_text())
    assert running(orphan)  # SIGKILL does not reach the runner's command

    reply = guest.start("resume", **spec)
    assert reply["started"] is True
    guest.finish("resume")
    entries = guest.entries("resume")
    assert_complete(entries, 8)
    attempts = [e for e in entries if e.iteration == 4]
    assert [(e.attempt, e.ok) for e in attempts] == [(1, False), (2, True)]
    assert attempts[0].error == "interrupted: the runner was killed during this attempt"
    assert attempts[0].started == begin.time and attempts[0].boot_id == BOOT_ID
    assert all(e.attempt == 1 and e.ok for e in entries if e.iteration != 4)
    # The second start ended the orphan, recorded the interrupted attempt, then re-ran it.
    deadline = time.monotonic() + 5
    while running(orphan):
        assert time.monotonic() < deadline, "the killed runner's command still runs"
        time.sleep(0.02)
    records = guest.records("resume")
    second_start = [i for i, r in enumerate(records) if getattr(r, "event", "") == "start"][1]
    following = records[second_start + 1 : second_start + 3]
    assert following[0] == attempts[0]
    assert isinstance(following[1], JournalEvent) and following[1].event == "begin"
    assert (following[1].iteration, following[1].attempt) == (4, 2)


def test_repeated_kills_lose_and_duplicate_nothing(guest: GuestDir) -> None:
    spec = dict(end_iteration=30, argv=["sleep", "0.1"])
    for progress in (3, 7, 11, 15):  # kill whenever this many attempts are recorded
        guest.start("chaos", **spec)
        guest.wait("chaos", lambda _: len(guest.entries("chaos")) >= progress)  # noqa: B023
        assert kill(guest, "chaos")
    guest.start("chaos", **spec)
    guest.finish("chaos", timeout=60)
    entries = guest.entries("chaos")
    assert_complete(entries, 30)
    assert guest.events("chaos").count("start") == 5
    for failed in (e for e in entries if not e.ok):
        assert failed.error is not None and failed.error.startswith("interrupted:")
        again = [
            e for e in entries if e.iteration == failed.iteration and e.attempt > failed.attempt
        ]
        assert again, f"iteration {failed.iteration} was not run again"


def test_begin_from_an_earlier_boot_is_interrupted_by_a_restart(guest: GuestDir) -> None:
    guest.dir.mkdir()
    old_boot = "00000000-0000-0000-0000-000000000000"
    lines = [
        {"v": 1, "event": "start", "time": 100.0},
        {
            "v": 1,
            "event": "begin",
            "time": 101.5,
            "iteration": 1,
            "attempt": 3,
            "boot_id": old_boot,
        },
    ]
    (guest.dir / "reboot.journal").write_text("".join(json.dumps(x) + "\n" for x in lines))
    guest.start("reboot", end_iteration=2)
    guest.finish("reboot")
    entries = guest.entries("reboot")
    assert [(e.key, e.ok) for e in entries] == [((1, 3), False), ((1, 4), True), ((2, 1), True)]
    assert entries[0].error == "interrupted: the guest restarted during this attempt"
    assert (entries[0].boot_id, entries[0].started, entries[0].wall) == (old_boot, 101.5, None)


def test_a_restart_repeats_failed_iterations_with_the_next_attempt(guest: GuestDir) -> None:
    odd_fails = ["sh", "-c", "[ $((LAB_ITERATION % 2)) -eq 0 ]"]
    guest.start("retry", end_iteration=4, argv=odd_fails)
    guest.finish("retry")
    assert [(e.key, e.ok) for e in guest.entries("retry")] == [
        ((1, 1), False), ((2, 1), True), ((3, 1), False), ((4, 1), True),
    ]  # fmt: skip
    guest.start("retry", end_iteration=4, argv=["true"])
    guest.finish("retry")
    entries = guest.entries("retry")
    assert [(e.key, e.ok) for e in entries[4:]] == [((1, 2), True), ((3, 2), True)]
    assert_complete(entries, 4)


def test_attempt_base_raises_the_first_attempt_number(guest: GuestDir) -> None:
    guest.start("base", end_iteration=2, attempt_base=5)
    guest.finish("base")
    assert [e.key for e in guest.entries("base")] == [(1, 5), (2, 5)]


def test_a_partial_last_line_is_cut_before_appending(guest: GuestDir) -> None:
    guest.dir.mkdir()
    ok = {"v": 1, "iteration": 1, "attempt": 1, "ok": True, "started": 1.0, "ended": 2.0,
          "wall": 1.0, "user": 0.5, "sys": 0.1, "exit_status": 0, "boot_id": BOOT_ID,
          "metrics": {}, "error": None, "output_tail": ""}  # fmt: skip
    journal = guest.dir / "cut.journal"
    journal.write_text(json.dumps(ok) + '\n{"v":1,"iteration":2,"attem')
    guest.start("cut", end_iteration=2)
    guest.finish("cut")
    assert [e.key for e in guest.entries("cut")] == [(1, 1), (2, 1)]  # 1 is not run again
    lines = journal.read_text().splitlines()
    assert all(json.loads(line) for line in lines)  # the cut line is gone, not glued to the next
    assert "partial last line" in (guest.dir / "cut.log").read_text()


def test_all_done_already_means_done_at_once(guest: GuestDir) -> None:
    guest.start("twice", end_iteration=3)
    guest.finish("twice")
    guest.start("twice", end_iteration=3)
    records = guest.finish("twice")
    assert len(guest.entries("twice")) == 3
    assert guest.events("twice") == ["start", *["begin"] * 3, "done", "start", "done"]
    last = records[-1]
    assert isinstance(last, JournalEvent) and last.fields["ok"] == 0
