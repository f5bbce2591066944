"""What an SQLite error from the store means, as one :class:`StoreError` naming the store.

Every ``sqlite3.Error`` that leaves a :class:`lab.store.Store` (its opening, a transaction,
a read inside ``with Store.open(...) as store``) passes through :func:`store_error`: a store
another process is writing (exit 8, with the processes that have it open), a damaged file, a
missing table, a read-only file or mount, a full disk (:mod:`lab.store.full`), or anything
else with SQLite's own words. Never a traceback.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

from lab.core.errors import StoreError
from lab.store.full import is_disk_full, store_full

BUSY_TIMEOUT = 30.0  # seconds a write waits for another writer's transaction to end


class StoreLockedError(StoreError):
    """Another process held the store's write lock for longer than the busy timeout."""

    exit_code = 8  # as RunLockedError: something else holds what this command needs

    def __init__(self, path: Path, waited: float, holders: list[tuple[int, str]]) -> None:
        self.path = path
        self.holders = holders
        who = (
            "; it is open in " + ", ".join(f"pid {pid} ({cmd})" for pid, cmd in holders)
            if holders
            else ""
        )
        super().__init__(
            f"another process held the write lock of the result store {path} for {waited:g} s{who}",
            hint="Wait for it to finish (or stop it), then run the same command again",
        )


def store_error(err: sqlite3.Error, path: Path, waited: float = BUSY_TIMEOUT) -> StoreError:
    """The :class:`StoreError` that ``err``, raised on the store at ``path``, means."""
    if is_disk_full(err, path):
        return store_full(path)
    code = (getattr(err, "sqlite_errorcode", None) or 0) & 0xFF
    text = str(err)
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "database is locked" in text:
        return StoreLockedError(path, waited, holders(path))
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or "malformed" in text:
        return StoreError(
            f"the result store {path} is damaged ({text})",
            hint="Run `lab store check` for SQLite's report; restore the store from a copy (the"
            " journals in the guests can refill it)",
        )
    missing = re.match(r"no such table: (?:main\.)?(\w+)", text)
    if missing:
        return StoreError(
            f"the store at {path} is missing table {missing.group(1)}: it is not a lab store"
            " or it is damaged",
            hint="Pass the path of a store made by lab (--db); `lab store check` says more",
        )
    if code == sqlite3.SQLITE_READONLY or "readonly" in text or "read-only" in text:
        return StoreError(
            f"the result store {path} is read-only ({text})",
            hint="Commands that only read (compare, runs, export, report) work on it; to write,"
            " make the file and its folder writable, or pass a copy with --db",
        )
    return StoreError(f"the result store {path}: {text}", hint="`lab store check` says more")


def holders(path: Path) -> list[tuple[int, str]]:
    """(pid, command line) of every other process with the store (or its WAL) open, as
    ``fuser`` finds them in /proc; empty where /proc says nothing."""
    targets = set()
    for name in (str(path), f"{path}-wal"):
        try:
            stat = os.stat(name)
        except OSError:
            continue
        targets.add((stat.st_dev, stat.st_ino))
    found = []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if not any(_is_target(f"/proc/{pid}/fd/{fd}", targets) for fd in fds):
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read(4096).rstrip(b"\0").split(b"\0")
        except OSError:  # gone, or not ours to look at
            continue
        command = " ".join(a.decode("utf-8", "replace") for a in argv)
        found.append((pid, re.sub(r"\s+", " ", command)[:120]))  # one line, whatever argv holds
    return found[:5]


def _is_target(fd: str, targets: set[tuple[int, int]]) -> bool:
    try:
        stat = os.stat(fd)
    except OSError:
        return False
    return (stat.st_dev, stat.st_ino) in targets
