"""The store's queries: what has been done (for resuming) and what was measured (for analysis)."""

from __future__ import annotations

import itertools
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lab.core.errors import StoreError
from lab.stats.series import Series, SeriesKey
from lab.store.parts import (
    HEADER,
    PART_WHERE,
    RANGE,
    Children,
    Part,
    first_last,
    read_frame,
    shares,
)
from lab.store.records import (
    EvidenceSeries,
    EvidenceSummary,
)
from lab.store.uri import readonly_uri

# A selection of at least this many samples is read by child processes (lab.store.parts),
# up to one per CPU besides this one and this many: below it their start (20 ms each) is not
# paid back.
CHILD_SAMPLES = 200_000
MAX_CHILDREN = 4
BOOT_SEEKS = 1_000  # boots a guest's run may have for them to be found by seeks

# A store up to this size is checked (PRAGMA quick_check, ~0.2 s at this size) before its
# samples are analysed: a damaged index page can drop samples without an error (a test saw
# compare use 854 of 1,000). Bigger stores would pay a second per 300 MB; there a damaged
# page is found where a read meets it, and `lab store check` finds the rest.
VERIFIED_BYTES = 64 * 1024 * 1024

# (first, last, boot id) of every boot id of a guest's successful attempts in a run, by a
# skip scan of the iteration_boot index: each next boot id is the least one above the last,
# and each MIN/MAX is a single index lookup. ?3 caps the boots; the NULL boot comes last.
_BOOT_SEEKS_SQL = """
WITH RECURSIVE boot(id) AS (
    SELECT (SELECT MIN(boot_id) FROM iteration INDEXED BY iteration_boot
            WHERE run_id=?1 AND guest_id=?2 AND ok=1 AND boot_id IS NOT NULL)
    UNION ALL
    SELECT (SELECT MIN(boot_id) FROM iteration INDEXED BY iteration_boot
            WHERE run_id=?1 AND guest_id=?2 AND ok=1 AND boot_id > boot.id)
    FROM boot WHERE boot.id IS NOT NULL
    LIMIT ?3
)
SELECT (SELECT MIN(iteration) FROM iteration INDEXED BY iteration_boot
        WHERE run_id=?1 AND guest_id=?2 AND ok=1 AND boot_id=boot.id),
       (SELECT MAX(iteration) FROM iteration INDEXED BY iteration_boot
        WHERE run_id=?1 AND guest_id=?2 AND ok=1 AND boot_id=boot.id),
       boot.id
FROM boot WHERE boot.id IS NOT NULL
UNION ALL
SELECT (SELECT MIN(iteration) FROM iteration INDEXED BY iteration_boot
        WHERE run_id=?1 AND guest_id=?2 AND ok=1 AND boot_id IS NULL),
       (SELECT MAX(iteration) FROM iteration INDEXED BY iteration_boot
        WHERE run_id=?1 AND guest_id=?2 AND ok=1 AND boot_id IS NULL),
       NULL
"""


