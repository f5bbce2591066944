"""Samples written by the million inside one transaction: what ``lab import`` stores.

:meth:`Store.record` checks each batch against its run and guest and leaves an attempt already
stored as it was, which costs lookups for every row. Here the caller numbers the iterations
and says which it knows to be new (numbered above every iteration stored or written so far):
those go in with plain inserts. The others are looked up by number, a batch at a time, and
merged:

- an iteration this bulk write made takes the new samples, and their lines join its source
  (``path:3,4``); a metric it has already is a clash, returned to the caller to report;
- an iteration stored before is left as it was: a value it has is kept, a metric it lacks is
  added (as :meth:`Store.record` does), and it is counted once as kept.

Iterations that this bulk write made are told by their rowid: above the largest there was
when it began, since SQLite gives a new row the largest rowid plus one, and the transaction
(BEGIN IMMEDIATE) keeps every other writer out until it ends.

A successful attempt's row is made with what the caller read of it (``lab export``'s rows
with ``ok`` 1: its number, end, times, exit status and source), else as attempt 1 with only
its start. Failed attempts (rows with ``ok`` 0) go in as they were, with
:meth:`Bulk.insert_failed`, once their input's samples are in: a successful attempt 1 that
this bulk write made of an iteration that failed first (the file did not number it) is
renumbered after its failed attempts, as ``lab run`` numbers them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import Any

from lab.store.staged import Staged

Key = tuple[int, int, int]  # run id, guest id, iteration
# what an iteration ran in, as `lab export` writes it: its boot, its CPU placement ("own" or
# "swapped") and that placement's host CPUs; each may be None
Mark = tuple[str | None, str | None, str | None]
# (attempt, ended, wall, user, sys, exit status, source): a successful attempt's fields, as
# lab export's row of one of its samples gives them (lab.importers.records.Attempt)
AttemptFields = tuple[
    int, float | None, float | None, float | None, float | None, int | None, str | None
]
ATTEMPT_WIDTH = 9  # an iteration with them: its number, start, then these seven
# (run id, guest id, iteration, line, started, metrics, attempt, mark): one sample as read,
# numbered
Numbered = tuple[
    int, int, int, int, float | None, dict[str, float], AttemptFields | None, Mark | None
]
# (iteration, attempt, started, ended, wall, user, sys, exit status, boot id, output tail,
# source, placement, cpus): one failed attempt, as the iteration table holds it
FailedRow = tuple[
    int, int, float | None, float | None, float | None, float | None, float | None,
    int | None, str | None, str | None, str | None, str | None, str | None,
]  # fmt: skip


@dataclass
class Merged:
    """What :meth:`Bulk.merge` did: iterations made per (run id, guest id), iterations stored
    before that the batch touched (each counted once per bulk write), and the lines of
    samples refused as a second value of a metric, with why."""

    made: dict[tuple[int, int], int] = field(default_factory=dict)
    kept: int = 0
    clashes: list[tuple[int, str]] = field(default_factory=list)


ROWS = 2_048  # rows per INSERT: 10,240 parameters at most, under SQLite's limit of 32,766
_ITERATIONS = (
    "INSERT INTO iteration(run_id, guest_id, iteration, started, source, attempt, ok) VALUES"
)
_SAMPLES = "INSERT INTO sample(run_id, guest_id, iteration, metric, value) VALUES"
# How a row of an INSERT reads its parameters: ?1, ?2 ... are those the rows share, {0}, {1}
# ... a row's own (numbered on after them).
_ITERATION = _ITERATIONS + " ({0}, {1}, {2}, {3}, {4}, 1, 1)"
_UNTIMED = _ITERATIONS + " (?1, ?2, {0}, NULL, {1}, 1, 1)"
_TIMED = _ITERATIONS + " (?1, ?2, {0}, {1}, {2}, 1, 1)"
_ATTEMPTS = (
    "INSERT INTO iteration(run_id, guest_id, iteration, started, attempt, ended, wall, user, sys,"
    " exit_status, source, ok) VALUES"
)
_ATTEMPTED = _ATTEMPTS + " (?1, ?2, {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, 1)"
_ANY_ATTEMPTED = _ATTEMPTS + " ({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, 1)"
_SAMPLE = _SAMPLES + " ({0}, {1}, {2}, {3}, {4})"
_METRIC_SAMPLE = _SAMPLES + " (?1, ?2, {0}, ?3, {1})"


@lru_cache(maxsize=128)  # a dozen row counts of each shape (_statements)
def _statement(shape: str, shared: int, width: int, rows: int) -> str:
    """The INSERT of ``rows`` rows of ``shape`` (made once: it is a few thousand of them)."""
    insert, _, row = shape.partition(" (")
    row = "(" + row
    first = shared + 1
    values = (row.format(*(f"?{first + r * width + i}" for i in range(width))) for r in range(rows))
    return f"{insert} {', '.join(values)}"


# samples of one guest whose metrics vary: a second value of a metric is left out, not an error
_LATE_SAMPLE = (
    "INSERT OR IGNORE INTO sample(run_id, guest_id, iteration, metric, value) VALUES"
    " (?1, ?2, {0}, {1}, {2})"
)


def _statements(rows: int) -> Iterator[tuple[int, int]]:
    """(first row, rows) of each INSERT of ``rows`` rows: ROWS at most, a power of two each.
    A dozen statements of each shape, where one of every batch's own length was prepared
    anew for each batch (and SQLite's statement cache held a hundred of them)."""
    start = 0
    while start < rows:
        count = min(ROWS, 1 << (rows - start).bit_length() - 1)
        yield start, count
        start += count


# The stored iterations among a batch's keys, given as a JSON array of [run, guest, iteration]:
# one statement looks them all up (each an index seek), where one per key costs a round trip.
# Each attempt of an iteration is a row: its successful one comes last (ok 1), and counts.
# The seek is by the primary key, named: SQLite's planner, knowing nothing of json_each's rows,
# took the covering index iteration_boot instead, which seeks (run, guest) only and scanned
# every attempt of the guest for each key (an import grouped by metric grew with the square of
# its rows: 100,000 rows in 141 s).
_FIND = (
    "SELECT i.run_id, i.guest_id, i.iteration, i.rowid FROM json_each(?1) AS j"
    " JOIN iteration AS i INDEXED BY sqlite_autoindex_iteration_1 ON i.run_id = j.value ->> 0"
    " AND i.guest_id = j.value ->> 1 AND i.iteration = j.value ->> 2 ORDER BY i.ok"
)
# The stored samples among a batch's (run, guest, iteration, metric): one seek each, where
# reading every metric of each iteration grew with the square of an iteration's metrics.
_METRICS = (
    "SELECT s.run_id, s.guest_id, s.iteration, s.metric FROM json_each(?1) AS j"
    " JOIN sample AS s INDEXED BY sqlite_autoindex_sample_1 ON s.run_id = j.value ->> 0"
    " AND s.guest_id = j.value ->> 1 AND s.iteration = j.value ->> 2 AND s.metric = j.value ->> 3"
)


class Bulk:
    """Inserts and merges inside a transaction that the store holds open (``Store.bulk()``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._mark = int(
            conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM iteration").fetchone()[0]
        )
        self._kept_table = False
        self.staged = Staged(conn)

    def imported_lines(self, run_id: int, guest_id: int, source: str) -> bytearray | None:
        """The lines of ``source`` that the run's guest holds samples of, as a bitmap (bit n
        of byte n // 8 is line n); None when there are none. A bitmap is an eighth of a byte
        a line, where a set of numbers is some 60 bytes."""
        prefix = source + ":"
        bits: bytearray | None = None
        cur = self._conn.execute(
            "SELECT source FROM iteration WHERE run_id=? AND guest_id=? AND source >= ?"
            " AND source < ?",
            (run_id, guest_id, prefix, source + ";"),  # ";" sorts right after ":"
        )
        for (text,) in cur:
            path, _, numbers = text.rpartition(":")
            if path != source:
                continue
            for number in numbers.split(","):
                if not number.isdigit():
                    continue
                line = int(number)
                if bits is None:
                    bits = bytearray()
                if line >> 3 >= len(bits):
                    bits.extend(bytes((line >> 3) + 1 - len(bits)))
                bits[line >> 3] |= 1 << (line & 7)
        return bits

    def insert(
        self,
        iterations: Sequence[tuple[int, int, int, float | None, str]],
        samples: Sequence[tuple[int, int, int, str, float]],
    ) -> None:
        """Iterations not stored yet, as (run id, guest id, iteration, started, source), and
        their samples, as (run id, guest id, iteration, metric, value)."""
        self._insert(_ITERATION, [], list(chain.from_iterable(iterations)), 5)
        self._insert(_SAMPLE, [], list(chain.from_iterable(samples)), 5)

    def insert_iterations(
        self, run_id: int, guest_id: int, rows: list[Any], timed: bool = False, width: int = 2
    ) -> None:
        """:meth:`insert`'s iterations of one run's guest, as a caller that makes them by the
        million keeps them: no tuple a row, and what rows share given once. ``rows`` holds
        (iteration, source) of each, one field after the other; (iteration, started, source)
        when ``timed`` (or ``width`` is 3); (iteration, started, *AttemptFields) when
        ``width`` is ``ATTEMPT_WIDTH``. Binding fewer parameters (two a row where it was
        five) takes a fifth less of SQLite's time."""
        width = 3 if timed else width
        shape = {2: _UNTIMED, 3: _TIMED, ATTEMPT_WIDTH: _ATTEMPTED}[width]
        self._insert(shape, [run_id, guest_id], rows, width)

    def insert_samples(self, run_id: int, guest_id: int, metric: str, rows: list[Any]) -> None:
        """:meth:`insert`'s samples of one metric of one run's guest: (iteration, value) of
        each, one field after the other."""
        self._insert(_METRIC_SAMPLE, [run_id, guest_id, metric], rows, 2)

    def insert_late(self, run_id: int, guest_id: int, rows: list[Any]) -> list[int]:
        """Samples of one run's guest whose iterations this bulk write made: ``rows`` holds
        (iteration, metric, value) of each, one field after the other, in the order they
        are to be taken. Returns which (by their place in it) were not inserted: a sample of
        an iteration's metric that the store holds already, or that an earlier row gave.

        Each statement inserts up to ROWS rows, and counts what it inserted; only one that
        inserted fewer (a second value: rare) is undone and its rows inserted one by one, so
        that each refused row is known."""
        refused: list[int] = []
        conn, width = self._conn, 3
        for start, count in _statements(len(rows) // width):
            chunk = rows[start * width : (start + count) * width]
            before = conn.total_changes
            conn.execute("SAVEPOINT late")
            conn.execute(_statement(_LATE_SAMPLE, 2, width, count), [run_id, guest_id, *chunk])
            if conn.total_changes - before != count:
                conn.execute("ROLLBACK TO late")
                one = _statement(_LATE_SAMPLE, 2, width, 1)
                for at in range(count):
                    before = conn.total_changes
                    conn.execute(one, [run_id, guest_id, *chunk[at * width : (at + 1) * width]])
                    if conn.total_changes == before:
                        refused.append(start + at)
            conn.execute("RELEASE late")
        return refused

    def join_lines(self, updates: Iterable[tuple[str, int, int, int]]) -> None:
        """Lines to add to the sources of iterations this bulk write made: (",3,9", run id,
        guest id, iteration) each, in key order."""
        self._conn.executemany(
            "UPDATE iteration INDEXED BY sqlite_autoindex_iteration_1 SET source = source || ?"
            " WHERE run_id = ? AND guest_id = ? AND iteration = ? AND ok = 1",
            updates,
        )

    def set_marks(self, run_id: int, guest_id: int, marks: list[Any]) -> None:
        """What iterations of one run's guest ran in, once they are inserted: ``marks`` holds
        (iteration, (boot, placement, cpus)) of each, one field after the other, in the
        order they were read. Iterations that follow each other with one mark are set by one
        statement for their range (a boot or a placement spans many iterations, so it is a
        few statements, not one a row)."""
        spans: list[tuple[Mark, int, int]] = []
        for number, mark in zip(marks[::2], marks[1::2], strict=True):
            if spans and spans[-1][0] == mark and spans[-1][2] == number - 1:
                spans[-1] = (mark, spans[-1][1], number)
            else:
                spans.append((mark, number, number))
        # an iteration inserted here has one attempt, its successful one (numbered or not)
        where = " WHERE run_id=? AND guest_id=? AND iteration BETWEEN ? AND ? AND ok=1"
        self._conn.executemany(
            "UPDATE iteration SET boot_id=?" + where,
            [(m[0], run_id, guest_id, a, b) for m, a, b in spans if m[0] is not None],
        )
        self._conn.executemany(
            "INSERT OR REPLACE INTO placement(run_id, guest_id, iteration, label, cpus)"
            " SELECT run_id, guest_id, iteration, ?, ? FROM iteration" + where,
            [(m[1], m[2], run_id, guest_id, a, b) for m, a, b in spans if m[1] is not None],
        )

    def insert_failed(self, run_id: int, guest_id: int, attempts: Sequence[FailedRow]) -> int:
        """Failed attempts of one run's guest, each with its own number and fields; returns
        how many were new (an attempt already stored is left as it was). A successful
        attempt 1 that this bulk write made of an iteration whose attempt 1 failed becomes
        the attempt after its last failed one; the placement of an iteration that has none
        is the one its failed attempt gives."""
        last: dict[int, int] = {}
        for row in attempts:
            last[row[0]] = max(last.get(row[0], 0), row[1])
        first = {row[0] for row in attempts if row[1] == 1}
        self._conn.executemany(
            "UPDATE OR IGNORE iteration SET attempt = ? WHERE run_id = ? AND guest_id = ?"
            " AND iteration = ? AND attempt = 1 AND ok = 1 AND rowid > ?",
            [(last[n] + 1, run_id, guest_id, n, self._mark) for n in sorted(first)],
        )
        before = self._conn.total_changes
        self._conn.executemany(
            "INSERT OR IGNORE INTO iteration(run_id, guest_id, iteration, attempt, ok, started,"
            " ended, wall, user, sys, exit_status, boot_id, output_tail, source)"
            " VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(run_id, guest_id, *row[:11]) for row in attempts],
        )
        new = self._conn.total_changes - before
        self._conn.executemany(
            "INSERT OR IGNORE INTO placement(run_id, guest_id, iteration, label, cpus)"
            " VALUES (?, ?, ?, ?, ?)",
            [(run_id, guest_id, row[0], *row[11:]) for row in attempts if row[11] is not None],
        )
        return new

    def add_design(self, study: str, design: Mapping[str, Any]) -> bool:
        """Study ``study``'s design (lab.store.designs), unless it has one already; False
        when there is no such study."""
        row = self._conn.execute("SELECT id FROM study WHERE name=?", (study,)).fetchone()
        if row is None:
            return False
        self._conn.execute(
            "INSERT OR IGNORE INTO study_design(study_id, design, recorded) VALUES (?, ?, ?)",
            (row[0], json.dumps(dict(design)), time.time()),
        )
        return True

    def add_environment(
        self, run_key: str, scope: str, name: str, facts: str, recorded: float | None
    ) -> bool:
        """A host's or guest's facts (JSON text) at a start of run ``run_key``, unless the
        run holds the same line already; False when there is no such run."""
        row = self._conn.execute("SELECT id FROM run WHERE key=?", (run_key,)).fetchone()
        if row is None:
            return False
        self._conn.execute(
            "INSERT INTO environment(run_id, scope, name, facts, recorded)"
            " SELECT ?1, ?2, ?3, ?4, ?5 WHERE NOT EXISTS (SELECT 1 FROM environment"
            " WHERE run_id=?1 AND scope=?2 AND name=?3 AND facts=?4 AND recorded IS ?5)",
            (row[0], scope, name, facts, recorded),
        )
        return True

    def _insert(self, shape: str, shared: list[Any], params: list[Any], width: int) -> None:
        """``INSERT ... VALUES (...), (...), ...`` of up to ROWS rows each: measured here, a
        third less CPU time per row than ``executemany``, which binds and steps each row on
        its own."""
        for start, count in _statements(len(params) // width):
            chunk = params[start * width : (start + count) * width]
            sql = _statement(shape, len(shared), width, count)
            self._conn.execute(sql, shared + chunk if shared else chunk)

    def merge(self, source: str, items: Sequence[Numbered]) -> Merged:
        """Samples whose iteration may be stored already (see the module's docstring)."""
        merged = Merged()
        by_key: dict[Key, list[Numbered]] = {}
        names: dict[Key, set[str]] = {}  # the metrics of each iteration's samples so far
        for item in items:  # several samples of one iteration: its metrics must differ
            key = item[:3]
            seen = names.get(key)
            if seen is None:
                seen = names[key] = set()
            clash = [m for m in item[5] if m in seen]
            if clash:
                merged.clashes.append(
                    (item[3], f"a second {clash[0]!r} value for iteration {item[2]}")
                )
            else:
                seen.update(item[5])
                by_key.setdefault(key, []).append(item)
        keys = json.dumps(list(by_key))
        found = {(r[0], r[1], r[2]): int(r[3]) for r in self._conn.execute(_FIND, (keys,))}
        mine = [
            [*key, metric]
            for key, rowid in found.items()
            if rowid > self._mark
            for metric in names[key]
        ]
        have: set[tuple[int, int, int, str]] = set()
        if mine:
            have = {
                (r[0], r[1], r[2], r[3]) for r in self._conn.execute(_METRICS, (json.dumps(mine),))
            }
        iterations: list[tuple[int, int, int, float | None, str]] = []
        attempted: list[Any] = []  # iterations with their attempt's fields, one after the other
        samples: list[tuple[int, int, int, str, float]] = []
        kept_samples: list[tuple[int, int, int, str, float]] = []
        extended: list[tuple[str, int]] = []  # lines to add to the source of an iteration made here
        marks: dict[tuple[int, int], list[Any]] = {}  # (number, mark) of the iterations made
        kept: list[Key] = []
        for key, group in by_key.items():
            rowid = found.get(key)
            if rowid is not None and rowid <= self._mark:  # stored before: left as it was
                kept.append(key)
                kept_samples.extend((*key, m, v) for item in group for m, v in item[5].items())
                continue
            lines = []
            for item in group:
                clash = [m for m in item[5] if (*key, m) in have]
                if clash:
                    merged.clashes.append(
                        (item[3], f"a second {clash[0]!r} value for iteration {key[2]}")
                    )
                    continue
                lines.append(str(item[3]))
                samples.extend((*key, m, v) for m, v in item[5].items())
            if not lines:
                continue
            attempt = group[0][6]
            own = None if attempt is None else attempt[6]  # a source of the file's, if any
            if rowid is None:
                where = f"{source}:{','.join(lines)}" if own is None else own
                if attempt is None:
                    iterations.append((*key, group[0][4], where))
                else:
                    attempted += (*key, group[0][4], *attempt[:6], where)
                made = merged.made
                made[key[:2]] = made.get(key[:2], 0) + 1
                mark = group[0][7]
                if mark is not None:
                    marks.setdefault(key[:2], []).extend((key[2], mark))
            elif own is None:  # the file's source: its lines do not join it
                extended.append(("," + ",".join(lines), rowid))
        iterations.sort()
        samples.sort()
        self.insert(iterations, samples)
        self._insert(_ANY_ATTEMPTED, [], attempted, ATTEMPT_WIDTH + 2)
        self._conn.executemany(
            "UPDATE iteration SET source = source || ? WHERE rowid = ?", extended
        )
        for (run_id, guest_id), numbered in sorted(marks.items()):
            self.set_marks(run_id, guest_id, numbered)
        self._conn.executemany(
            "INSERT OR IGNORE INTO sample(run_id, guest_id, iteration, metric, value)"
            " VALUES (?, ?, ?, ?, ?)",
            kept_samples,
        )
        merged.kept = self._count_kept(kept)
        return merged

    def _count_kept(self, keys: list[Key]) -> int:
        """How many of ``keys`` this bulk write had not counted as kept yet (a temporary
        table: on disk, so a long import's count takes no memory)."""
        if not keys:
            return 0
        if not self._kept_table:
            self._conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS bulk_kept(run_id INTEGER, guest_id INTEGER,"
                " iteration INTEGER, PRIMARY KEY(run_id, guest_id, iteration)) WITHOUT ROWID"
            )
            self._conn.execute("DELETE FROM temp.bulk_kept")
            self._kept_table = True
        before = self._conn.total_changes
        self._conn.executemany("INSERT OR IGNORE INTO temp.bulk_kept VALUES (?, ?, ?)", keys)
        return self._conn.total_changes - before
