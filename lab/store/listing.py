"""The store's records as lists: studies, guests, runs and sweeps, a run's progress, its
environment and failures, and the counts `lab status` and `lab db check` show."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np

from lab.store.records import (
    EnvironmentRecord,
    FailedAttempt,
    GuestProgress,
    GuestRecord,
    MetricInfo,
    RunRecord,
    StudyRecord,
    SweepRecord,
    SweepRunRecord,
)

# What `lab store check` counts as orphaned: each one pass over a table with one index
# search per row (tests/unit/test_store_hostile.py checks the plans). ``attempt IS NOT NULL``
# is always true: it makes SQLite search the attempt by its primary key (run, guest,
# iteration); without it SQLite took the covering index iteration_boot, searched by run and
# guest only, and read every attempt of the guest for each sample: 40,000 samples took 60 s.
ORPHANS = {
    "samples without their attempt": "SELECT COUNT(*) FROM sample s WHERE NOT EXISTS"
    " (SELECT 1 FROM iteration i WHERE i.run_id=s.run_id AND i.guest_id=s.guest_id"
    " AND i.iteration=s.iteration AND i.attempt IS NOT NULL AND i.ok)",
    "attempts of a missing run": "SELECT COUNT(*) FROM iteration i WHERE NOT EXISTS"
    " (SELECT 1 FROM run r WHERE r.id=i.run_id)",
    "attempts of a missing guest": "SELECT COUNT(*) FROM iteration i WHERE NOT EXISTS"
    " (SELECT 1 FROM guest g WHERE g.id=i.guest_id)",
    "runs of a missing study": "SELECT COUNT(*) FROM run r WHERE NOT EXISTS"
    " (SELECT 1 FROM study st WHERE st.id=r.study_id)",
}


def _unjson(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class Listing:
    """The listing side of :class:`lab.store.Store`; needs only its connection."""

    _conn: sqlite3.Connection

    def studies(self) -> list[StudyRecord]:
        cur = self._conn.execute(
            "SELECT id, name, created, description, study_file, study_hash FROM study ORDER BY name"
        )
        return [StudyRecord(int(r[0]), r[1], r[2], r[3] or "", r[4], r[5]) for r in cur]

    def guests(self, study: str | None = None) -> list[GuestRecord]:
        cur = self._conn.execute(
            "SELECT g.id, st.name, g.name, g.variant, g.host, g.domain_xml, g.host_facts,"
            " g.guest_facts, g.created FROM guest g JOIN study st ON st.id=g.study_id"
            " WHERE ?1 IS NULL OR st.name=?1 ORDER BY st.name, g.variant, g.host, g.name",
            (study,),
        )
        return [
            GuestRecord(int(r[0]), r[1], r[2], r[3], r[4], r[5], _unjson(r[6]), _unjson(r[7]),
                        r[8])
            for r in cur
        ]  # fmt: skip

    def runs(self, study: str | None = None) -> list[RunRecord]:
        rows = self._conn.execute(
            "SELECT r.id, st.name, r.key, r.workload, r.params, r.schedule, r.target_n,"
            " r.created FROM run r JOIN study st ON st.id=r.study_id"
            " WHERE ?1 IS NULL OR st.name=?1 ORDER BY st.name, r.workload, r.created, r.id",
            (study,),
        ).fetchall()
        return self._run_records(rows)

    def run_record(self, study: str, key: str) -> RunRecord | None:
        """Run ``key`` of ``study``, None when the study holds no such run: one lookup, where
        :meth:`runs` reads every run of the study (``lab import`` of 10,000 runs asked it once
        a run, and took time growing with the square of the runs)."""
        rows = self._conn.execute(
            "SELECT r.id, st.name, r.key, r.workload, r.params, r.schedule, r.target_n,"
            " r.created FROM run r JOIN study st ON st.id=r.study_id"
            " WHERE r.key=? AND st.name=?",
            (key, study),
        ).fetchall()
        found = self._run_records(rows)
        return found[0] if found else None

    def _run_records(self, rows: list[Any]) -> list[RunRecord]:
        result = []
        for r in rows:
            metrics = tuple(
                MetricInfo(m[0], m[1] or "", m[2])
                for m in self._conn.execute(
                    "SELECT name, unit, direction FROM metric WHERE run_id=? ORDER BY name",
                    (r[0],),
                )
            )
            result.append(
                RunRecord(int(r[0]), r[1], r[2], r[3], _unjson(r[4]) or {}, r[5], r[6], r[7],
                          metrics)
            )  # fmt: skip
        return result

    def sweeps(self, study: str | None = None) -> list[SweepRecord]:
        """Every sweep (of ``study``), oldest first, each with its runs by position."""
        rows = self._conn.execute(
            "SELECT sw.id, st.name, sw.key, sw.workload, sw.axes, sw.run_order, sw.created"
            " FROM sweep sw JOIN study st ON st.id=sw.study_id"
            " WHERE ?1 IS NULL OR st.name=?1 ORDER BY sw.created, sw.id",
            (study,),
        ).fetchall()
        found = []
        for r in rows:
            runs = tuple(
                SweepRunRecord(int(m[0]), int(m[1]), m[2], json.loads(m[3]))
                for m in self._conn.execute(
                    "SELECT sr.position, sr.run_id, run.key, sr.point FROM sweep_run sr"
                    " JOIN run ON run.id=sr.run_id WHERE sr.sweep_id=? ORDER BY sr.position",
                    (r[0],),
                )
            )
            axes = tuple((str(k), tuple(str(v) for v in values)) for k, values in json.loads(r[4]))
            found.append(SweepRecord(int(r[0]), r[1], r[2], r[3], axes, r[5], r[6], runs))
        return found

    def attempt_counts(self, study: str | None = None) -> dict[tuple[str, str], tuple[int, int]]:
        """(run key, guest name) -> (successful attempts, failed attempts)."""
        cur = self._conn.execute(
            "SELECT r.key, g.name, SUM(i.ok), SUM(1 - i.ok) FROM iteration i"
            " JOIN run r ON r.id=i.run_id JOIN guest g ON g.id=i.guest_id"
            " JOIN study st ON st.id=r.study_id WHERE ?1 IS NULL OR st.name=?1"
            " GROUP BY r.key, g.name",
            (study,),
        )
        return {(r[0], r[1]): (int(r[2]), int(r[3])) for r in cur}

    def iteration_seconds(
        self, workload: str | None = None, study: str | None = None, run: str | None = None
    ) -> np.ndarray:
        """How long successful iterations took: ``wall``, else ``ended − started``; of one
        run (its key) with ``run``."""
        cur = self._conn.execute(
            "SELECT COALESCE(i.wall, i.ended - i.started) FROM iteration i"
            " JOIN run r ON r.id=i.run_id JOIN study st ON st.id=r.study_id"
            " WHERE i.ok=1 AND (?1 IS NULL OR r.workload=?1) AND (?2 IS NULL OR st.name=?2)"
            " AND (?3 IS NULL OR r.key=?3) AND COALESCE(i.wall, i.ended - i.started) IS NOT NULL",
            (workload, study, run),
        )
        return np.fromiter((r[0] for r in cur), dtype=np.float64)

    def reboot_seconds(
        self, workload: str | None = None, study: str | None = None, run: str | None = None
    ) -> np.ndarray:
        """How long each reboot took, as the attempts' timestamps tell it: from the last
        attempt of a boot ending to the first of the guest's next boot starting, within each
        run and guest (``lab plan``'s cost of a boot)."""
        cur = self._conn.execute(
            "SELECT i.run_id, i.guest_id, MIN(i.started) AS first, MAX(i.ended) FROM iteration i"
            " JOIN run r ON r.id=i.run_id JOIN study st ON st.id=r.study_id"
            " WHERE i.boot_id IS NOT NULL AND i.started IS NOT NULL AND i.ended IS NOT NULL"
            " AND (?1 IS NULL OR r.workload=?1) AND (?2 IS NULL OR st.name=?2)"
            " AND (?3 IS NULL OR r.key=?3)"
            " GROUP BY i.run_id, i.guest_id, i.boot_id ORDER BY i.run_id, i.guest_id, first",
            (workload, study, run),
        )
        gaps, before = [], None
        for run_id, guest_id, first, last in cur:
            if before is not None and before[:2] == (run_id, guest_id) and first > before[2]:
                gaps.append(first - before[2])
            before = (run_id, guest_id, last)
        return np.array(gaps, dtype=np.float64)

    def integrity_check(self) -> list[str]:
        """SQLite's own check of the file: ['ok'] when sound; on a file too damaged for it to
        finish, what stopped it."""
        try:
            return [r[0] for r in self._conn.execute("PRAGMA integrity_check")]
        except sqlite3.DatabaseError as err:
            return [f"the check could not finish: {err}"]

    def workload_variants(self, study: str | None = None) -> dict[tuple[str, str], set[str]]:
        """(study, workload) -> the variants of the guests with an attempt in any of its runs:
        one primary-key lookup per run and guest (``run_progress`` counts every attempt)."""
        rows = self._conn.execute(
            "SELECT DISTINCT st.name, r.workload, g.variant FROM run r"
            " JOIN study st ON st.id=r.study_id JOIN guest g ON g.study_id=r.study_id"
            " WHERE (?1 IS NULL OR st.name=?1) AND EXISTS (SELECT 1 FROM iteration i"
            " WHERE i.run_id=r.id AND i.guest_id=g.id)",
            (study,),
        )
        found: dict[tuple[str, str], set[str]] = {}
        for st, workload, variant in rows:
            found.setdefault((str(st), str(workload)), set()).add(str(variant))
        return found

    def run_progress(self, run_id: int) -> list[GuestProgress]:
        """Each guest's part of run ``run_id``, in the order the guests were added."""
        cur = self._conn.execute(
            "SELECT g.name, g.variant, g.host,"
            " COUNT(DISTINCT CASE WHEN i.ok THEN i.iteration END), SUM(1 - i.ok),"
            " MIN(i.started), MAX(i.ended)"
            " FROM iteration i JOIN guest g ON g.id=i.guest_id WHERE i.run_id=?"
            " GROUP BY g.id ORDER BY g.id",
            (run_id,),
        )
        return [GuestProgress(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], r[6]) for r in cur]

    def stop_reason(self, run_id: int) -> str | None:
        row = self._conn.execute("SELECT reason FROM stop WHERE run_id=?", (run_id,)).fetchone()
        return None if row is None else str(row[0])

    def environment(self, run_id: int) -> list[EnvironmentRecord]:
        """Every host's and guest's facts at each start of run ``run_id``, oldest first."""
        cur = self._conn.execute(
            "SELECT scope, name, facts, recorded FROM environment WHERE run_id=? ORDER BY id",
            (run_id,),
        )
        return [EnvironmentRecord(r[0], r[1], json.loads(r[2]), r[3]) for r in cur]

    def stop_interval(self, run_id: int) -> str | None:
        """The interval a run's --until rule stopped on, as stored (JSON), if it did."""
        row = self._conn.execute("SELECT interval FROM stop WHERE run_id=?", (run_id,))
        found = row.fetchone()
        return None if found is None or found[0] is None else str(found[0])

    def failed_attempts(self, run_id: int, limit: int = 20) -> list[FailedAttempt]:
        """The last ``limit`` failed attempts of a run, oldest first."""
        cur = self._conn.execute(
            "SELECT g.name, i.iteration, i.attempt, i.started, i.exit_status, i.output_tail"
            " FROM iteration i JOIN guest g ON g.id=i.guest_id"
            " WHERE i.run_id=? AND NOT i.ok ORDER BY i.started DESC LIMIT ?",
            (run_id, limit),
        )
        return [FailedAttempt(r[0], r[1], r[2], r[3], r[4], r[5] or "") for r in cur][::-1]

    def placement_counts(self, run_id: int) -> dict[tuple[str, str], int]:
        """(guest, "own" or "swapped") -> iterations run in that placement."""
        cur = self._conn.execute(
            "SELECT g.name, p.label, COUNT(*) FROM placement p JOIN guest g ON g.id=p.guest_id"
            " WHERE p.run_id=? GROUP BY g.name, p.label",
            (run_id,),
        )
        return {(r[0], r[1]): int(r[2]) for r in cur}

    def orphans(self) -> dict[str, int]:
        """Rows whose owner is gone (a store damaged by hand, or by a bug): what of each."""
        return self._counted(ORPHANS)

    def _counted(self, queries: dict[str, str]) -> dict[str, int]:
        """Each query's count; one that a damaged page stops is left out (the integrity
        check, run first, reports the damage)."""
        counts = {}
        for what, sql in queries.items():
            try:
                counts[what] = int(self._conn.execute(sql).fetchone()[0])
            except sqlite3.DatabaseError as err:
                if not _damaged(err):
                    raise
        return counts

    def counts(self) -> dict[str, int]:
        tables = ("study", "run", "guest", "iteration", "sample")
        return self._counted({table: f"SELECT COUNT(*) FROM {table}" for table in tables})


def _damaged(err: sqlite3.DatabaseError) -> bool:
    code = (getattr(err, "sqlite_errorcode", None) or 0) & 0xFF
    return code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or "malformed" in str(err)
