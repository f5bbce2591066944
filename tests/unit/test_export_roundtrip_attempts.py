"""A study archived with `lab export` and restored with `lab import` has the original's
iteration rows: a successful attempt's row in the export carries what the iteration table
holds of it (number, start, end, source, boot, exit status, wall, user and sys times), and
the import puts each of them back. The store is made through the Store API as `lab run`
makes it, and both stores are read through SQLite itself, not lab's readers."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")

METRICS = [
    MetricInfo("wall_s", "s", "lower"),
    MetricInfo("maxrss_kib", "KiB", "lower"),
    MetricInfo("backing.anon_huge_kib", "KiB", None),
]
T0 = 1.75e9
THP = "journal:lab-thp:s/gdb"  # what lab run names an attempt's source
ODD = 'journal:lab-shp1g:s/gdb, "quoted"'  # a source the CSV has to quote
RESET = 'guest reset during the iteration\nmake: *** [all] "Error", 2\n'


def _ok(i: int, attempt: int, boot: str, source: str, **times: Any) -> IterationRecord:
    start = T0 + i * 60 + attempt * 7
    fields: dict[str, Any] = {
        "ended": start + 41.5, "wall": 41.5 + i / 8, "user": 38.25 + i, "sys": 2.125,
        "exit_status": 0,
    }  # fmt: skip
    fields.update(times)
    values = {
        "wall_s": 41.5 + i / 8,
        "maxrss_kib": 4_100_000.0 + i,
        "backing.anon_huge_kib": 2048.0,
    }
    return IterationRecord(
        i, attempt, True, start, boot_id=boot, source=source, metrics=values, **fields
    )


def _failed(
    i: int, attempt: int, boot: str | None, status: int | None, tail: str
) -> IterationRecord:
    start = T0 + i * 60 + attempt * 7
    return IterationRecord(
        i, attempt, False, start, start + 3.0, 3.0, 2.5, 0.25, status, boot, tail, THP
    )


def lab_run_study(path: Path) -> None:
    """Two twins of one run as `lab run` records them: on thp, iteration 2's attempt 1 failed
    (a guest reset) and its attempt 2 succeeded in a new boot; iteration 3 failed twice
    before its attempt 3 succeeded; iteration 4 is a success whose end and times were not
    recorded (its command's exit status was, a non-zero one the workload accepts); placements
    swap every other iteration. shp1g ran clean, its source one the CSV quotes."""
    with Store.open(path) as store:
        study = store.ensure_study("s", "archived and restored")
        shp = store.ensure_guest(study, "lab-shp1g", "shp1g", host="h1")
        thp = store.ensure_guest(study, "lab-thp", "thp", host="h1")
        run = store.ensure_run(study, "s/gdb", "gdb-build", {"jobs": 4}, "sync", 4, METRICS)
        store.record(run, thp, [
            _ok(1, 1, "boot-a", THP),
            _failed(2, 1, "boot-a", 137, RESET),
            _ok(2, 2, "boot-b", THP),
            _failed(3, 1, "boot-b", 2, "make: *** [all] Error 2"),
            _failed(3, 2, None, None, "nfs server not responding, still trying"),
            _ok(3, 3, "boot-c", THP, exit_status=0),
            _ok(4, 1, "boot-c", THP, ended=None, wall=None, user=None, sys=None, exit_status=3),
        ])  # fmt: skip
        store.record(run, shp, [_ok(i, 1, "boot-d", ODD) for i in range(1, 5)])
        for i in range(1, 5):
            store.record_placement(run, thp, i, "own" if i % 2 else "swapped", [3, 4])


# everything of an iteration row but the ids of its run and guest, which the import makes
# anew (the names stand for them)
ITERATIONS = (
    "SELECT r.key, g.name, i.iteration, i.attempt, i.ok, i.started, i.ended, i.wall, i.user,"
    " i.sys, i.exit_status, i.boot_id, i.source, i.output_tail FROM iteration i"
    " JOIN run r ON r.id = i.run_id JOIN guest g ON g.id = i.guest_id"
    " ORDER BY r.key, g.name, i.iteration, i.attempt"
)
SAMPLES = (
    "SELECT r.key, g.name, s.iteration, s.metric, s.value FROM sample s"
    " JOIN run r ON r.id = s.run_id JOIN guest g ON g.id = s.guest_id"
    " ORDER BY r.key, g.name, s.iteration, s.metric"
)
PLACEMENTS = (
    "SELECT r.key, g.name, p.iteration, p.label, p.cpus FROM placement p"
    " JOIN run r ON r.id = p.run_id JOIN guest g ON g.id = p.guest_id"
    " ORDER BY r.key, g.name, p.iteration"
)


def rows(path: Path, query: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def export(db: Path, out: Path, fmt: str) -> None:
    assert main(["export", "--db", str(db), "--format", fmt, "--out", str(out)]) == 0


def table(out: Path, fmt: str) -> list[dict[str, Any]]:
    """An export's rows as dicts of its columns, in the file's order."""
    if fmt == "csv":
        return list(csv.DictReader(out.open(newline="")))
    if fmt == "jsonl":
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        return [line for line in lines if line.get("record") != "environment"]
    pq = pytest.importorskip("pyarrow.parquet")
    return pq.read_table(out).to_pylist()  # type: ignore[no-any-return]


FORMATS = ["csv", "jsonl", "parquet"]


def _text(value: object) -> str:
    """A value as the CSV holds it (and JSON and Parquet, typed)."""
    return "" if value is None else str(value)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_samples_row_carries_its_attempts_exit_status_and_times(tmp_path: Path, fmt: str) -> None:
    db, out = tmp_path / "source.db", tmp_path / f"x.{fmt}"
    lab_run_study(db)
    export(db, out, fmt)
    got = table(out, fmt)
    assert len(got) == 8 * 3 + 3  # three samples of each success, and the failed attempts
    want = {
        (guest, i, attempt): row
        for guest, i, attempt, *row in rows(
            db,
            "SELECT g.name, i.iteration, i.attempt, i.exit_status, i.wall, i.user, i.sys,"
            " i.ended, i.source, i.boot_id FROM iteration i JOIN guest g ON g.id = i.guest_id"
            " WHERE i.ok = 1",
        )
    }
    samples = [r for r in got if _text(r["ok"]) == "1"]
    assert len(samples) == 24
    for r in samples:
        key = (r["guest"], int(r["iteration"]), int(r["attempt"]))
        fields = [r[c] for c in ("exit_status", "wall", "user", "sys", "ended", "source", "boot")]
        if fmt == "csv":
            assert fields == [_text(v) for v in want[key]], key
        else:
            assert fields == want[key], key
        assert r["error"] in ("", None)
    by_key = {(r["guest"], int(r["iteration"]), r["metric"]): r for r in samples}
    swapped = by_key[("lab-thp", 2, "wall_s")]
    assert (_text(swapped["attempt"]), _text(swapped["wall"]), _text(swapped["user"])) == (
        "2", "41.75", "40.25",
    )  # fmt: skip
    untimed = by_key[("lab-thp", 4, "maxrss_kib")]
    assert (_text(untimed["exit_status"]), _text(untimed["wall"]), _text(untimed["ended"])) == (
        "3", "", "",
    )  # fmt: skip


def test_the_store_hands_a_samples_row_with_every_column(tmp_path: Path) -> None:
    """``Store.export_rows`` (what tests and tools read) has a sample's ok and its attempt's
    fields in their places, as the files have them."""
    db = tmp_path / "source.db"
    lab_run_study(db)
    with Store.open(db, create=False) as store:
        got = [r for r in store.export_rows() if r.guest == "lab-thp" and r.iteration == 2]
    assert [(r.attempt, r.ok, r.metric, r.exit_status, r.wall, r.error) for r in got] == [
        (1, 0, None, 137, 3.0, RESET),
        (2, 1, "backing.anon_huge_kib", 0, 41.75, None),
        (2, 1, "maxrss_kib", 0, 41.75, None),
        (2, 1, "wall_s", 0, 41.75, None),
    ]
    assert {(r.user, r.sys, r.boot, r.placement) for r in got if r.ok} == {
        (40.25, 2.125, "boot-b", "swapped")
    }
