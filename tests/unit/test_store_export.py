"""``lab export``: every sample with its context, as CSV and JSON lines."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from lab.cli import main
from lab.store import EXPORT_COLUMNS, IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "lab.db"
    with Store.open(path) as store:
        study = store.ensure_study("s")
        metrics = [MetricInfo("t", "s", "lower"), MetricInfo("r", "1/s", "higher")]
        run = store.ensure_run(study, "s/w", "w", {"threads": 2}, None, 2, metrics)
        guest = store.ensure_guest(study, "g", "thp")
        store.record(run, guest, [
            IterationRecord(1, 1, False, exit_status=1),  # failed attempt: no sample
            IterationRecord(1, 2, True, started=10.0, ended=12.5, source="loop.txt:3",
                            metrics={"t": 2.5, "r": 0.4}),
            IterationRecord(2, 1, True, metrics={"t": 2.0, "r": 0.5}),
        ])  # fmt: skip
    return path


def test_csv_to_stdout(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--db", str(db)]) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert len(rows) == 5 and list(rows[0]) == list(EXPORT_COLUMNS)
    failed, first = rows[0], rows[1]  # the failed attempt 1 of iteration 1, then attempt 2
    assert (failed["iteration"], failed["attempt"], failed["ok"], failed["exit_status"]) == (
        "1", "1", "0", "1",
    )  # fmt: skip
    assert failed["metric"] == failed["value"] == ""
    assert (first["iteration"], first["attempt"], first["metric"], first["value"]) == (
        "1", "2", "r", "0.4",
    )  # fmt: skip
    assert first["ok"] == "1" and first["exit_status"] == ""
    assert first["source"] == "loop.txt:3" and json.loads(first["params"]) == {"threads": 2}


def test_jsonl_to_file(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "all.jsonl"
    assert main(["export", "--db", str(db), "--format", "jsonl", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["iteration"], r["ok"], r["metric"], r["value"]) for r in rows] == [
        (1, 0, None, None), (1, 1, "r", 0.4), (1, 1, "t", 2.5), (2, 1, "r", 0.5), (2, 1, "t", 2.0),
    ]  # fmt: skip
    assert rows[3]["started"] is None and rows[1]["ended"] == 12.5
    assert "wrote 5 row(s) (4 sample(s), 1 failed attempt(s))" in capsys.readouterr().err


def test_unwritable_out(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--db", str(db), "--out", str(tmp_path / "no" / "x.csv")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_jsonl_carries_each_runs_environment_and_import_reads_the_samples_back(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.open(db) as store:
        store.record_environment(store.runs()[0].id, "host", "local", {"kernel": "6.1"})
    out = tmp_path / "all.jsonl"
    assert main(["export", "--db", str(db), "--format", "jsonl", "--out", str(out)]) == 0
    first, *samples = [json.loads(line) for line in out.read_text().splitlines()]
    assert first["record"] == "environment" and first["run"] == "s/w"
    assert (first["scope"], first["name"], first["facts"]) == ("host", "local", {"kernel": "6.1"})
    assert len(samples) == 5 and all("record" not in s for s in samples)
    again = tmp_path / "again.db"
    assert main(["import", str(out), "--db", str(again)]) == 0
    assert "skipped" not in capsys.readouterr().err  # no line refused: the environment is known
    with Store.open(again) as store:
        assert sum(s.values.size for s in store.values()) == 4


@pytest.fixture
def awkward(tmp_path: Path) -> Store:
    """Values that need quoting, escaping or null: commas, quotes, newlines, non-ASCII, inf."""
    store = Store.open(tmp_path / "awkward.db")
    study = store.ensure_study('ştudy, "q"')
    metrics = [MetricInfo("t", "s", "lower"), MetricInfo('r"x', "", "higher")]
    run = store.ensure_run(study, "k/1", "w,x", {"a": "é", "b": [1, 2]}, None, None, metrics)
    other = store.ensure_run(study, "k/0", "w,x", {}, None, None, metrics[:1])
    for name, variant, host in (("g2", "thp", "h\nb"), ("g1", "thp", "a"), ("z", "shp1g", "l")):
        guest = store.ensure_guest(study, name, variant, host=host)
        store.record(run, guest, [
            IterationRecord(1, 1, False, exit_status=1),
            IterationRecord(1, 2, True, started=10.5, ended=float("inf"), source='a,b"c:3\n',
                            metrics={"t": 0.1 + 0.2, 'r"x': 1e300}),
            IterationRecord(2, 1, True, started=1, metrics={"t": -0.0, 'r"x': 5e-324}),
            IterationRecord(3, 1, True, source="ünï:4", metrics={"t": 1.2345678901234567e17}),
        ])  # fmt: skip
        store.record(other, guest, [IterationRecord(7, 1, True, metrics={"t": 2.0})])
    return store


def test_csv_and_jsonl_are_what_the_csv_and_json_modules_write(awkward: Store) -> None:
    """The writers format rows themselves, a batch at a time; the text must be the same as
    csv.DictWriter's and json.dumps' of each row, whatever the batch size."""
    import io
    import math

    from lab.report.export import write_csv, write_jsonl

    want_csv, want_jsonl = io.StringIO(), io.StringIO()
    writer = csv.DictWriter(want_csv, EXPORT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in awkward.export_rows():
        writer.writerow(row.as_dict())
        data = {k: None if isinstance(v, float) and not math.isfinite(v) else v
                for k, v in row.as_dict().items()}  # fmt: skip
        want_jsonl.write(json.dumps(data, ensure_ascii=False) + "\n")
    for size in (1, 2, 1000):
        got_csv, got_jsonl = io.StringIO(), io.StringIO()
        assert write_csv(got_csv, awkward.export_batches(size=size)) == 21  # 3 failed
        assert write_jsonl(got_jsonl, awkward.export_batches(size=size)) == 21
        assert got_csv.getvalue() == want_csv.getvalue()
        assert got_jsonl.getvalue() == want_jsonl.getvalue()


def test_rows_come_in_study_workload_run_variant_host_guest_iteration_order(awkward: Store) -> None:
    rows = [
        (r.run, r.variant, r.host, r.guest, r.iteration, r.attempt, r.metric or "")
        for r in awkward.export_rows()
    ]
    assert rows == sorted(rows) and rows[0] == ("k/0", "shp1g", "l", "z", 7, 1, "t")
    assert len(list(awkward.export_rows(run="k/1"))) == 18  # 15 samples, 3 failed attempts
    assert list(awkward.export_rows(study="nothing")) == []


def test_parquet_without_pyarrow_says_what_to_install(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pyarrow" else find_spec(name, *a),
    )
    out = tmp_path / "all.parquet"
    assert main(["export", "--db", str(db), "--format", "parquet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "needs pyarrow, which is not installed" in err and "pip install './[parquet]'" in err
    assert not out.exists()


def test_parquet_is_written_to_a_file_only(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--db", str(db), "--format", "parquet"]) == 2
    assert "Pass --out FILE" in capsys.readouterr().err


def test_parquet_reads_back_typed(awkward: Store, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "all.parquet"
    assert (
        main(["export", "--db", str(awkward.path), "--format", "parquet", "--out", str(out)]) == 0
    )
    table = pq.read_table(out)
    assert table.column_names == list(EXPORT_COLUMNS)
    assert str(table.schema.field("iteration").type) == "int64"
    assert str(table.schema.field("value").type) == "double"
    want = [tuple(getattr(r, c) for c in EXPORT_COLUMNS) for r in awkward.export_rows()]
    got = list(zip(*(table.column(c).to_pylist() for c in EXPORT_COLUMNS), strict=True))
    assert got == want
