"""``lab export``: every sample with its context, as CSV and JSON lines."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from lab.cli import main
from lab.store import EXPORT_COLUMNS, IterationRecord, MetricInfo, Store


@pytest.fixture(autouse=True)
def no_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")


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
    assert len(rows) == 4 and list(rows[0]) == list(EXPORT_COLUMNS)
    first = rows[0]
    assert (first["iteration"], first["attempt"], first["metric"], first["value"]) == (
        "1", "2", "r", "0.4",
    )  # fmt: skip
    assert first["source"] == "loop.txt:3" and json.loads(first["params"]) == {"threads": 2}


def test_jsonl_to_file(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "all.jsonl"
    assert main(["export", "--db", str(db), "--format", "jsonl", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["iteration"], r["metric"], r["value"]) for r in rows] == [
        (1, "r", 0.4), (1, "t", 2.5), (2, "r", 0.5), (2, "t", 2.0),
    ]  # fmt: skip
    assert rows[2]["started"] is None and rows[0]["ended"] == 12.5
    assert "wrote 4 sample(s)" in capsys.readouterr().err


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
    assert len(samples) == 4 and all("record" not in s for s in samples)
    again = tmp_path / "again.db"
    assert main(["import", str(out), "--db", str(again)]) == 0
    assert "skipped" not in capsys.readouterr().err  # no line refused: the environment is known
    with Store.open(again) as store:
        assert sum(s.values.size for s in store.values()) == 4
