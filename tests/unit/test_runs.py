"""``lab runs`` and ``lab store check``, through the real command line on a real store."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

TIME = MetricInfo("time_s", "s", "lower")


def ok(i: int, value: float, attempt: int = 1) -> IterationRecord:
    return IterationRecord(i, attempt, True, started=100.0 + i, ended=100.5 + i, wall=0.5,
                           metrics={"time_s": value})  # fmt: skip


def failed(i: int, attempt: int, tail: str) -> IterationRecord:
    return IterationRecord(i, attempt, False, started=100.0 + i, exit_status=3, output_tail=tail)


@pytest.fixture(name="db")
def db_fixture(tmp_path: Path) -> Path:
    """Two runs of one workload that differ in a parameter, and one stopped early."""
    path = tmp_path / "lab.db"
    with Store.open(path) as store:
        study = store.ensure_study("hp")
        thp = store.ensure_guest(study, "lab-thp", "thp")
        shp = store.ensure_guest(study, "lab-shp1g", "shp1g")
        one = store.ensure_run(study, "sysbench-memory-aaaa11112222", "sysbench-memory",
                               {"threads": 1}, "concurrent", 3, [TIME])  # fmt: skip
        eight = store.ensure_run(study, "sysbench-memory-aaab33334444", "sysbench-memory",
                                 {"threads": 8}, "sync", 3, [TIME])  # fmt: skip
        store.record(one, thp, [ok(1, 2.0), ok(2, 2.1), failed(3, 1, "oops\n"), ok(3, 2.2, 2)])
        store.record(one, shp, [ok(1, 1.9), ok(2, 2.0), ok(3, 2.0)])
        store.record(eight, thp, [ok(1, 5.0)])
        store.record(eight, shp, [ok(1, 4.0)])
        store.record_stop(eight, "the verdict was reached")
    return path


def lab(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_runs_lists_each_run_with_its_progress(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = lab(capsys, "runs", "--db", str(db), "--json")
    assert code == 0
    runs = {r["key"]: r for r in json.loads(out)}
    one, eight = runs["sysbench-memory-aaaa11112222"], runs["sysbench-memory-aaab33334444"]
    assert one["params"] == {"threads": 1} and one["state"] == "complete"
    assert [(g["guest"], g["done"], g["failed"]) for g in one["guests"]] == [
        ("lab-thp", 3, 1),
        ("lab-shp1g", 3, 0),
    ]
    first, last = one["guests"][0]["first"], one["guests"][0]["last"]  # ISO 8601 moments
    assert (
        datetime.fromisoformat(first).timestamp(),
        datetime.fromisoformat(last).timestamp(),
    ) == (101.0, 103.5)
    assert eight["state"] == "stopped early" and eight["stopped"] == "the verdict was reached"
    code, out, _ = lab(capsys, "runs", "--db", str(db))
    assert code == 0 and "threads=8" in out and "stopped early" in out


def test_runs_show_by_unique_prefix(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = lab(capsys, "runs", "--db", str(db), "show", "sysbench-memory-aaaa", "--json")
    assert code == 0
    run = json.loads(out)
    assert run["key"] == "sysbench-memory-aaaa11112222"
    assert [(f["guest"], f["iteration"], f["attempt"]) for f in run["failures"]] == [
        ("lab-thp", 3, 1)
    ]
    assert run["failures"][0]["output_tail"] == "oops\n"
    # a run stored as concurrent (sync is the default now): its schedule is in the command
    assert (
        "lab run sysbench-memory --n 3 --study hp --schedule concurrent -p threads=1"
        in (run["command"])
    )
    code, _, err = lab(capsys, "runs", "--db", str(db), "show", "sysbench-memory-aa")
    assert code == 2 and "names 2 runs" in err and "aaab33334444" in err


def test_runs_delete_removes_one_run_and_only_it(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = lab(capsys, "runs", "--db", str(db), "delete", "sysbench-memory-aaab")
    assert code == 2 and "pass --yes" in err  # no terminal to ask on: nothing deleted
    code, out, _ = lab(capsys, "runs", "--db", str(db), "delete", "sysbench-memory-aaab", "--yes")
    assert code == 0 and "2 samples" in out
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM run").fetchone() == (1,)
        assert conn.execute("SELECT COUNT(*) FROM sample").fetchone() == (6,)
        assert conn.execute("SELECT COUNT(*) FROM stop").fetchone() == (0,)
    code, out, _ = lab(capsys, "store", "check", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["ok"] is True


def test_store_check_finds_orphans(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.execute("DELETE FROM iteration WHERE iteration=2")  # their samples stay behind
    code, out, err = lab(capsys, "store", "check", "--db", str(db))
    assert code == 5
    assert "2 samples without their attempt" in out and "samples without their attempt" in err


def test_reading_commands_create_nothing_on_a_mistyped_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "typo" / "x.db"
    for args in (["runs"], ["store", "check"], ["compare"], ["report"], ["export"]):
        code, _, err = lab(capsys, *args, "--db", str(typo))
        assert code == 2 and f"no result store at {typo}" in err, (args, err)
    assert not typo.parent.exists()


def test_compare_never_pools_runs_that_differ_and_picks_one_with_run(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = lab(capsys, "compare", "--db", str(db))
    assert code == 2
    assert "2 runs of sysbench-memory that differ" in err
    assert "sysbench-memory-aaaa11112222 (threads=1)" in err
    assert "sysbench-memory-aaab33334444 (threads=8)" in err and "--run KEY" in err
    code, out, _ = lab(capsys, "compare", "--db", str(db), "--run", "sysbench-memory-aaaa",
                       "--format", "json")  # fmt: skip
    assert code == 0
    (table,) = json.loads(out)
    arms = {arm["variant"]: arm["summary"] for arm in table["arms"]}
    assert {v: (a["n"], a["mean"]) for v, a in arms.items()} == {
        "thp": (3, pytest.approx(2.1)),  # threads=1 only: run 8's 5.0 is not pooled in
        "shp1g": (3, pytest.approx(5.9 / 3)),
    }


def test_export_selects_one_run(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = lab(capsys, "export", "--db", str(db), "--run", "sysbench-memory-aaab",
                       "--format", "jsonl")  # fmt: skip
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 2
    assert {r["run"] for r in rows} == {"sysbench-memory-aaab33334444"}


def test_compare_one_run_against_another_variant_by_variant(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.open(db) as store:
        (study,) = store.studies()
        guests = {g.name: g.id for g in store.guests()}
        params = {"threads": 1, "image": "new"}
        again = store.ensure_run(study.id, "sysbench-memory-cccc55556666", "sysbench-memory",
                                 params, "concurrent", 3, [TIME])  # fmt: skip
        store.record(again, guests["lab-thp"], [ok(1, 3.0), ok(2, 3.1), ok(3, 3.2)])
    code, out, err = lab(capsys, "compare", "--db", str(db), "--run", "sysbench-memory-aaaa",
                         "--against", "sysbench-memory-cccc", "--format", "json")  # fmt: skip
    assert code == 0, err
    (table,) = json.loads(out)  # only thp is in both runs
    assert table["study"] == "thp: sysbench-memory-aaaa11112222 vs sysbench-memory-cccc55556666"
    arms = [(a["variant"], a["summary"]["n"], a["summary"]["mean"]) for a in table["arms"]]
    assert arms == [
        ("sysbench-memory-aaaa11112222", 3, pytest.approx(2.1)),
        ("sysbench-memory-cccc55556666", 3, pytest.approx(3.1)),
    ]
    code, _, err = lab(capsys, "compare", "--db", str(db), "--against", "sysbench-memory-cccc")
    assert code == 2 and "name the first with --run KEY" in err


def test_a_run_its_rule_stopped_at_its_n_is_complete_not_stopped_early(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule records a stop at the maximum n too (issue 40: all 400 iterations done,
    listed as "stopped early")."""
    path = tmp_path / "lab.db"
    with Store.open(path) as store:
        study = store.ensure_study("hp")
        thp = store.ensure_guest(study, "lab-thp", "thp")
        shp = store.ensure_guest(study, "lab-shp1g", "shp1g")
        run = store.ensure_run(study, "sysbench-memory-cccc55556666", "sysbench-memory",
                               {}, "sync", 2, [TIME])  # fmt: skip
        store.record(run, thp, [ok(1, 5.0), ok(2, 5.1)])
        store.record(run, shp, [ok(1, 4.0), ok(2, 4.1)])
        store.record_stop(run, "after 1 balanced blocks: inconclusive, and the maximum is reached")
    code, out, _ = lab(capsys, "runs", "--db", str(path), "--json")
    assert code == 0 and json.loads(out)[0]["state"] == "complete"
    code, out, _ = lab(capsys, "runs", "--db", str(path))
    assert code == 0 and "complete" in out and "stopped early" not in out
