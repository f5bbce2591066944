"""The store under hostile conditions, with real files and real processes: ``lab store
check`` searches an index for every row it checks (it was quadratic), and every SQLite
failure is one line naming the store with the documented status, never a traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lab.store import IterationRecord, MetricInfo, Store
from lab.store.listing import ORPHANS


def make_store(path: Path, iterations: int = 50) -> Path:
    """A real store: one study, two guests, one run, ``iterations`` samples per guest."""
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, None, iterations,
                               [MetricInfo("t", "s", "lower")])  # fmt: skip
        for variant, base in (("thp", 10.0), ("shp1g", 10.5)):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, metrics={"t": base + (i % 7) / 10})
                for i in range(1, iterations + 1)
            ])  # fmt: skip
    return path


# -- lab store check is linear ---------------------------------------------------------------


@pytest.mark.parametrize("what", sorted(ORPHANS))
def test_each_orphan_query_searches_an_index_per_row(tmp_path: Path, what: str) -> None:
    """One table scanned, the owner searched by an index for each row: never a scan inside
    a scan. The samples' query searched iteration_boot by (run, guest) only, reading every
    attempt of the guest for each sample: 40,000 samples took 60 s."""
    make_store(tmp_path / "lab.db")
    conn = sqlite3.connect(tmp_path / "lab.db")
    plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + ORPHANS[what])]
    conn.close()
    scans = [step for step in plan if step.startswith("SCAN")]
    searches = [step for step in plan if step.startswith("SEARCH")]
    assert len(scans) == 1, plan
    assert len(searches) == 1, plan
    assert "USING INTEGER PRIMARY KEY" in searches[0] or "USING INDEX" in searches[0], plan
    if what == "samples without their attempt":  # by the whole key, not a prefix of it
        assert "(run_id=? AND guest_id=? AND iteration=?)" in searches[0], plan
