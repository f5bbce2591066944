"""A study archived with `lab export` and restored with `lab import` has the original's
iteration rows: a successful attempt's row in the export carries what the iteration table
holds of it (number, start, end, source, boot, exit status, wall, user and sys times), and
the import puts each of them back. The store is made through the Store API as `lab run`
makes it, and both stores are read through SQLite itself, not lab's readers."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lab.cli import main
from lab.importers import ingest
from lab.importers.jsonl import read_jsonl
from lab.importers.tabular import read_csv
from lab.store import EXPORT_COLUMNS, IterationRecord, MetricInfo, Store

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


def restored(tmp_path: Path, fmt: str) -> tuple[Path, Path]:
    """The study, and a new store that its export (``fmt``) was imported into."""
    source, again, out = tmp_path / "source.db", tmp_path / "again.db", tmp_path / f"x.{fmt}"
    lab_run_study(source)
    export(source, out, fmt)
    assert main(["import", str(out), "--db", str(again)]) == 0
    return source, again


@pytest.mark.parametrize("batch", [ingest.BATCH, 4])
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_exported_study_imports_back_with_the_same_iteration_rows(
    tmp_path: Path, fmt: str, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every field of every attempt, the samples and the placements are the original's; only
    the ids of the run and guest differ (new rows of a new store). With batches of 4 samples,
    an iteration's three samples are stored in two batches: the second joins the iteration the
    first made, its source and attempt as they were. (lab import reads no Parquet.)"""
    monkeypatch.setattr(ingest, "BATCH", batch)
    source, again = restored(tmp_path, fmt)
    want = rows(source, ITERATIONS)
    assert len(want) == 11 and rows(again, ITERATIONS) == want
    assert rows(again, SAMPLES) == rows(source, SAMPLES)
    assert rows(again, PLACEMENTS) == rows(source, PLACEMENTS)
    ok = [r[:5] + r[6:13] for r in rows(again, ITERATIONS) if r[1] == "lab-thp" and r[4] == 1]
    assert ok == [  # each success with its number, end, times, exit status, boot and source
        ("s/gdb", "lab-thp", 1, 1, 1, T0 + 108.5, 41.625, 39.25, 2.125, 0, "boot-a", THP),
        ("s/gdb", "lab-thp", 2, 2, 1, T0 + 175.5, 41.75, 40.25, 2.125, 0, "boot-b", THP),
        ("s/gdb", "lab-thp", 3, 3, 1, T0 + 242.5, 41.875, 41.25, 2.125, 0, "boot-c", THP),
        ("s/gdb", "lab-thp", 4, 1, 1, None, None, None, None, 3, "boot-c", THP),
    ]


