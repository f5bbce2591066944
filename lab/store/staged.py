"""Samples whose iteration may be stored already, kept aside until their input ends, then
merged in key order.

``lab import`` stores an input's samples a batch at a time. A sample of an iteration the import
makes goes in with plain inserts (lab.importers.batch, lab.importers.made); one whose
iteration may have been stored before the import (numbered at or below the highest stored
then: a second import into a run, a file with gaps) must be merged
(:meth:`lab.store.bulk.Bulk.merge`), and so must a sample of several metrics or with a
successful attempt's fields (lab export's rows) out of the iterations' order. Merged a batch
at a time, such samples fell all over the store's indexes in every batch, and each batch
added its lines to the sources of the iterations it touched.

Here they are appended to a temporary table instead (one insert each, no lookup), and when the
input ends they are read back sorted by run, guest, iteration and line (SQLite's sorter, which
spills to a temporary file: memory stays bounded), and merged :data:`CHUNK` at a time, a chunk
ending between two iterations. Each iteration's samples then arrive together: its source is
written once, and the inserts walk each index in order. The line order within an iteration is
the file's, so the first of two values of one metric is still the one kept.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

CHUNK = 20_000  # samples merged at a time: the batch size of the import

_COLUMNS = (
    "run_id, guest_id, iteration, line, started, metric, value, attempt, ended, wall, user, sys,"
    " exit_status, source, boot, placement, cpus"
)
_CREATE = (
    f"CREATE TEMP TABLE IF NOT EXISTS staged({_COLUMNS})"  # no index: appended, then sorted once
)
_INSERT = f"INSERT INTO temp.staged({_COLUMNS}) VALUES ({', '.join('?' * 17)})"
_SORTED = f"SELECT {_COLUMNS} FROM temp.staged ORDER BY run_id, guest_id, iteration, line, rowid"
_NO_ATTEMPT = (None,) * 7
_NO_MARK = (None,) * 3


class Staged:
    """The temporary table of one bulk write: :meth:`add` items as a batch gives them,
    :meth:`chunks` gives them back sorted, and empties the table."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._made = False
        self.count = 0  # items added since the table was last emptied

    def add(self, items: Sequence[Any]) -> None:
        """Numbered items (lab.store.bulk.Numbered), one row per metric."""
        if not items:
            return
        if not self._made:
            self._conn.execute(_CREATE)
            self._conn.execute("DELETE FROM temp.staged")
            self._made = True
        rows = []
        for run, guest, number, line, started, metrics, attempt, mark in items:
            tail = (*(_NO_ATTEMPT if attempt is None else attempt),
                    *(_NO_MARK if mark is None else mark))  # fmt: skip
            for metric, value in metrics.items():
                rows.append((run, guest, number, line, started, metric, value, *tail))
        self._conn.executemany(_INSERT, rows)
        self.count += len(items)

    def chunks(self) -> Iterator[list[Any]]:
        """The items added, sorted by run, guest, iteration and line, about :data:`CHUNK` a
        list, never splitting an iteration's; the table is empty once they are all given."""
        if not self.count:
            return
        chunk: list[Any] = []
        item: tuple[Any, ...] | None = None
        cur = self._conn.execute(_SORTED)
        while rows := cur.fetchmany(4096):
            for row in rows:
                key = row[:4]
                if item is not None and item[:4] == key:  # another metric of the same line
                    item[5][row[5]] = row[6]
                    continue
                if item is not None:
                    if len(chunk) >= CHUNK and chunk[-1][:3] != item[:3]:
                        yield chunk
                        chunk = []
                    chunk.append(item)
                attempt = None if row[7] is None else row[7:14]
                mark = None if row[14] is None and row[15] is None else row[14:17]
                item = (*key, row[4], {row[5]: row[6]}, attempt, mark)
        if item is not None:
            chunk.append(item)
        if chunk:
            yield chunk
        self._conn.execute("DELETE FROM temp.staged")
        self.count = 0
