"""A full disk under the result store: one error that says where, how much room is left, and
what to do.

SQLite reports a write that found no room as ``SQLITE_FULL`` ("database or disk is full"):
when the filesystem returns ENOSPC and also when the file reached its ``max_page_count``.
The store's transactions turn it (and an ``OSError`` with ENOSPC) into :class:`StoreFull`
after rolling the transaction back, so the file holds whole batches only and a run that
stopped on it resumes, from the journals, once there is room again.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

from lab.core.errors import StoreError

NEARLY_FULL = 1024 * 1024  # bytes: an I/O error with less room than this is taken as "full"


class StoreFull(StoreError):
    """The filesystem holding the store had no room for a write; the write was rolled back."""

    exit_code = 7

    def __init__(self, path: Path, free_bytes: int | None) -> None:
        self.path = path
        self.free_bytes = free_bytes
        room = "unknown" if free_bytes is None else format_bytes(free_bytes)
        super().__init__(
            f"no space left for the result store {path} ({room} free on its filesystem);"
            " the write in progress was rolled back, so the store holds whole iterations only",
            hint="Free space there, then run the same command again (e.g. the same `lab run`):"
            " it resumes where it stopped, and nothing already stored is lost",
        )


def is_disk_full(err: BaseException, path: Path | None = None) -> bool:
    """True for SQLITE_FULL and ENOSPC; also for an SQLite I/O error on a full filesystem.

    ``path`` is the store: an I/O error (``SQLITE_IOERR_*``, e.g. an fsync that found no
    room) counts as full only when that filesystem has less than NEARLY_FULL bytes free.
    The errors ``err`` was raised from or while handling count too: a ROLLBACK that fails
    because SQLite had already rolled back on SQLITE_FULL hides the SQLITE_FULL that way.
    """
    seen: BaseException | None = err
    for _ in range(8):
        if seen is None:
            return False
        if _is_full(seen, path):
            return True
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    return False


def _is_full(err: BaseException, path: Path | None) -> bool:
    if isinstance(err, OSError):
        return err.errno == errno.ENOSPC
    if not isinstance(err, sqlite3.Error):
        return False
    code = getattr(err, "sqlite_errorcode", None)  # Python 3.11+; the extended code
    if code is None:
        return "database or disk is full" in str(err)
    if code & 0xFF == sqlite3.SQLITE_FULL:
        return True
    if code & 0xFF == sqlite3.SQLITE_IOERR and path is not None:
        free = free_bytes(path)
        return free is not None and free < NEARLY_FULL
    return False


def free_bytes(path: Path) -> int | None:
    """Bytes free on the filesystem holding ``path`` (or its folder); None if unknown."""
    for place in (path, path.parent):
        try:
            return shutil.disk_usage(place).free
        except OSError:
            continue
    return None


def store_full(path: Path) -> StoreFull:
    """The :class:`StoreFull` for the store at ``path``, with the room left there now."""
    return StoreFull(path, free_bytes(path))


def format_bytes(count: int) -> str:
    """4190208 -> '4.0 MiB'; 0 -> '0 B'."""
    if count < 1024:
        return f"{count} B"
    value, unit = count / 1024, "KiB"
    for bigger in ("MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"
