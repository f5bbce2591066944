"""The journal's durability rule (lab/inguest/journalfile.py), with the real runner's zipapp.

A guest crash is simulated by cutting the journal back to a ``synced`` line, which is what
the guest's disk is known to hold, and by writing the previous start's boot id as another
boot's. The real guest crashes (``virsh reset``, a destroyed guest) are in
tests/integration/test_faults.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.inguest.journal import (
    JOURNAL_VERSION,
    SYNCED,
    JournalEntry,
    JournalEvent,
    durable_length,
    encode,
    read_journal,
)
from lab.inguest.journalfile import GROUP_S
from lab.run.ingest import split_journal
from tests.unit.test_runner import BOOT_ID, GuestDir, copied_guest

OTHER_BOOT = "00000000-1111-2222-3333-444444444444"


@pytest.fixture(name="guest")
def guest_fixture(tmp_path: Path) -> Iterator[GuestDir]:
    yield from copied_guest(tmp_path)


def kinds(records: list[JournalEntry | JournalEvent]) -> list[str]:
    return [r.event if isinstance(r, JournalEvent) else "result" for r in records]


def test_short_iterations_share_one_fsync_per_group(guest: GuestDir) -> None:
    guest.start("many", end_iteration=200)
    guest.finish("many")
    records = guest.all_records("many")
    results = [r for r in records if isinstance(r, JournalEntry)]
    assert len(results) == 200 and all(r.ok for r in results)
    seconds = max(r.ended or 0 for r in results) - min(r.started for r in results)
    synced = kinds(records).count(SYNCED)
    # one on open, after start, after done, and one per GROUP_S of iterations at most
    assert synced <= 3 + seconds / GROUP_S + 1, (synced, seconds)
    assert synced < 200 / 4, "the runner fsyncs (nearly) every attempt"
    assert kinds(records)[-2:] == ["done", SYNCED]  # the end is on disk and visible


def test_long_iterations_have_their_begin_on_disk_before_the_command_starts(
    guest: GuestDir,
) -> None:
    guest.start("long", end_iteration=3, argv=["sleep", str(GROUP_S + 0.2)])
    guest.finish("long")
    order = kinds(guest.all_records("long"))
    begins = [i for i, kind in enumerate(order) if kind == "begin"]
    assert len(begins) == 3
    # the first follows the start's fsync within GROUP_S; a crash during it is recorded
    # against it all the same (the first iteration without a result on disk)
    assert all(order[i + 1] == SYNCED for i in begins[1:]), order


def test_the_controller_reads_only_up_to_the_last_synced_line() -> None:
    result = encode({"iteration": 1, "attempt": 1, "ok": True, "started": 1.0, "ended": 2.0,
                     "wall": 1.0, "user": 0.0, "sys": 0.0, "exit_status": 0, "boot_id": "b",
                     "metrics": {}, "error": None, "output_tail": '"event":"synced"'})  # fmt: skip
    begin = encode({"event": "begin", "time": 1.0, "iteration": 1, "attempt": 1})
    synced = encode({"event": SYNCED, "time": 2.0})
    journal = begin + synced + result + begin
    assert durable_length(journal) == len(begin)  # a synced line inside a string is not one
    assert durable_length(journal + synced + b'{"v":1,"ev') == len(journal)
    assert durable_length(result + begin) == 0
    records, used = split_journal(journal + synced, "lab-thp")
    assert used == len(journal) and kinds(records) == ["begin", SYNCED, "result", "begin"]


def test_a_guest_crash_that_took_the_begin_line_is_still_counted(guest: GuestDir) -> None:
    """The journal as a crash leaves it: iterations 1-2 on disk, the lines of 3 (and of any
    later ones) lost, the start made in another boot, no ``done``."""
    guest.dir.mkdir(parents=True)
    spec = {"workload": "test", "argv": ["true"], "start_iteration": 1, "end_iteration": 5,
            "attempt_base": 1, "setup_argv": None}  # fmt: skip
    lines = [encode({"event": "start", "time": 10.0, "boot_id": OTHER_BOOT, "spec": spec})]
    for i in (1, 2):
        lines += [
            encode({"event": "begin", "time": 10.0 + i, "iteration": i, "attempt": 1,
                    "boot_id": OTHER_BOOT}),
            encode({"iteration": i, "attempt": 1, "ok": True, "started": 10.0 + i,
                    "ended": 10.5 + i, "wall": 0.5, "user": 0.0, "sys": 0.0, "exit_status": 0,
                    "boot_id": OTHER_BOOT, "metrics": {}, "error": None, "output_tail": ""}),
        ]  # fmt: skip
    lines.append(encode({"event": SYNCED, "time": 13.0}))
    (guest.dir / "crash.journal").write_bytes(b"".join(lines))
    guest.start("crash", end_iteration=5)
    guest.finish("crash")
    entries = guest.entries("crash")
    lost = entries[2]
    assert (lost.key, lost.ok, lost.boot_id) == ((3, 1), False, OTHER_BOOT)
    assert lost.error is not None and "the guest restarted during this run" in lost.error
    assert [(e.key, e.ok) for e in entries[3:]] == [((3, 2), True), ((4, 1), True), ((5, 1), True)]


def test_a_crash_during_the_setup_command_counts_no_attempt(guest: GuestDir) -> None:
    guest.dir.mkdir(parents=True)
    spec = {"workload": "test", "argv": ["true"], "start_iteration": 1, "end_iteration": 2,
            "attempt_base": 1, "setup_argv": ["mount", "nfs"]}  # fmt: skip
    start = encode({"event": "start", "time": 10.0, "boot_id": OTHER_BOOT, "spec": spec})
    (guest.dir / "setup.journal").write_bytes(start + encode({"event": SYNCED, "time": 10.0}))
    guest.start("setup", end_iteration=2)
    guest.finish("setup")
    assert [(e.key, e.ok) for e in guest.entries("setup")] == [((1, 1), True), ((2, 1), True)]


def test_a_killed_runners_lines_survive_and_its_attempt_is_interrupted(
    guest: GuestDir,
) -> None:
    """What SIGKILL leaves: every line written, a begin without its result, no synced line
    after it. The next start makes them durable, visible, and records the attempt."""
    guest.dir.mkdir(parents=True)
    begin = {"event": "begin", "time": 10.0, "iteration": 1, "attempt": 1, "boot_id": BOOT_ID}
    (guest.dir / "killed.journal").write_bytes(encode(begin) + b'{"v":1,"iter')
    guest.start("killed", end_iteration=1)
    guest.finish("killed")
    first, second = guest.entries("killed")
    assert (
        first.key == (1, 1)
        and first.error == "interrupted: the runner was killed during this attempt"
    )
    assert second.key == (1, 2) and second.ok
    raw = (guest.dir / "killed.journal").read_bytes()
    assert b'{"v":1,"iter\n' not in raw and b'"iter{' not in raw  # the partial line was cut
    assert durable_length(raw) == len(raw) - len(raw.splitlines(keepends=True)[-1])


def test_a_damaged_line_is_cut_with_everything_after_it(guest: GuestDir) -> None:
    guest.dir.mkdir(parents=True)
    good = encode({"event": "start", "time": 1.0, "boot_id": BOOT_ID,
                   "spec": {"start_iteration": 1, "end_iteration": 1}})  # fmt: skip
    (guest.dir / "zeros.journal").write_bytes(good + b"\0" * 40 + b"\n" + good)
    guest.start("zeros", end_iteration=1)
    # the start returns once the runner holds its lock, maybe before it repaired the journal
    deadline = time.monotonic() + 30
    while b"\0" in (guest.dir / "zeros.journal").read_bytes():
        assert time.monotonic() < deadline, "the runner did not cut the damaged line"
        time.sleep(0.01)
    guest.finish("zeros")
    text = (guest.dir / "zeros.journal").read_text()
    assert "\0" not in text
    records = read_journal(text)
    assert kinds(records).count("start") == 2 and [e.ok for e in guest.entries("zeros")] == [True]
    assert json.loads(text.splitlines()[0])["v"] == JOURNAL_VERSION
