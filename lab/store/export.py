"""The store's export: every sample with its context, a batch at a time, for ``lab export``.

The samples are read one (run, guest) at a time, each in the order of the sample table's
primary key (iteration, then metric), so SQLite sorts nothing; what a run and a guest share
(study, run key, workload, parameters, variant, guest, host) is read once per pair, not with
every row: each row is the tuple SQLite hands back and nothing more. 2,000,000 samples came
out of one query sorted whole in 16 s; they come out of these in 4.

A sample's row carries what the iteration table holds of its (successful) attempt: its
number, start, end, source, boot, exit status and wall, user and sys times, read from the
``iteration`` row its query joins anyway. A failed attempt (``ok`` 0) has no sample: it is a
row of its own, with no metric, unit, direction or value, and what the iteration table holds
of it (the same fields, then the error and the end of the command's output). A pair's failed
attempts are read by one more query (the ``iteration_boot`` index holds ``ok``: a seek to
them, not a scan of every attempt) and put among its samples where (iteration, attempt)
says, a batch at a time.
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lab.store.records import ExportRow

BATCH = 10_000  # rows handed out at a time
SAMPLE_WIDTH = 16  # a sample's row: iteration to cpus, then exit_status, wall, user, sys

_PAIRS = (
    "SELECT st.name, r.key, r.workload, r.params, r.schedule, g.variant, g.name, g.host, r.id,"
    " g.id"
    " FROM run r JOIN study st ON st.id = r.study_id JOIN guest g ON g.study_id = r.study_id"
    " WHERE (?1 IS NULL OR r.workload = ?1) AND (?2 IS NULL OR st.name = ?2)"
    " AND (?3 IS NULL OR r.key = ?3)"
    " ORDER BY st.name, r.workload, r.key, g.variant, g.host, g.name"
)
_ROWS = (
    "SELECT s.iteration, i.attempt, s.metric, m.unit, m.direction, s.value, i.started, i.ended,"
    " i.source, i.boot_id, {placement}, i.exit_status, i.wall, i.user, i.sys"
    " FROM sample s JOIN metric m ON m.run_id = s.run_id AND m.name = s.metric"
    " JOIN iteration i ON i.run_id = s.run_id AND i.guest_id = s.guest_id"
    " AND i.iteration = s.iteration AND i.ok = 1{join}"
    " WHERE s.run_id = ?1 AND s.guest_id = ?2 ORDER BY s.iteration, s.metric"
)
# A guest's placements are joined only where it has any (lab run --swap-every): a lookup a
# sample that finds nothing cost a sixth of the export's reading.
_PLACED = _ROWS.format(
    placement="p.label, p.cpus",
    join=" LEFT JOIN placement p ON p.run_id = s.run_id AND p.guest_id = s.guest_id"
    " AND p.iteration = s.iteration",
)
_UNPLACED = _ROWS.format(placement="NULL, NULL", join="")
_ANY_PLACED = "SELECT EXISTS (SELECT 1 FROM placement WHERE run_id = ?1 AND guest_id = ?2)"
# A pair's failed attempts, as rows of the same shape: no metric, unit, direction or value.
_FAILED = (
    "SELECT i.iteration, i.attempt, NULL, NULL, NULL, NULL, i.started, i.ended, i.source,"
    " i.boot_id, p.label, p.cpus, 0, i.exit_status, i.wall, i.user, i.sys, i.output_tail"
    " FROM iteration i LEFT JOIN placement p ON p.run_id = i.run_id"
    " AND p.guest_id = i.guest_id AND p.iteration = i.iteration"
    " WHERE i.run_id = ?1 AND i.guest_id = ?2 AND i.ok = 0 ORDER BY i.iteration, i.attempt"
)


@dataclass(frozen=True)
class ExportBatch:
    """Samples and failed attempts of one run on one guest. ``context`` holds the first eight
    of ``EXPORT_COLUMNS`` (study to host). A sample's row holds sixteen (``SAMPLE_WIDTH``):
    the next twelve (iteration to cpus), then its attempt's exit_status, wall, user and sys;
    its ``ok`` (1) and error (None) are the writers' to put in, as :func:`sample_columns`
    does, not SQLite's to return with every row. A failed attempt's row holds all eighteen
    (iteration to error): its ``ok`` is 0 and its metric, unit, direction and value are
    None."""

    context: tuple[Any, ...]
    rows: list[tuple[Any, ...]]


class Export:
    """The export side of :class:`lab.store.Store`; needs only its connection."""

    _conn: sqlite3.Connection

    def export_batches(
        self, workload: str | None = None, study: str | None = None, run: str | None = None,
        size: int = BATCH,
    ) -> Iterator[ExportBatch]:  # fmt: skip
        """Every sample and failed attempt with its context in (study, workload, run,
        variant, host, guest, iteration, attempt, metric) order, ``size`` rows at most at a
        time (a batch with failed attempts among its samples has them too)."""
        pairs = self._conn.execute(_PAIRS, (workload, study, run)).fetchall()
        for *context, run_id, guest_id in pairs:
            shared = tuple(context)
            failed = self._conn.execute(_FAILED, (run_id, guest_id)).fetchall()
            placed = self._conn.execute(_ANY_PLACED, (run_id, guest_id)).fetchone()[0]
            cursor = self._conn.execute(_PLACED if placed else _UNPLACED, (run_id, guest_id))
            while rows := cursor.fetchmany(size):
                if failed:
                    rows, failed = _among(rows, failed)
                yield ExportBatch(shared, rows)
            if failed:  # after the last sample, or a pair with no sample
                for start in range(0, len(failed), size):
                    yield ExportBatch(shared, failed[start : start + size])

    def export_rows(
        self, workload: str | None = None, study: str | None = None, run: str | None = None
    ) -> Iterator[ExportRow]:
        """Every sample and failed attempt with its context, in :meth:`export_batches`'
        order."""
        for batch in self.export_batches(workload, study, run):
            for row in batch.rows:
                yield ExportRow(*batch.context, *sample_columns(row))


def sample_columns(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row of :class:`ExportBatch` with all eighteen columns from iteration to error: a
    sample's with its ``ok`` (1) and error (None) put in, a failed attempt's as it is."""
    if len(row) != SAMPLE_WIDTH:
        return row
    return (*row[:12], 1, *row[12:], None)


def _attempt(row: tuple[Any, ...]) -> tuple[int, int]:
    return (row[0], row[1])


def _among(
    rows: list[tuple[Any, ...]], failed: list[tuple[Any, ...]]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A batch of samples with the failed attempts that come before its last sample put in
    their place (by iteration, then attempt: an iteration's samples are one attempt's), and
    the failed attempts left for later batches. Samples in order by (iteration, metric) are
    in order by (iteration, attempt), so each place is found by bisection."""
    last = _attempt(rows[-1])
    if _attempt(failed[0]) > last:
        return rows, failed
    merged: list[tuple[Any, ...]] = []
    at = 0
    taken = 0
    for attempt in failed:
        key = _attempt(attempt)
        if key > last:
            break
        place = bisect_right(rows, key, lo=at, key=_attempt)
        merged += rows[at:place]
        merged.append(attempt)
        at = place
        taken += 1
    merged += rows[at:]
    return merged, failed[taken:]