class Reads:
    """The read side of :class:`lab.store.Store`; needs only its connection."""

    _conn: sqlite3.Connection
    path: Path
    _verified: bool = False
    _boot_index: bool | None = None  # whether the store has the iteration_boot index

    def verify(self, limit: int = VERIFIED_BYTES) -> None:
        """Refuse a damaged store of at most ``limit`` bytes (SQLite's quick_check), once
        per connection; bigger stores are left to the reads that meet a damaged page."""
        if self._verified:
            return
        pages, size = (self._conn.execute(f"PRAGMA {p}").fetchone()[0]
                       for p in ("page_count", "page_size"))  # fmt: skip
        if pages * size <= limit:
            found = [row[0] for row in self._conn.execute("PRAGMA quick_check(3)")]
            if found != ["ok"]:
                first = found[0].replace("*** in database main ***", "").strip().splitlines()
                raise StoreError(
                    f"the result store {self.path} is damaged ({first[0] if first else found})",
                    hint="Run `lab store check` for SQLite's report; restore the store from a"
                    " copy (the journals in the guests can refill it)",
                )
        self._verified = True

    def completed_iterations(self, run_id: int, guest_id: int) -> set[int]:
        """Iterations of the run on the guest that have a successful attempt."""
        cur = self._conn.execute(
            "SELECT DISTINCT iteration FROM iteration WHERE run_id=? AND guest_id=? AND ok=1",
            (run_id, guest_id),
        )
        return {int(r[0]) for r in cur}

    def next_attempt(self, run_id: int, guest_id: int, iteration: int) -> int:
        """The number the next attempt at this iteration gets (1 for the first)."""
        row = self._conn.execute(
            "SELECT MAX(attempt) FROM iteration WHERE run_id=? AND guest_id=? AND iteration=?",
            (run_id, guest_id, iteration),
        ).fetchone()
        return 1 if row[0] is None else int(row[0]) + 1

    def max_iteration(self, run_id: int, guest_id: int) -> int:
        """The highest iteration number recorded (0 when none)."""
        row = self._conn.execute(
            "SELECT MAX(iteration) FROM iteration WHERE run_id=? AND guest_id=?",
            (run_id, guest_id),
        ).fetchone()
        return 0 if row[0] is None else int(row[0])

    def max_attempt(self, run_id: int, guest_id: int) -> int:
        """The highest attempt number recorded for any iteration (0 when none)."""
        row = self._conn.execute(
            "SELECT MAX(attempt) FROM iteration WHERE run_id=? AND guest_id=?",
            (run_id, guest_id),
        ).fetchone()
        return 0 if row[0] is None else int(row[0])

    def values(
        self, workload: str | None = None, metric: str | None = None, study: str | None = None,
        run: str | None = None,
    ) -> list[Series]:  # fmt: skip
        """Every series of samples, optionally of one workload, metric or study.

        One series per (study, workload, metric, unit, direction, variant, host, guest);
        samples of several runs of the same workload are concatenated in run order; ``run``
        (a key) keeps one run's. A damaged store is refused (:meth:`verify`).
        """
        with self.reading_values(workload, metric, study, run) as reading:
            return reading.result()

    def reading_values(
        self, workload: str | None = None, metric: str | None = None, study: str | None = None,
        run: str | None = None, children: int | None = None,
    ) -> SeriesReading:  # fmt: skip
        """:meth:`values`, read by child processes while the caller goes on (its
        :meth:`SeriesReading.result` waits for them): one per CPU besides this process's,
        up to ``MAX_CHILDREN``, when the selection has at least ``CHILD_SAMPLES`` samples
        (``children`` says how many instead; 0 reads everything here, when the result is
        asked for). One child on two CPUs: two took longer, competing with this process."""
        self.verify()
        groups = [g for g in self._series_groups(workload, metric, study, run) if g[10]]
        parts = [(int(g[8]), int(g[9]), str(g[2])) for g in groups]
        if children is None:
            sizes = [self._extent(*part) for part in parts]
            children = min(len(os.sched_getaffinity(0)) - 1, MAX_CHILDREN, len(parts))
            if sum(sizes) < CHILD_SAMPLES:
                children = 0
        else:
            sizes = [1] * len(parts)
        started = None
        if children > 0 and parts and self.path.is_file():
            started = Children(readonly_uri(self.path), shares(parts, sizes, children))
        return SeriesReading(self._conn, groups, parts, started)

    def _extent(self, run_id: int, guest_id: int, metric: str) -> int:
        """At most how many samples a part has (its iterations' range): two index lookups."""
        span = first_last(self._conn, run_id, guest_id, metric)
        return 0 if span is None else span[1] - span[0] + 1

    def _series_groups(
        self, workload: str | None, metric: str | None, study: str | None, run: str | None = None
    ) -> list[Any]:
        """(study, workload, metric, unit, direction, variant, host, guest, run id, guest id,
        whether it has samples) for every run and guest, in the order :meth:`values`
        concatenates them."""
        where, args = [], []
        filters = (("r.workload", workload), ("m.name", metric), ("st.name", study), ("r.key", run))
        for column, value in filters:
            if value is not None:
                where.append(f"{column}=?")
                args.append(value)
        # The groups are few; the samples are many and are read by an index-only scan each.
        # Whether a group has any is one index lookup (a COUNT here took 0.05 s per million).
        return self._conn.execute(
            "SELECT st.name, r.workload, m.name, m.unit, m.direction, g.variant, g.host, g.name,"
            " r.id, g.id, EXISTS (SELECT 1 FROM sample s INDEXED BY sample_series"
            " WHERE s.run_id=r.id AND s.metric=m.name AND s.guest_id=g.id) AS any"
            " FROM run r JOIN study st ON st.id=r.study_id JOIN metric m ON m.run_id=r.id"
            " JOIN guest g ON g.study_id=r.study_id"
            " WHERE m.direction IS NOT NULL"  # evidence (backing.*) is not compared
            + "".join(" AND " + w for w in where)
            + " ORDER BY st.name, r.workload, m.name, g.variant, g.host, g.name, r.created, r.id",
            args,
        ).fetchall()

    def evidence(self, run_id: int) -> list[EvidenceSummary]:
        """Per guest and evidence metric (direction None) of a run: its samples' count,
        mean, minimum and maximum."""
        # Aggregated metric by metric in the order of the sample_series index (an index-only
        # scan, no sort), not by joining every sample of the run to its metric and guest first:
        # 1.5 s for the seed study's 1.4 million samples of evidence, 0.2 s this way.
        rows = self._conn.execute(
            "SELECT g.name, m.name, m.unit, a.n, a.mean, a.low, a.high FROM metric m,"
            " (SELECT s.metric, s.guest_id, COUNT(*) AS n, AVG(s.value) AS mean,"
            " MIN(s.value) AS low, MAX(s.value) AS high FROM sample s INDEXED BY sample_series"
            " WHERE s.run_id=?1 AND s.metric IN"
            " (SELECT name FROM metric WHERE run_id=?1 AND direction IS NULL)"
            " GROUP BY s.metric, s.guest_id) AS a JOIN guest g ON g.id=a.guest_id"
            " WHERE m.run_id=?1 AND m.name=a.metric ORDER BY g.name, m.name",
            (run_id,),
        ).fetchall()
        return [EvidenceSummary(r[0], r[1], r[2] or "", int(r[3]), r[4], r[5], r[6]) for r in rows]

    def evidence_series(self, run_id: int) -> EvidenceSeries:
        """Per guest (in the order they were stored: A first) and evidence metric in KiB
        (direction None: QEMU's RSS and huge pages, the guest's AnonHugePages) of a run: its
        (iterations, values), ordered by iteration, for the report to draw over the run.

        The counters (unit "count": events per iteration) are left out: they are not sizes
        and share no axis with them. One statement, in the order of the ``sample_series``
        index (metric, guest, iteration), so that SQLite reads it without sorting.
        """
        rows = self._conn.execute(
            "SELECT s.guest_id, g.name, s.metric, s.iteration, s.value FROM metric m"
            " JOIN sample s INDEXED BY sample_series ON s.run_id=m.run_id AND s.metric=m.name"
            " JOIN guest g ON g.id=s.guest_id"
            " WHERE m.run_id=? AND m.direction IS NULL AND m.unit='KiB'"
            " ORDER BY s.metric, s.guest_id, s.iteration",
            (run_id,),
        ).fetchall()
        return _evidence_by_guest(rows)

    def metric_series(self, run_id: int, metrics: Iterable[str]) -> EvidenceSeries:
        """Per guest (in the order they were stored) and each of ``metrics`` a run recorded,
        whatever its unit: its (iterations, values), ordered by iteration. The report pairs
        evidence of different units read at one iteration (the host's unusable index and a
        QEMU's transparent huge pages: ``lab.report.ageplot``)."""
        names = sorted(set(metrics))
        rows = self._conn.execute(
            "SELECT s.guest_id, g.name, s.metric, s.iteration, s.value FROM sample s"
            " INDEXED BY sample_series JOIN guest g ON g.id=s.guest_id"
            f" WHERE s.run_id=? AND s.metric IN ({','.join('?' * len(names))})"
            " ORDER BY s.metric, s.guest_id, s.iteration",
            (run_id, *names),
        ).fetchall() if names else []  # fmt: skip
        return _evidence_by_guest(rows)

    def placement_labels(
        self, workload: str | None = None, metric: str | None = None, study: str | None = None,
        run: str | None = None, iterations: Mapping[Part, np.ndarray] | None = None,
    ) -> dict[SeriesKey, np.ndarray]:  # fmt: skip
        """The placement ("own", "swapped") of every sample, aligned with :meth:`values`.

        One array per series that has any placement recorded, keyed by :func:`series_key`
        and in the order of the series' values; "" where a sample has none (a run without
        ``--swap-every`` pooled with one that had it). Series without any are left out.
        ``iterations`` (a :class:`SeriesReading`'s): the labels are those of the samples
        read then, not of those a run recording meanwhile has added since.
        """
        placed = {int(r[0]) for r in self._conn.execute("SELECT DISTINCT run_id FROM placement")}
        if not placed:
            return {}
        labels: dict[SeriesKey, np.ndarray] = {}
        groups = self._series_groups(workload, metric, study, run)
        for key, members in itertools.groupby(groups, key=lambda g: g[:8]):
            counted = _read_parts(members, iterations)
            if not any(g[8] in placed for g in counted):
                continue
            parts = [
                self._placement_array(g[8], g[9], g[2], _part_iterations(g, iterations))
                if g[8] in placed
                else [""] * self._samples(g, iterations)
                for g in counted
            ]
            st, wl, name, _, _, variant, host, guest = key
            labels[(st, wl, name, variant, host, guest)] = np.array(
                [label for part in parts for label in part], dtype=str
            )
        return labels

    def sample_boots(
        self, workload: str | None = None, metric: str | None = None, study: str | None = None,
        run: str | None = None, iterations: Mapping[Part, np.ndarray] | None = None,
    ) -> dict[SeriesKey, tuple[np.ndarray, np.ndarray]]:  # fmt: skip
        """The run id and the boot id of every sample, aligned with :meth:`values`.

        Keyed by :func:`series_key`: (run ids, boot ids), each in the order of the series'
        values. The boot is that of the sample's successful attempt (the last, if several);
        "" where none was recorded (imported samples). ``iterations`` (a
        :class:`SeriesReading`'s) are the parts' iterations as those series were read: the
        boots are then aligned with them, and none is counted again.
        """
        origins: dict[SeriesKey, tuple[np.ndarray, np.ndarray]] = {}
        groups = self._series_groups(workload, metric, study, run)
        for key, members in itertools.groupby(groups, key=lambda g: g[:8]):
            counted = _read_parts(members, iterations)
            if not counted:
                continue
            boots = [
                self._boot_array(g[8], g[9], g[2], _part_iterations(g, iterations)) for g in counted
            ]
            st, wl, name, _, _, variant, host, guest = key
            origins[(st, wl, name, variant, host, guest)] = (
                _joined([_constant(g[8], b.size, np.int64)
                         for g, b in zip(counted, boots, strict=True)]),
                _joined(boots),
            )  # fmt: skip
        return origins

    def _boot_array(
        self, run_id: int, guest_id: int, metric: str, iterations: np.ndarray | None = None
    ) -> np.ndarray:
        """The boot id of each sample's successful attempt, in the order of its series
        (``iterations``, where they were read already).

        Boots change rarely, so SQLite returns only the change points of the successful
        attempts in iteration order, and each sample takes the boot of the last change at or
        before its iteration (a lookup per sample in Python took 2.3 s for 2 x 1M samples).
        One boot for every sample (the usual run, or imported samples) needs no iterations.
        """
        changes = self._boot_changes(run_id, guest_id)
        if iterations is not None:
            n = iterations.size
            first = int(iterations[0]) if n else 0
        else:
            first, last, n = self._span(run_id, guest_id, metric)
        if not changes or (len(changes) == 1 and changes[0][0] <= first):
            return _constant(changes[0][1] if changes else "", n, object)
        if iterations is None:
            iterations = self._sample_iterations(run_id, guest_id, metric, (first, last, n))
        starts = np.array([c[0] for c in changes], dtype=np.int64)
        boots = np.array([c[1] for c in changes], dtype=object)
        at = np.searchsorted(starts, iterations, side="right") - 1
        return np.where(at >= 0, boots[np.maximum(at, 0)], "")

    def _boot_changes(self, run_id: int, guest_id: int) -> list[tuple[int, str]]:
        """(first iteration, boot id) where the boot of the successful attempts changes, in
        iteration order. Boots normally hold ranges of iterations that do not overlap: then
        their ranges give them; otherwise (a repeat in an earlier boot's range) a window
        over every attempt does, at the cost of a scan of them."""
        ranges = self._boot_ranges(run_id, guest_id)
        if all(earlier[1] < later[0] for earlier, later in itertools.pairwise(ranges)):
            return [(first, boot) for first, _, boot in ranges]
        cur = self._conn.execute(
            "SELECT iteration, boot FROM (SELECT iteration, COALESCE(boot_id, '') AS boot,"
            " LAG(COALESCE(boot_id, '')) OVER (ORDER BY iteration, attempt) AS before"
            " FROM iteration WHERE run_id=? AND guest_id=? AND ok=1)"
            " WHERE before IS NULL OR before <> boot",
            (run_id, guest_id),
        )
        return [(int(i), str(boot)) for i, boot in cur]

    def _boot_ranges(self, run_id: int, guest_id: int) -> list[tuple[int, int, str]]:
        """(first iteration, last iteration, boot id) of each boot of the successful attempts
        ("" for none recorded), by first iteration. Up to BOOT_SEEKS boots are found by seeks
        in the ``iteration_boot`` index (the next boot id after the last one, then its first
        and last iteration: a skip scan, microseconds per boot); more are grouped by one
        scan of that index. A store without the index (written by a lab before it, on a
        read-only mount, where it cannot be added) has them grouped by one scan of the
        guest's attempts: its "no such index" stopped compare and report there."""
        key = (run_id, guest_id)
        indexed = self._has_boot_index()
        rows = (
            self._conn.execute(_BOOT_SEEKS_SQL, (*key, BOOT_SEEKS + 1)).fetchall()
            if indexed
            else []
        )
        if len(rows) > BOOT_SEEKS or not indexed:
            rows = self._conn.execute(
                "SELECT MIN(iteration), MAX(iteration), boot_id FROM iteration"
                + (" INDEXED BY iteration_boot" if indexed else "")
                + " WHERE run_id=? AND guest_id=? AND ok=1 GROUP BY boot_id",
                key,
            ).fetchall()
        merged: dict[str, tuple[int, int]] = {}  # no boot id and an empty one are one boot
        for first, last, boot in rows:
            if first is None:
                continue
            name = boot or ""
            low, high = merged.get(name, (first, last))
            merged[name] = (min(low, int(first)), max(high, int(last)))
        return sorted((first, last, boot) for boot, (first, last) in merged.items())

    def _has_boot_index(self) -> bool:
        """Whether the store has the ``iteration_boot`` index (asked once per connection)."""
        if self._boot_index is None:
            self._boot_index = (
                self._conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type='index' AND name='iteration_boot'"
                ).fetchone()
                is not None
            )
        return self._boot_index

    def _span(self, run_id: int, guest_id: int, metric: str) -> tuple[int, int, int]:
        """(first iteration, last iteration, samples) of one series part; (0, -1, 0) if none.
        The first and the last are one index lookup each; the count reads the index."""
        span = first_last(self._conn, run_id, guest_id, metric)
        if span is None:
            return (0, -1, 0)
        key = (run_id, metric, guest_id)
        n = self._conn.execute("SELECT COUNT(*)" + PART_WHERE, key).fetchone()[0]
        return (*span, int(n))

    def _sample_iterations(
        self, run_id: int, guest_id: int, metric: str, span: tuple[int, int, int]
    ) -> np.ndarray:
        """The iterations of one series part, in order, from its :meth:`_span`."""
        first, last, n = span
        if last - first + 1 == n:  # no gaps, as after a complete run
            return np.arange(first, last + 1, dtype=np.int64)
        cur = self._conn.execute(
            "SELECT iteration" + PART_WHERE + " ORDER BY iteration", (run_id, metric, guest_id)
        )
        return np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64, count=n)

    def warmup_declarations(self, study: str | None = None) -> dict[int, str]:
        """Run id -> the warm-up declared with it ('auto' or a count); undeclared runs absent."""
        cur = self._conn.execute(
            "SELECT w.run_id, w.declared FROM warmup w JOIN run r ON r.id=w.run_id"
            " JOIN study st ON st.id=r.study_id WHERE ?1 IS NULL OR st.name=?1",
            (study,),
        )
        return {int(r[0]): str(r[1]) for r in cur}

    def _samples(self, group: Any, iterations: Mapping[Part, np.ndarray] | None) -> int:
        """How many samples a group's part has: as read (``iterations``), or counted now."""
        read = _part_iterations(group, iterations)
        return self._span(group[8], group[9], group[2])[2] if read is None else read.size

    def _placement_array(
        self, run_id: int, guest_id: int, metric: str, iterations: np.ndarray | None = None
    ) -> list[str]:
        """The placement of each sample of a series part ("" where none was recorded), in
        the order of its iterations: ``iterations``, where they were read already."""
        if iterations is not None:
            rows = self._conn.execute(
                "SELECT iteration, label FROM placement WHERE run_id=? AND guest_id=?"
                " ORDER BY iteration",
                (run_id, guest_id),
            ).fetchall()
            at = dict(rows)
            return [at.get(int(i), "") for i in iterations]
        cur = self._conn.execute(
            "SELECT p.label FROM sample s INDEXED BY sample_series LEFT JOIN placement p"
            " ON p.run_id=s.run_id AND p.guest_id=s.guest_id AND p.iteration=s.iteration"
            " WHERE s.run_id=? AND s.metric=? AND s.guest_id=? ORDER BY s.iteration",
            (run_id, metric, guest_id),
        )
        return [row[0] or "" for row in cur]


