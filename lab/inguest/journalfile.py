"""The runner's journal file and its durability rule.

The rule, from what each kind of failure can take away:

* **The runner killed** (SIGKILL, a crash of Python): the kernel keeps every byte written.
  So every line is appended with ``write(2)`` before the runner starts a command: the
  ``begin`` line before the timed command, and the last attempt's result with it, in the same
  ``write(2)`` (under emulation, one more system call after each command cost a tenth of a
  millisecond and more). A runner killed between an attempt's end and that write (no command
  runs then; :meth:`JournalFile.flush` writes the result before a clean or setup command)
  loses that one result: the attempt, begun and never ended in the journal, is recorded as
  interrupted by the next start, and its iteration runs again.
* **The guest killed** (a reset, a panic, ``virsh destroy``): only what was fsynced is left.
  Lines reach the disk in groups (*group commit*): the runner fsyncs after an event other
  than ``begin`` (``start``, ``setup``, ``gave_up``, ``stopped``, ``done``) and after a
  ``begin`` line when the last fsync is :data:`GROUP_S` or more ago (or :data:`GROUP_BYTES`
  were written since). After an iteration longer
  than :data:`GROUP_S` the next one thus has its ``begin`` on disk before its command starts.
  A crash is recorded against the first attempt whose result did not reach the disk
  (:mod:`lab.inguest.history`): with iterations longer than :data:`GROUP_S` that is exactly
  the attempt that was running; shorter ones share one fsync per :data:`GROUP_S` and the
  attempt charged stands for those lost with it. Either way a crash is counted, never silent.
* **The controller must never store what a crash can take back.** After each fsync the runner
  appends a ``synced`` line: everything before it is on disk. The controller reads only up to
  the last ``synced`` line (:func:`lab.inguest.journal.durable_length`) and next reads from
  it: that line starts exactly where a crash would cut the journal, so its offset stays on a
  line boundary of whatever the journal becomes.

On open, a partial last line (cut by a crash) and anything after the first line that does not
parse are removed, and the whole file is fsynced: what a killed runner wrote becomes durable
and visible.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.inguest.journal import (
    SYNCED,
    JournalEntry,
    JournalError,
    JournalEvent,
    encode,
    parse_journal_line,
)

GROUP_S = 0.5  # the most time between a line's write and its fsync (and the controller's view)
GROUP_BYTES = 256 * 1024  # nor more bytes than this: the controller reads 1 MiB at a time


class JournalFile:
    """Append-only; a result written with the line after it, fsyncs grouped as the module
    says."""

    def __init__(
        self, path: Path, log: Callable[[str], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.log, self.clock = log, clock
        self.held = b""  # results not written yet: they go with the next line
        created = not path.exists()
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        if created:  # make the new directory entry durable too
            dirfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(dirfd)
            os.close(dirfd)
        self.records = self._read_and_repair(path)
        self.last_sync, self.unsynced = self.clock(), 0
        self.sync()

    def _read_and_repair(self, path: Path) -> list[JournalEntry | JournalEvent]:
        data = path.read_bytes()
        records: list[JournalEntry | JournalEvent] = []
        good = 0
        while good < len(data):
            end = data.find(b"\n", good) + 1
            if end == 0:
                self.log(f"cutting a partial last line of {len(data) - good} bytes from {path}")
                break
            try:
                record = parse_journal_line(data[good:end].decode(errors="replace"))
            except JournalError as err:
                self.log(f"cutting {len(data) - good} bytes from a damaged line on: {err}")
                break
            if record is not None:
                records.append(record)
            good = end
        if good != len(data):
            os.ftruncate(self.fd, good)
        return records

    def write(self, line: bytes) -> None:
        """``line`` appended, after the results held for it."""
        if self.held:
            line, self.held = self.held + line, b""
        self.unsynced += len(line)
        while line:
            line = line[os.write(self.fd, line) :]

    def flush(self) -> None:
        """The results held written now: before a command that has no ``begin`` line."""
        if self.held:
            self.write(b"")

    def sync(self) -> None:
        """Everything written is on disk; say so with a ``synced`` line."""
        os.fsync(self.fd)
        self.last_sync, self.unsynced = self.clock(), 0
        self.write(encode({"event": SYNCED, "time": time.time()}))

    def entry(self, entry: JournalEntry) -> None:
        """An attempt's result: written with the next line or :meth:`flush`, on disk with
        the next group."""
        self.held += entry.line()

    def event(self, name: str, **values: Any) -> None:
        """An event line; on disk before this returns, except ``begin`` within a group."""
        self.write(encode({"event": name, "time": time.time(), **values}))
        due = self.clock() - self.last_sync >= GROUP_S or self.unsynced >= GROUP_BYTES
        if name != "begin" or due:
            self.sync()
