"""Runs are never pooled by `lab import` or `lab plan --from-store` (issue 32 §2), and an
export imports back into an empty store as the same runs, samples, boots, placements and
environment lines. The stores are compared through SQLite itself, not lab's readers."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from lab.cli import main
from lab.importers.ingest import ImportOptions, import_file
from lab.report.export import environment_lines, write_csv, write_jsonl
from lab.store import IterationRecord, MetricInfo, Store

METRICS = [MetricInfo("wall_s", "s", "lower"), MetricInfo("backing.qemu_rss_kib", "KiB", None)]


def two_runs(path: Path) -> None:
    """Study "s": two runs of one workload with other parameters and lengths, two guests,
    a reboot, swapped placements and environment lines at two starts."""
    with Store.open(path) as store:
        study = store.ensure_study("s", "two runs")
        guests = {
            "thp": store.ensure_guest(study, "lab-thp", "thp", host="h1"),
            "shp1g": store.ensure_guest(study, "lab-shp1g", "shp1g", host="h1"),
        }
        for key, params, n in (("s/gdb/small", {"size": 1}, 6), ("s/gdb/large", {"size": 2}, 4)):
            run = store.ensure_run(study, key, "gdb-build", params, "sync", n, METRICS)
            for scope, name in (("host", "h1"), ("guest", "lab-thp"), ("guest", "lab-shp1g")):
                store.record_environment(run, scope, name, {"kernel": f"6.{n}", "key": key})
            for variant, guest in guests.items():
                records = []
                for i in range(1, n + 1):
                    boot = f"{variant}-{key}-{'1' if i <= n // 2 else '2'}"
                    records.append(IterationRecord(
                        i, 1, True, started=1.7e9 + i * 10.25, ended=1.7e9 + i * 10.25 + 9.5,
                        boot_id=boot,
                        metrics={"wall_s": 100.0 * params["size"] + i / 7,
                                 "backing.qemu_rss_kib": 4096.0 + i},
                    ))  # fmt: skip
                store.record(run, guest, records)
                for i in range(1, n + 1):
                    label = "swapped" if (i - 1) // 2 % 2 else "own"
                    cpus = [3, 4] if (label == "own") == (variant == "thp") else [5, 6]
                    store.record_placement(run, guest, i, label, cpus)


TABLES = {  # what each table holds, keyed by names (ids differ between two stores)
    "run": "SELECT st.name, r.key, r.workload, r.params, r.schedule FROM run r"
    " JOIN study st ON st.id = r.study_id",
    "guest": "SELECT st.name, g.name, g.variant, g.host FROM guest g"
    " JOIN study st ON st.id = g.study_id",
    "metric": "SELECT r.key, m.name, m.unit, m.direction FROM metric m"
    " JOIN run r ON r.id = m.run_id",
    "iteration": "SELECT r.key, g.name, i.iteration, i.attempt, i.ok, i.started, i.boot_id"
    " FROM iteration i JOIN run r ON r.id = i.run_id JOIN guest g ON g.id = i.guest_id",
    "sample": "SELECT r.key, g.name, s.iteration, s.metric, s.value FROM sample s"
    " JOIN run r ON r.id = s.run_id JOIN guest g ON g.id = s.guest_id",
    "placement": "SELECT r.key, g.name, p.iteration, p.label, p.cpus FROM placement p"
    " JOIN run r ON r.id = p.run_id JOIN guest g ON g.id = p.guest_id",
    "environment": "SELECT r.key, e.scope, e.name, e.facts, e.recorded FROM environment e"
    " JOIN run r ON r.id = e.run_id",
}


def content(path: Path, table: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute(TABLES[table]).fetchall(), key=repr)
    finally:
        conn.close()


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_export_imports_back_into_an_empty_store_as_it_was(tmp_path: Path, fmt: str) -> None:
    source, again = tmp_path / "source.db", tmp_path / "again.db"
    two_runs(source)
    out = io.StringIO()
    with Store.open(source, create=False) as store:
        if fmt == "jsonl":
            environment_lines(out, store, None, None, None)
            write_jsonl(out, store.export_batches())
        else:
            write_csv(out, store.export_batches())
    exported = tmp_path / f"export.{fmt}"
    exported.write_text(out.getvalue())
    with Store.open(again) as store:
        summary = import_file(store, exported, ImportOptions())
    assert summary.bad_count == 0 and summary.stored == 2 * (6 + 4)
    # CSV has no place for the environment lines: JSON lines carry them
    tables = [t for t in TABLES if fmt == "jsonl" or t != "environment"]
    for table in tables:
        want = content(source, table)
        assert want, table  # the check compares something
        assert content(again, table) == want, table
    assert {r[1]: r[3] for r in content(again, "run")} == {
        "s/gdb/small": '{"size": 1}', "s/gdb/large": '{"size": 2}',
    }  # fmt: skip


def test_the_same_export_imported_twice_adds_no_environment_line(tmp_path: Path) -> None:
    source, again = tmp_path / "source.db", tmp_path / "again.db"
    two_runs(source)
    out = io.StringIO()
    with Store.open(source, create=False) as store:
        environment_lines(out, store, None, None, None)
        write_jsonl(out, store.export_batches())
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(out.getvalue())
    second.write_text(out.getvalue().replace('"source": "', '"source": "again '))
    with Store.open(again) as store:
        import_file(store, first, ImportOptions())
        import_file(store, second, ImportOptions())
    assert content(again, "environment") == content(source, "environment")


def test_an_environment_line_of_a_run_without_samples_is_a_malformed_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAB_CONFIG", "/dev/null")
    lines = tmp_path / "e.jsonl"
    lines.write_text(
        '{"record": "environment", "study": "s", "run": "nowhere", "scope": "host",'
        ' "name": "h1", "recorded": 1.7e9, "facts": {"kernel": "6.1"}}\n'
        '{"variant": "a", "workload": "w", "metric": "t_s", "value": 1}\n'
    )
    status = main(["import", str(lines), "--db", str(tmp_path / "lab.db")])
    err = capsys.readouterr().err
    assert status == 2 and "e.jsonl:1" in err and "'nowhere'" in err, err


def two_sizes_csv(path: Path) -> None:
    """Two runs of one workload, of sizes 1 and 2, with no variant effect in either; B ran
    fewer iterations of the larger size, so pooled it looks faster."""
    rng = np.random.default_rng(7)
    lines = ["variant,workload,run,params,metric,value,iteration"]
    for run, size, counts in (("w/size1", 1, (100, 300)), ("w/size2", 2, (300, 100))):
        for variant, n in zip(("A", "B"), counts, strict=True):
            for i, v in enumerate(rng.normal(10.0 * size, 0.5, n), start=1):
                lines.append(f'{variant},loop,{run},"{{""size"": {size}}}",time_s,{v:.4f},{i}')
    path.write_text("\n".join(lines) + "\n")


def test_two_runs_in_one_file_are_not_pooled_into_one_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAB_CONFIG", "/dev/null")
    data, db = tmp_path / "two.csv", str(tmp_path / "lab.db")
    two_sizes_csv(data)
    assert main(["import", str(data), "--db", db]) == 0
    capsys.readouterr()
    conn = sqlite3.connect(db)
    per_run = conn.execute(
        "SELECT r.key, g.variant, COUNT(*) FROM sample s JOIN run r ON r.id = s.run_id"
        " JOIN guest g ON g.id = s.guest_id GROUP BY r.key, g.variant ORDER BY r.key, g.variant"
    ).fetchall()
    conn.close()
    assert per_run == [("w/size1", "A", 100), ("w/size1", "B", 300),
                       ("w/size2", "A", 300), ("w/size2", "B", 100)]  # fmt: skip
    status = main(["compare", "--db", db, "--format", "json"])
    captured = capsys.readouterr()
    assert status == 2, captured.out
    assert "never pooled" in captured.err
    assert "w/size1" in captured.err and "w/size2" in captured.err
    # one run at a time: no variant effect, so no "B better"
    assert main(["compare", "--db", db, "--run", "w/size2", "--format", "json"]) == 0
    verdicts = json.dumps(json.loads(capsys.readouterr().out))
    assert "better" not in verdicts.replace("no_better", "")


def test_plan_from_store_refuses_runs_that_differ_and_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAB_CONFIG", "/dev/null")
    data, db = tmp_path / "two.csv", str(tmp_path / "lab.db")
    two_sizes_csv(data)
    assert main(["import", str(data), "--db", db]) == 0
    capsys.readouterr()
    status = main(["plan", "--from-store", "--db", db, "--effect", "5%"])
    err = capsys.readouterr().err
    assert status == 2
    assert "never pooled" in err and "w/size1" in err and "w/size2" in err, err
    # the run named: planned from its samples alone (n stored is its smaller arm)
    assert main(["plan", "--from-store", "--db", db, "--effect", "5%", "--run", "w/size1",
                 "--json"]) == 0  # fmt: skip
    planned = json.loads(capsys.readouterr().out)
    assert [p["stored_fewest"] for p in planned["plans"]] == [100], planned


def test_an_export_imported_into_its_own_store_changes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    two_runs(source)
    out = io.StringIO()
    with Store.open(source, create=False) as store:
        environment_lines(out, store, None, None, None)
        write_jsonl(out, store.export_batches())
    exported = tmp_path / "export.jsonl"
    exported.write_text(out.getvalue())
    conn = sqlite3.connect(source)
    runs = "SELECT key, workload, params, schedule, target_n FROM run ORDER BY key"
    before = {t: content(source, t) for t in TABLES}, conn.execute(runs).fetchall()
    with Store.open(source, create=False) as store:
        summary = import_file(store, exported, ImportOptions())
    assert summary.stored == 0 and summary.duplicates == 2 * (6 + 4)
    assert ({t: content(source, t) for t in TABLES}, conn.execute(runs).fetchall()) == before
    assert [r[3:] for r in before[1]] == [("sync", 4), ("sync", 6)]  # schedule and n kept
    conn.close()