def _read_parts(members: Iterable[Any], iterations: Mapping[Part, np.ndarray] | None) -> list[Any]:
    """The groups (of :meth:`Reads._series_groups`) whose samples count: those with samples,
    or, given the ``iterations`` of a :class:`SeriesReading`, those it read (not a guest's
    part that had none then, nor a run begun since, which a run recording may add)."""
    if iterations is None:
        return [g for g in members if g[10]]
    return [g for g in members if (int(g[8]), int(g[9]), str(g[2])) in iterations]


def _part_iterations(group: Any, iterations: Mapping[Part, np.ndarray] | None) -> np.ndarray | None:
    """A group's iterations as a :class:`SeriesReading` read them (None: not given)."""
    if iterations is None:
        return None
    return iterations[(int(group[8]), int(group[9]), str(group[2]))]


class SeriesReading:
    """The series :meth:`Reads.reading_values` is reading: :meth:`result` gives them (once),
    waiting for the children reading them; the end of a ``with`` block stops any still
    running."""

    def __init__(
        self, conn: sqlite3.Connection, groups: list[Any], parts: list[Part],
        children: Children | None,
    ) -> None:  # fmt: skip
        self._conn, self._groups, self._parts, self._children = conn, groups, parts, children
        self.iterations: dict[Part, np.ndarray] = {}
        """each part's iterations, once :meth:`result` has read them"""

    def result(self) -> list[Series]:
        if self._children is not None:
            frames = self._children.frames(self._conn)
        else:
            frames = {part: read_frame(self._conn, *part) for part in self._parts}
        read = {part: _arrays(frame) for part, frame in frames.items()}
        self.iterations = {part: arrays[0] for part, arrays in read.items()}
        series: list[Series] = []
        for key, members in itertools.groupby(self._groups, key=lambda g: g[:8]):
            arrays = [read[(int(g[8]), int(g[9]), str(g[2]))] for g in members]
            st, wl, name, unit, direction, variant, host, guest = key
            series.append(
                Series(
                    study=st, workload=wl, metric=name, unit=unit or "", direction=direction,
                    variant=variant, guest=guest, host=host,
                    iterations=_joined([a[0] for a in arrays]),
                    values=_joined([a[1] for a in arrays]),
                )
            )  # fmt: skip
        return series

    def close(self) -> None:
        if self._children is not None:
            self._children.close()

    def __enter__(self) -> SeriesReading:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _constant(value: object, n: int, dtype: type) -> np.ndarray:
    """``n`` times ``value``, read-only and without memory of its own (a broadcast view):
    every sample of a part has one run id, and most parts one boot id (as full arrays,
    2 × 3.1M samples took 99 MB)."""
    return np.broadcast_to(np.array(value, dtype=dtype), (n,))


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    """One array of the parts' arrays in order: a series of one part (one run, as usual)
    is that part's array itself, not a copy (2 × 3.1M samples copied cost 99 MB)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _arrays(frame: bytes | memoryview) -> tuple[np.ndarray, np.ndarray]:
    """(iterations, values) of one part's frame (:mod:`lab.store.parts`)."""
    samples, first, last, layout = HEADER.unpack_from(frame)
    if layout == RANGE:
        values = np.frombuffer(frame, dtype=np.float64, count=samples, offset=HEADER.size)
        return np.arange(first, last + 1, dtype=np.int64), values
    pairs = np.frombuffer(frame, dtype=np.float64, count=2 * samples, offset=HEADER.size)
    pairs = pairs.reshape(-1, 2)
    return pairs[:, 0].astype(np.int64), pairs[:, 1].copy()


def _evidence_by_guest(rows: Sequence[Any]) -> EvidenceSeries:
    """Rows (guest id, guest, metric, iteration, value), ordered by metric, guest and
    iteration, as each guest's (in the order they were stored) (iterations, values) per
    metric."""
    by_guest: dict[tuple[int, str], dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for (guest_id, guest, metric), part in itertools.groupby(rows, key=lambda r: r[:3]):
        pairs = np.array([r[3:] for r in part], dtype=np.float64)
        by_guest.setdefault((guest_id, guest), {})[metric] = (
            pairs[:, 0].astype(np.int64),
            pairs[:, 1].copy(),
        )
    return {guest: by_guest[(guest_id, guest)] for guest_id, guest in sorted(by_guest)}
