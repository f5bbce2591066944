"""A deleted run stays deleted, and a new store is not filled from old journals unasked.

Seen on the real pair: after `lab runs delete KEY --yes`, the same `lab run` "stored 4
iterations" in 3 s, the deleted samples with their old timestamps, read back from the guests'
journals; the same with a new, empty store. Now a journal is a store's run's only if that
run claimed it: another's is retired (renamed in the guest) and the run starts over, or with
--adopt its iterations are taken up; one line says which, with their count and dates.

The guests are tests/unit/fakeguest.py's, with files (the owner, a retired journal) and
``mv``; each start of their runner moves its clock on, so a sample says which start made it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.cli import build_parser
from lab.commands import run as run_command
from lab.core.hostexec import Result
from lab.core.units import format_timestamp
from lab.run.controller import Controller
from lab.store import Store
from tests.unit.fakeguest import NAMES, FakeRunnerGuest, make_controller

N = 4
LATER = 1.0e6  # seconds each runner start moves the guest's clock on


class FileGuest(FakeRunnerGuest):
    """A fake guest that keeps the files written to it and renames its journal. Like SFTP
    as GuestShell uses it, a journal read keeps a handle open, which goes on reading the
    file it opened, renamed or not, until it is forgotten."""

    def __init__(self, name: str) -> None:
        super().__init__(name, per_read=N)
        self.files: dict[str, bytes] = {}
        self.has_journal = False
        self.handle: bytes | None = None  # what an open journal handle reads, once renamed
        self.opened = False

    def _line(self, record: dict[str, Any]) -> None:
        for field in ("started", "ended", "time"):
            if field in record:
                record[field] += LATER * self.starts
        super()._line(record)

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        timeout: float | None = None,
        sudo: bool = False,
    ) -> Result:
        args = list(argv)
        if args[:3] == ["mv", "-n", "-T"] and args[3].endswith(".journal"):
            self.files[args[4]] = bytes(self.journal)
            self.handle = bytes(self.journal) if self.opened else None
            self.journal, self.written, self.synced_at = bytearray(), 0, 0
            self.has_journal = False
            return Result(tuple(args), 0, "", "")
        if args[0] == "python3" and args[2] == "start":
            self.has_journal = True
        return super().run(argv, check=check, timeout=timeout, sudo=sudo)

    def read_bytes(self, remote: str, offset: int, size: int) -> bytes | None:
        if remote.endswith(".journal"):
            if self.handle is not None:
                return self.handle[offset : offset + size]
            self.opened = self.opened or self.has_journal
            return super().read_bytes(remote, offset, size) if self.has_journal else None
        if remote in self.files:
            return self.files[remote][offset : offset + size]
        if remote.endswith(".pyz"):  # the runner's zipapp: there, whole
            return bytes(size)
        return None if remote.endswith(".owner") else b""

    def put_bytes(self, data: bytes, remote: str) -> None:
        self.files[remote] = data

    def forget(self, remote: str) -> None:
        if remote.endswith(".journal"):
            self.handle, self.opened = None, False

    def retired(self) -> list[str]:
        return [path for path in self.files if ".retired-" in path]


def lab_run(
    folder: Path, guests: dict[str, FileGuest], adopt: bool = False
) -> tuple[Controller, Store, list[str]]:
    """`lab run probe --n N` with the store in ``folder``; returns what it noted too."""
    folder.mkdir(exist_ok=True)
    controller, store = make_controller(folder, guests, N)
    controller.plan.adopt = adopt
    notes: list[str] = []
    controller.ctx.note = notes.append  # type: ignore[method-assign]
    controller.run()
    return controller, store, notes


def started(db: Path) -> dict[str, list[float]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT g.name, i.started FROM iteration i JOIN guest g ON g.id = i.guest_id"
            " WHERE i.ok = 1 ORDER BY g.name, i.iteration"
        ).fetchall()
    found: dict[str, list[float]] = {}
    for name, when in rows:
        found.setdefault(name, []).append(when)
    return found


def pair() -> dict[str, FileGuest]:
    return {name: FileGuest(name) for name in NAMES}


def test_a_deleted_run_is_run_again_not_read_back_from_the_guests(tmp_path: Path) -> None:
    guests = pair()
    first, store, notes = lab_run(tmp_path, guests)
    assert notes == []  # a run's own journal, nothing to say
    before = started(tmp_path / "lab.db")
    store.delete_run(first.run_id)
    store.close()
    again, store, notes = lab_run(tmp_path, guests)
    after = started(tmp_path / "lab.db")
    for name, guest in guests.items():
        assert guest.starts == 2  # its runner did the iterations again
        assert len(after[name]) == N and min(after[name]) > max(before[name])
        assert len(guest.retired()) == 1
        said = [n for n in notes if name in n]
        assert len(said) == 1
        assert said[0].startswith(f"retired {N} iterations of run {again.key} found in {name}'s")
        first = format_timestamp(min(before[name]))  # ISO 8601, as every text output
        assert f"journal ({first} to " in said[0]  # the old samples' dates
        assert said[0].endswith("pass --adopt to take them up instead")
        assert guest.retired()[0] in said[0]
    store.close()


def test_a_new_store_does_not_take_up_what_the_guests_did_for_another(tmp_path: Path) -> None:
    guests = pair()
    _, store, _ = lab_run(tmp_path / "a", guests)
    store.close()
    _, store, notes = lab_run(tmp_path / "b", guests)
    assert [g.starts for g in guests.values()] == [2, 2]
    assert len(notes) == 2 and all(n.startswith(f"retired {N} iterations") for n in notes)
    assert min(min(v) for v in started(tmp_path / "b" / "lab.db").values()) > 1.0e9 + LATER
    store.close()


def test_adopt_takes_them_up_and_says_so(tmp_path: Path) -> None:
    guests = pair()
    first, store, _ = lab_run(tmp_path, guests)
    before = started(tmp_path / "lab.db")
    store.delete_run(first.run_id)
    store.close()
    again, store, notes = lab_run(tmp_path, guests, adopt=True)
    assert started(tmp_path / "lab.db") == before  # the old samples, as --adopt asks
    assert [g.starts for g in guests.values()] == [1, 1] and not guests[NAMES[0]].retired()
    assert len(notes) == 2
    assert notes[0].startswith(f"took up {N} iterations of run {again.key} found in")
    assert notes[0].endswith("which this store's run did not start; as --adopt asks")
    store.close()


def test_the_same_run_resumed_in_its_store_keeps_its_journal(tmp_path: Path) -> None:
    guests = pair()
    _, store, _ = lab_run(tmp_path, guests)
    store.close()
    _, store, notes = lab_run(tmp_path, guests)
    assert notes == [] and [g.starts for g in guests.values()] == [1, 1]
    assert not any(g.retired() for g in guests.values())
    store.close()


def test_a_journal_from_before_owners_is_its_store_runs_own_and_no_other_stores(
    tmp_path: Path,
) -> None:
    guests = pair()
    _, store, _ = lab_run(tmp_path / "a", guests)
    store.close()
    for guest in guests.values():  # as a lab of before this change left it
        guest.files = {p: d for p, d in guest.files.items() if not p.endswith(".owner")}
    _, store, notes = lab_run(tmp_path / "a", guests)
    assert notes == [] and [g.starts for g in guests.values()] == [1, 1]
    store.close()
    for guest in guests.values():
        guest.files = {p: d for p, d in guest.files.items() if not p.endswith(".owner")}
    _, store, notes = lab_run(tmp_path / "b", guests)
    assert len(notes) == 2 and [g.starts for g in guests.values()] == [2, 2]
    store.close()


def test_a_journal_that_cannot_be_renamed_is_never_taken_up(tmp_path: Path) -> None:
    class Stuck(FileGuest):
        def run(self, argv: Sequence[str], **kwargs: Any) -> Result:
            if list(argv)[:1] == ["mv"]:  # "succeeds", but the journal stays (mv -n)
                return Result(tuple(argv), 0, "", "")
            return super().run(argv, **kwargs)

    guests: dict[str, FileGuest] = {NAMES[0]: FileGuest(NAMES[0]), NAMES[1]: Stuck(NAMES[1])}
    first, store, _ = lab_run(tmp_path, guests)
    store.delete_run(first.run_id)
    store.close()
    controller, store = make_controller(tmp_path, guests, N)
    errors: list[str] = []
    controller.ctx.warn = errors.append  # type: ignore[method-assign]
    controller._trouble = lambda guest, what: errors.append(what)  # type: ignore[method-assign]
    controller.begin()
    assert any("could not rename /fake/runner/" in e for e in errors)
    assert not controller.guests[1].claimed and not controller.guests[1].completed
    store.close()


def test_adopt_is_asked_for_on_the_command_line() -> None:
    args = build_parser().parse_args(["run", "null", "--n", "3", "--adopt"])
    assert run_command.request(args).adopt is True
    args = build_parser().parse_args(["run", "null", "--n", "3"])
    assert run_command.request(args).adopt is False
