"""`lab import` in any row order and at any scale, with nothing lost (issue 39 §1).

A file's rows in the iterations' order, grouped by metric or shuffled give the same store;
the lookups an import makes per row or per run stay lookups (no scan growing with the store);
a run refuses metrics past MAX_METRICS. Time itself is measured by bench/import_orders.py.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from lab.importers import batch, ingest
from lab.importers.ingest import ImportOptions, import_file
from lab.importers.malformed import MalformedInputError
from lab.store import Store, bulk, staged

HEADER = "variant,workload,metric,iteration,boot,placement,cpus,value,direction\n"


def _rows(iterations: int = 12) -> list[str]:
    """Two guests, three metrics, a reboot after iteration 6, swapped placements."""
    rows = []
    for variant in ("thp", "shp1g"):
        for i in range(1, iterations + 1):
            boot = f"{variant}-b{1 if i <= 6 else 2}"
            label = "own" if i % 4 < 2 else "swapped"
            cpus = '"[2, 3]"' if (label == "own") == (variant == "thp") else '"[4, 5]"'
            for metric in ("t", "u", "v"):
                value = i * 1.5 + len(metric) + (variant == "thp")
                rows.append(f"{variant},w,{metric},{i},{boot},{label},{cpus},{value},lower\n")
    return rows


def _stored(db: Path) -> tuple[list[tuple[object, ...]], ...]:
    """What the store holds, the sources' lines as sets of the rows' texts (their line numbers
    differ between orders)."""
    conn = sqlite3.connect(db)
    iterations = conn.execute(
        "SELECT g.variant, i.iteration, i.attempt, i.ok, i.boot_id, i.source FROM iteration i"
        " JOIN guest g ON g.id = i.guest_id ORDER BY 1, 2"
    ).fetchall()
    samples = conn.execute(
        "SELECT g.variant, s.iteration, s.metric, s.value FROM sample s"
        " JOIN guest g ON g.id = s.guest_id ORDER BY 1, 2, 3"
    ).fetchall()
    placements = conn.execute(
        "SELECT g.variant, p.iteration, p.label, p.cpus FROM placement p"
        " JOIN guest g ON g.id = p.guest_id ORDER BY 1, 2"
    ).fetchall()
    conn.close()
    lines = [(*row[:5], len(row[5].rpartition(":")[2].split(","))) for row in iterations]
    return lines, samples, placements


def _import(tmp_path: Path, name: str, rows: list[str]) -> Path:
    path = tmp_path / f"{name}.csv"
    path.write_text(HEADER + "".join(rows))
    db = tmp_path / f"{name}.db"
    with Store.open(db) as store:
        import_file(store, path, ImportOptions())
    return db


@pytest.mark.parametrize("order", ["metric", "shuffled", "reversed"])
def test_any_row_order_stores_what_the_iterations_order_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    # batches and merged chunks of a few samples: every path between them is taken
    monkeypatch.setattr(ingest, "BATCH", 7)
    monkeypatch.setattr(ingest, "LINES_HELD", 4)
    monkeypatch.setattr(batch.Late, "HELD", 3)
    monkeypatch.setattr(staged, "CHUNK", 5)
    rows = _rows()
    expected = _stored(_import(tmp_path, "iteration", rows))
    if order == "metric":
        other = sorted(rows, key=lambda row: row.split(",")[2])
    elif order == "shuffled":
        other = random.Random(39).sample(rows, len(rows))
    else:
        other = rows[::-1]
    got = _stored(_import(tmp_path, order, other))
    assert got == expected
    iterations, samples, placements = got
    assert len(iterations) == 24 and len(samples) == 72 and len(placements) == 24
    assert {row[4] for row in iterations} == {"thp-b1", "thp-b2", "shp1g-b1", "shp1g-b2"}
    assert all(row[5] == 3 for row in iterations)  # each source names its three lines


def test_a_row_before_its_iterations_first_keeps_its_boot(tmp_path: Path) -> None:
    # iteration 1's rows come after iteration 2's: they were merged without their boot
    rows = [
        "thp,w,t,2,b1,,,1.0,lower\n",
        "thp,w,t,1,b1,,,2.0,lower\n",
        "thp,w,u,1,b1,,,2.0,lower\n",
    ]
    iterations, samples, _ = _stored(_import(tmp_path, "late", rows))
    assert [(row[1], row[4], row[5]) for row in iterations] == [(1, "b1", 2), (2, "b1", 1)]
    assert len(samples) == 3


def test_a_second_value_out_of_order_is_refused_and_the_first_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "BATCH", 2)
    rows = [
        "thp,w,t,3,,,,3.0,lower\n",
        "thp,w,t,1,,,,1.0,lower\n",
        "thp,w,u,2,,,,2.0,lower\n",
        "thp,w,t,1,,,,9.0,lower\n",  # line 5: iteration 1's second t
    ]
    path = tmp_path / "twice.csv"
    path.write_text(HEADER + "".join(rows))
    with Store.open(tmp_path / "twice.db") as store:
        with pytest.raises(MalformedInputError, match=r"twice.csv:5: a second 't' value"):
            import_file(store, path, ImportOptions())
        summary = import_file(store, path, ImportOptions(skip_bad=True))
    assert summary.bad_count == 1
    _, samples, _ = _stored(tmp_path / "twice.db")
    assert ("thp", 1, "t", 1.0) in samples and ("thp", 1, "t", 9.0) not in samples


@pytest.mark.parametrize("held", [1, 100])
def test_of_two_late_values_the_files_first_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: int
) -> None:
    # iteration 1 is made by u (line 2); both t values of it come in later batches: the
    # first (line 4) is inserted, the second (line 5) refused, in one statement or two
    monkeypatch.setattr(ingest, "BATCH", 1)
    monkeypatch.setattr(batch.Late, "HELD", held)
    rows = [
        "thp,w,u,1,,,,1.0,lower\n",
        "thp,w,v,2,,,,2.0,lower\n",
        "thp,w,t,1,,,,4.0,lower\n",
        "thp,w,t,1,,,,5.0,lower\n",
        "thp,w,v,1,,,,6.0,lower\n",
    ]
    path = tmp_path / "late.csv"
    path.write_text(HEADER + "".join(rows))
    with Store.open(tmp_path / "late.db") as store:
        with pytest.raises(MalformedInputError, match=r"late.csv:5: a second 't' value"):
            import_file(store, path, ImportOptions())
        summary = import_file(store, path, ImportOptions(skip_bad=True))
    assert summary.bad_count == 1 and summary.stored == 2
    conn = sqlite3.connect(tmp_path / "late.db")
    samples = conn.execute("SELECT iteration, metric, value FROM sample ORDER BY 1, 2").fetchall()
    assert samples == [(1, "t", 4.0), (1, "u", 1.0), (1, "v", 6.0), (2, "v", 2.0)]
    sources = conn.execute("SELECT source FROM iteration ORDER BY iteration").fetchall()
    assert [s.rpartition(":")[2] for (s,) in sources] == ["2,4,6", "3"]


def test_every_line_of_an_iterations_many_metrics_joins_its_source(tmp_path: Path) -> None:
    rows = [f"thp,w,m{m},1,,,,{m + 1},lower\n" for m in range(500)]
    db = _import(tmp_path, "wide", rows)
    (source,) = sqlite3.connect(db).execute("SELECT source FROM iteration").fetchone()
    assert source == f"{tmp_path / 'wide.csv'}:" + ",".join(str(n) for n in range(2, 502))


def test_a_run_takes_at_most_max_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch, "MAX_METRICS", 5)
    rows = [f"{v},w,m{m},1,,,,{m + 1},lower\n" for v in ("thp", "shp1g") for m in range(6)]
    path = tmp_path / "wide.csv"
    path.write_text(HEADER + "".join(rows))
    db = tmp_path / "wide.db"
    with Store.open(db) as store:
        with pytest.raises(MalformedInputError, match=r"more than 5 metrics \('m5' and on\)"):
            import_file(store, path, ImportOptions())
        summary = import_file(store, path, ImportOptions(skip_bad=True))
    assert summary.bad_count == 2  # m5 of each guest: the two guests share the run's count
    names = sqlite3.connect(db).execute("SELECT name FROM metric ORDER BY name").fetchall()
    assert [n for (n,) in names] == ["m0", "m1", "m2", "m3", "m4"]


def _statements(tmp_path: Path, runs: int) -> int:
    """The SQL statements an import of ``runs`` runs (two guests each) makes."""
    path = tmp_path / f"runs-{runs}.csv"
    with path.open("w") as f:
        f.write("run,variant,workload,metric,iteration,value,direction\n")
        for r in range(runs):
            for variant in ("thp", "shp1g"):
                f.write(f"s/r{r}/w,{variant},w,t,1,{r + 1},lower\n")
    count = 0

    def counted(_: str) -> None:
        nonlocal count
        count += 1

    with Store.open(tmp_path / f"runs-{runs}.db") as store:
        store._conn.set_trace_callback(counted)
        import_file(store, path, ImportOptions())
    return count


def test_statements_per_run_do_not_grow_with_the_runs(tmp_path: Path) -> None:
    # each new run read every run of its study back (and their metrics): statements grew with
    # the square of the runs (10,000 runs in one file did not finish in 300 s)
    few, many = _statements(tmp_path, 40), _statements(tmp_path, 160)
    assert many < 4.4 * few, (few, many)


def _plan(conn: sqlite3.Connection, sql: str, keys: list[list[object]]) -> str:
    rows = conn.execute("EXPLAIN QUERY PLAN " + sql, (json.dumps(keys),)).fetchall()
    return " / ".join(row[3] for row in rows)


def test_merge_lookups_seek_the_whole_key(tmp_path: Path) -> None:
    # with the iteration_boot index (run, guest, ok, boot, iteration) beside the primary key,
    # SQLite sought (run, guest) in it and scanned every attempt of the guest for each key
    db = tmp_path / "s.db"
    with Store.open(db):
        pass
    conn = sqlite3.connect(db)
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "iteration_boot" in indexes
    found = _plan(conn, bulk._FIND, [[1, 1, 1]])
    assert "iteration=?" in found and "iteration_boot" not in found, found
    metrics = _plan(conn, bulk._METRICS, [[1, 1, 1, "t"]])
    assert "metric=?" in metrics, metrics
