"""Failed attempts survive `lab export` -> `lab import`: each is a row of its own (ok 0, no
metric, no value) and comes back into the iteration table with every field it had, while a
file written before they were exported imports as it always did. The stores are compared
through SQLite itself, not lab's readers."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest

from lab.cli import main
from lab.importers.jsonl import read_jsonl
from lab.importers.tabular import read_csv
from lab.store import EXPORT_COLUMNS, IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")

METRICS = [MetricInfo("wall_s", "s", "lower")]
T0 = 1.7e9
# what lab run keeps of a guest's reset: the error first, then the output's end, which ends
# with a newline and holds commas, quotes and lines of its own
RESET = 'guest reset during the iteration\nmake: *** [all] "Error", 2\n\n'


def _ok(i: int, attempt: int, boot: str, value: float) -> IterationRecord:
    return IterationRecord(
        i, attempt, True, T0 + i * 20 + attempt, T0 + i * 20 + attempt + 9.5, 9.5, 8.25, 1.0,
        0, boot, None, f"journal:{i}", {"wall_s": value},
    )  # fmt: skip


def _failed(
    i: int, attempt: int, boot: str | None, status: int | None, tail: str
) -> IterationRecord:
    return IterationRecord(
        i, attempt, False, T0 + i * 20 + attempt, T0 + i * 20 + attempt + 3.0, 3.0, 2.5, 0.25,
        status, boot, tail, f"journal:{i}.{attempt}",
    )  # fmt: skip


def disturbed_study(path: Path) -> None:
    """A run as `lab run` records a disturbed one: on thp, iteration 2 failed twice (a guest
    reset, then an NFS restart with no exit status) before its attempt 3 succeeded in a new
    boot, and iteration 4 only failed (the run stopped there); shp1g ran clean. A second run
    has nothing but a failed attempt."""
    with Store.open(path) as store:
        study = store.ensure_study("s", "disturbed")
        # made in the order an import makes them (the export's): compare lists guests by id
        shp = store.ensure_guest(study, "lab-shp1g", "shp1g", host="h1")
        thp = store.ensure_guest(study, "lab-thp", "thp", host="h1")
        run = store.ensure_run(study, "s/gdb", "gdb-build", {"size": 1}, "sync", 4, METRICS)
        store.record(run, thp, [
            _ok(1, 1, "boot-a", 140.5),
            _failed(2, 1, "boot-a", 137, RESET),
            _failed(2, 2, None, None, "nfs server not responding, still trying"),
            _ok(2, 3, "boot-b", 141.25),
            _ok(3, 1, "boot-b", 139.0),
            _failed(4, 1, "boot-b", 2, "  leading and trailing blanks  "),
        ])  # fmt: skip
        store.record(run, shp, [_ok(i, 1, "boot-c", 130.0 + i) for i in range(1, 4)])
        for i in range(1, 5):
            store.record_placement(run, thp, i, "own" if i % 2 else "swapped", [3, 4])
        dead = store.ensure_run(study, "s/stream", "stream", {}, "sync", 1, METRICS)
        store.record(dead, shp, [_failed(1, 1, "boot-c", 1, "stream: cannot allocate")])


ITERATIONS = (
    "SELECT r.key, g.name, i.iteration, i.attempt, i.ok, i.started, i.ended, i.wall, i.user,"
    " i.sys, i.exit_status, i.boot_id, i.output_tail, i.source FROM iteration i"
    " JOIN run r ON r.id = i.run_id JOIN guest g ON g.id = i.guest_id"
)
SAMPLES = (
    "SELECT r.key, g.name, s.iteration, s.metric, s.value FROM sample s"
    " JOIN run r ON r.id = s.run_id JOIN guest g ON g.id = s.guest_id"
)
PLACEMENTS = (
    "SELECT r.key, g.name, p.iteration, p.label, p.cpus FROM placement p"
    " JOIN run r ON r.id = p.run_id JOIN guest g ON g.id = p.guest_id"
)


def rows(path: Path, query: str, where: str = "") -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute(query + where).fetchall(), key=repr)
    finally:
        conn.close()


def export(db: Path, out: Path, fmt: str) -> None:
    assert main(["export", "--db", str(db), "--format", fmt, "--out", str(out)]) == 0


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_failed_attempts_come_back_with_every_field(
    tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source, again, out = tmp_path / "source.db", tmp_path / "again.db", tmp_path / f"x.{fmt}"
    disturbed_study(source)
    export(source, out, fmt)
    assert "wrote 10 row(s) (6 sample(s), 4 failed attempt(s))" in capsys.readouterr().err
    assert main(["import", str(out), "--db", str(again)]) == 0
    assert "4 failed attempt(s) restored" in capsys.readouterr().err
    failed = rows(source, ITERATIONS, " WHERE i.ok = 0")
    assert len(failed) == 4
    assert rows(again, ITERATIONS, " WHERE i.ok = 0") == failed
    # a successful attempt keeps its number (attempt 3 after two failures), start, boot and
    # source (its row's, not the import's file:line)
    kept = "SELECT r.key, g.name, i.iteration, i.attempt, i.started, i.boot_id, i.source"
    kept += " FROM iteration i JOIN run r ON r.id = i.run_id JOIN guest g ON g.id = i.guest_id"
    kept += " WHERE i.ok = 1"
    assert rows(again, kept) == rows(source, kept)
    assert ("s/gdb", "lab-thp", 2, 3, T0 + 43, "boot-b", "journal:2") in rows(again, kept)
    assert rows(again, SAMPLES) == rows(source, SAMPLES)
    assert rows(again, PLACEMENTS) == rows(source, PLACEMENTS)  # iteration 4's: a failure's


def test_rows_of_failed_attempts_stand_in_iteration_and_attempt_order(tmp_path: Path) -> None:
    source, out = tmp_path / "source.db", tmp_path / "x.csv"
    disturbed_study(source)
    export(source, out, "csv")
    table = list(csv.DictReader(out.open(newline="")))
    assert list(table[0]) == list(EXPORT_COLUMNS)
    thp = [(r["iteration"], r["attempt"], r["ok"], r["metric"], r["value"], r["exit_status"])
           for r in table if r["run"] == "s/gdb" and r["guest"] == "lab-thp"]  # fmt: skip
    assert thp == [  # a success's exit status is its attempt's, 0
        ("1", "1", "1", "wall_s", "140.5", "0"),
        ("2", "1", "0", "", "", "137"),
        ("2", "2", "0", "", "", ""),
        ("2", "3", "1", "wall_s", "141.25", "0"),
        ("3", "1", "1", "wall_s", "139.0", "0"),
        ("4", "1", "0", "", "", "2"),
    ]
    reset = next(r for r in table if r["exit_status"] == "137")
    assert (reset["error"], reset["boot"], reset["placement"]) == (RESET, "boot-a", "swapped")
    assert (reset["wall"], reset["user"], reset["sys"]) == ("3.0", "2.5", "0.25")
    dead = [r for r in table if r["run"] == "s/stream"]  # a run with no sample at all
    assert [(r["ok"], r["error"]) for r in dead] == [("0", "stream: cannot allocate")]


def test_the_imported_store_compares_as_the_original(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed attempts are no samples: the summary and the verdict do not change, and the
    failure counts are the original's."""
    source, again, out = tmp_path / "source.db", tmp_path / "again.db", tmp_path / "x.csv"
    disturbed_study(source)
    export(source, out, "csv")
    assert main(["import", str(out), "--db", str(again)]) == 0
    capsys.readouterr()
    reports = []
    for db in (source, again):
        assert main(["compare", "--db", str(db), "--run", "s/gdb", "--format", "json"]) == 0
        reports.append(capsys.readouterr().out.replace(str(db), "DB"))
    assert json.loads(reports[0]) and reports[1] == reports[0]
    with Store.open(source, create=False) as one, Store.open(again, create=False) as other:
        assert other.attempt_counts() == one.attempt_counts()
        assert one.attempt_counts()[("s/gdb", "lab-thp")] == (3, 3)