def test_the_restored_store_reads_as_the_original(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What lab runs and the store's readers make of the attempts (which succeeded, how many
    failed, when the guest's first and last attempts ran) is the original's."""
    source, again = restored(tmp_path, "csv")
    with Store.open(source, create=False) as one, Store.open(again, create=False) as other:
        assert other.attempt_counts() == one.attempt_counts()
        (run,) = one.runs()
        (copy,) = other.runs()
        assert other.run_progress(copy.id) == one.run_progress(run.id)
    capsys.readouterr()
    shown = []
    for db in (source, again):
        assert main(["runs", "--db", str(db), "--format", "json"]) == 0
        (listed,) = json.loads(capsys.readouterr().out)
        del listed["created"]  # when the run's row was made: by the import, in the copy
        del listed["target_n"]  # the run's n: no column of the export's (a run's, not an attempt's)
        shown.append(listed)
    assert shown[1] == shown[0]


def _rewritten(out: Path, keep: tuple[str, ...], blank: tuple[str, ...] = ()) -> str:
    """The CSV export ``out`` with only the columns ``keep``, and ``blank`` emptied in every
    sample's row: what an older lab export wrote."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(keep)
    for row in csv.DictReader(out.open(newline="")):
        if row["ok"] == "1":
            writer.writerow(["" if c in blank else row[c] for c in keep])
    return text.getvalue()


def test_an_export_without_the_attempts_times_leaves_them_empty(tmp_path: Path) -> None:
    """An export written before the samples' rows carried their attempt's exit status and
    times (those columns empty, ok 1) imports as before, with those empty in the store (none
    made up), and with what it does carry (number, start, end, source, boot) restored."""
    source, out, old = tmp_path / "source.db", tmp_path / "x.csv", tmp_path / "old.csv"
    lab_run_study(source)
    export(source, out, "csv")
    old.write_text(_rewritten(out, EXPORT_COLUMNS, ("exit_status", "wall", "user", "sys")))
    again = tmp_path / "again.db"
    assert main(["import", str(old), "--db", str(again)]) == 0
    want = [(*r[:7], None, None, None, None, *r[11:]) for r in rows(source, ITERATIONS) if r[4]]
    assert rows(again, ITERATIONS) == want
    assert rows(again, SAMPLES) == rows(source, SAMPLES)


def test_a_file_without_the_ok_column_imports_as_it_always_did(tmp_path: Path) -> None:
    """Without ``ok`` a row is not lab export's: its attempt, end and source columns are
    ignored (each iteration is attempt 1 of the input's file:line), as in every lab before."""
    source, out, old = tmp_path / "source.db", tmp_path / "x.csv", tmp_path / "old.csv"
    lab_run_study(source)
    export(source, out, "csv")
    old.write_text(_rewritten(out, EXPORT_COLUMNS[:20]))
    again = tmp_path / "again.db"
    assert main(["import", str(old), "--db", str(again)]) == 0
    got = rows(again, ITERATIONS)
    assert {r[3:5] + r[6:11] for r in got} == {(1, 1, None, None, None, None, None)}
    lines = [r[12] for r in got if r[1] == "lab-thp" and r[2] == 2]
    assert lines == [f"{old}:17,18,19"]  # its samples' lines, after shp1g's and iteration 1's
    assert [r[:3] + r[5:6] + r[11:12] for r in got] == [
        r[:3] + r[5:6] + r[11:12] for r in rows(source, ITERATIONS) if r[4]
    ]


def test_a_successful_attempts_field_that_cannot_be_stored_is_a_malformed_line() -> None:
    """Read column by column or row by row (a quoted field sends a block to the csv module;
    a failed attempt among the rows sends it row by row), the same rows are refused."""
    head = "variant,workload,iteration,attempt,metric,value,ok,ended,exit_status,wall,source\n"
    body = (
        "a,w,1,2,t_s,1.5,1,1750000000.5,0,1.5, journal:a \n"
        "a,w,2,0,t_s,1.5,1,,,,\n"
        "a,w,3,1,t_s,1.5,1,,x,,\n"
        "a,w,4,1,t_s,1.5,1,,,inf,\n"
        "a,w,5,1,t_s,1.5,1,-5,,,\n"
        "a,w,6,,t_s,1.5,1,,,,\n"
        "a,w,7,5,t_s,1.5,,,,,\n"
    )
    bad = [
        (3, "attempt '0' is not a number from 1 to 2**53"),
        (4, "exit_status 'x' is not a whole number"),
        (5, "wall: value inf is not a finite number"),
        (6, "timestamp -5 is not a time between the years 1970 and 9999"),
    ]
    for extra in ("", 'a,w,8,1,"t_s",1.5,1,,,,\n', "a,w,9,1,,,0,,1,,\n"):
        parsed = read_csv(head + body + extra, "f.csv", {})
        assert [(b.line, b.message) for b in parsed.bad] == bad, extra
        attempts = {s.iteration: s.attempt for s in parsed.samples}
        assert attempts[1] == (2, 1750000000.5, 1.5, None, None, 0, " journal:a ")
        assert attempts[6] is None and attempts[7] is None  # nothing said; not lab export's
    (line,) = read_jsonl(
        '{"variant": "a", "workload": "w", "iteration": 3, "attempt": 2, "metric": "t_s",'
        ' "value": 2.5, "ok": 1, "wall": 2.5, "user": null, "source": "journal:a"}\n',
        "f.jsonl", {},
    ).samples  # fmt: skip
    assert line.attempt == (2, None, 2.5, None, None, None, "journal:a")
