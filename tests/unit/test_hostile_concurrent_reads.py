"""``lab compare`` while a run is still recording: what a read gives stays one moment's
samples, and the arrays read beside them (iterations, boots, placements) stay aligned."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from lab.store import IterationRecord, MetricInfo, Store
from lab.store.parts import HEADER, PAIRS, read_frame

TIME = MetricInfo("time", "s", "lower")


def _gapped(path: Path) -> tuple[int, int]:
    """A run whose guest has iterations 1-100 but 50 (it failed): (run id, guest id)."""
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, None, 200, [TIME])
        guest = store.ensure_guest(study, "lab-thp", "thp")
        store.record(run, guest, [
            IterationRecord(i, 1, True, metrics={"time": float(i)})
            for i in range(1, 101) if i != 50
        ])  # fmt: skip
    return run, guest


class _WrittenAfterMax(sqlite3.Connection):
    """A connection on which, right after a statement asks for MAX(iteration), another
    process's run records its next iteration (as the runner does at any moment)."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        cursor = super().execute(sql, *args)
        if sql.startswith("SELECT MAX(iteration)"):
            writer = Store.open(self.db)  # type: ignore[attr-defined]
            writer.record(1, 1, [IterationRecord(101, 1, True, metrics={"time": 101.0})])
            writer.close()
        return cursor


def test_a_part_read_while_a_run_records_is_one_moments_samples(tmp_path: Path) -> None:
    """The first and last iteration, then the values, were three statements: the one
    sample recorded between them filled the count of a range 1-100 (one gap), and the
    values of 1-49, 51-101 were given iterations 1-100."""
    db = tmp_path / "lab.db"
    _gapped(db)
    conn = sqlite3.connect(db, isolation_level=None, factory=_WrittenAfterMax)
    conn.db = db  # type: ignore[attr-defined]
    frame = read_frame(conn, 1, 1, "time")
    samples, first, last, layout = HEADER.unpack_from(frame)
    assert (samples, first, last, layout) == (99, 1, 100, PAIRS)
    assert not conn.in_transaction
    conn.close()