def test_a_file_written_before_failed_attempts_were_exported_imports_as_before(
    tmp_path: Path,
) -> None:
    """The old export: its first twenty columns, samples only. Each iteration comes back as
    attempt 1, as an import always numbered them, and nothing failed is made up."""
    source, again, out = tmp_path / "source.db", tmp_path / "again.db", tmp_path / "x.csv"
    disturbed_study(source)
    export(source, out, "csv")
    old = io.StringIO()
    writer = csv.writer(old, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS[:20])
    for row in csv.DictReader(out.open(newline="")):
        if row["ok"] == "1":
            writer.writerow([row[c] for c in EXPORT_COLUMNS[:20]])
    (tmp_path / "old.csv").write_text(old.getvalue())
    assert main(["import", str(tmp_path / "old.csv"), "--db", str(again)]) == 0
    query = "SELECT r.key, g.name, i.iteration, i.attempt, i.ok, i.boot_id FROM iteration i"
    got = rows(again, query + " JOIN run r ON r.id = i.run_id JOIN guest g ON g.id = i.guest_id")
    want = [("s/gdb", guest, i, 1, 1, boot) for guest, i, boot in (
        ("lab-thp", 1, "boot-a"), ("lab-thp", 2, "boot-b"), ("lab-thp", 3, "boot-b"),
        ("lab-shp1g", 1, "boot-c"), ("lab-shp1g", 2, "boot-c"), ("lab-shp1g", 3, "boot-c"),
    )]  # fmt: skip
    assert got == sorted(want, key=repr)
    assert rows(again, SAMPLES) == rows(source, SAMPLES)


def test_importing_the_failed_attempts_again_keeps_those_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, again = tmp_path / "source.db", tmp_path / "again.db"
    disturbed_study(source)
    export(source, tmp_path / "x.csv", "csv")
    export(source, tmp_path / "x.jsonl", "jsonl")
    assert main(["import", str(tmp_path / "x.csv"), "--db", str(again)]) == 0
    before = rows(again, ITERATIONS)
    capsys.readouterr()
    assert main(["import", str(tmp_path / "x.jsonl"), "--db", str(again)]) == 0
    assert "0 failed attempt(s) restored, 4 already stored" in capsys.readouterr().err
    assert rows(again, ITERATIONS) == before


def test_a_failed_attempts_row_that_cannot_be_stored_is_a_malformed_line() -> None:
    head = "variant,workload,iteration,attempt,metric,value,ok,exit_status,wall,error\n"
    parsed = read_csv(
        head + "a,w,1,,,,0,1,,no attempt\n"
        "a,w,2,1,t_s,2.5,0,1,,a value\n"
        "a,w,3,1,,,0,x,,bad status\n"
        "a,w,4,1,,,0,,inf,bad wall\n"
        'a,w,5,2,,,0,9,1.5," kept as it is "\n',
        "f.csv", {},
    )  # fmt: skip
    assert [(b.line, b.message) for b in parsed.bad] == [
        (2, "a failed attempt (ok 0) with no iteration or no attempt"),
        (3, "a failed attempt (ok 0) has a metric or a value; it has no sample"),
        (4, "exit_status 'x' is not a whole number"),
        (5, "wall: value inf is not a finite number"),
    ]
    (failed,) = parsed.failed
    assert (failed.iteration, failed.attempt, failed.exit_status, failed.wall, failed.error) == (
        5, 2, 9, 1.5, " kept as it is ",
    )  # fmt: skip
    (line,) = read_jsonl(
        '{"variant": "a", "workload": "w", "iteration": 1, "attempt": 1, "ok": 0,'
        ' "error": "tail\\n", "source": null}\n', "f.jsonl", {},
    ).failed  # fmt: skip
    assert (line.error, line.source, line.started) == ("tail\n", None, None)


def test_parquet_holds_the_failed_attempts_typed(tmp_path: Path) -> None:
    """Batches of samples only, of samples and failed attempts, and of failed attempts only
    (a run with no sample) are each written with every column."""
    pq = pytest.importorskip("pyarrow.parquet")
    source, out = tmp_path / "source.db", tmp_path / "x.parquet"
    disturbed_study(source)
    export(source, out, "parquet")
    table = pq.read_table(out)
    assert table.column_names == list(EXPORT_COLUMNS)
    types = {name: str(table.schema.field(name).type) for name in ("ok", "exit_status", "wall")}
    assert types == {"ok": "int64", "exit_status": "int64", "wall": "double"}
    with Store.open(source, create=False) as store:
        want = [tuple(getattr(r, c) for c in EXPORT_COLUMNS) for r in store.export_rows()]
    got = list(zip(*(table.column(c).to_pylist() for c in EXPORT_COLUMNS), strict=True))
    assert got == want and len(got) == 10
    assert [r[EXPORT_COLUMNS.index("ok")] for r in got].count(0) == 4
