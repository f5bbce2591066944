"""Stores of older schemas open migrated: every table a later lab added appears, and what
they held is kept (placements, stops, runs, boots)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lab.store import IterationRecord, Store
from tests.unit.test_store import LATEST, TIME


def test_a_version_1_store_opens_migrated_with_its_samples_and_the_later_tables(
    tmp_path: Path,
) -> None:
    from lab.store.schema import SCHEMA_V1

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_V1)
    conn.executescript(
        "INSERT INTO meta(key, value) VALUES ('schema_version', '1');"
        "INSERT INTO study(id, name) VALUES (1, 'hp');"
        "INSERT INTO guest(id, study_id, name, variant) VALUES (1, 1, 'lab-thp', 'thp');"
        "INSERT INTO run(id, study_id, key, workload) VALUES (1, 1, 'k', 'sysbench');"
        "INSERT INTO metric VALUES (1, 'time', 's', 'lower');"
        "INSERT INTO iteration(run_id, guest_id, iteration, attempt, ok) VALUES (1, 1, 1, 1, 1);"
        "INSERT INTO sample VALUES (1, 1, 1, 'time', 2.5);"
    )
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        (series,) = store.values()
        assert series.values.tolist() == [2.5]
        assert store.placement_labels() == {}  # the table is there, and empty
        store.record_placement(1, 1, 1, "swapped", [3])
        labels = store.placement_labels()
    assert labels[("hp", "sysbench", "time", "thp", "local", "lab-thp")].tolist() == ["swapped"]
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"placement", "warmup"} <= tables
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == LATEST
    assert conn.execute("SELECT * FROM placement").fetchall() == [(1, 1, 1, "swapped", "3")]
    conn.close()
    with Store.open(path) as again:  # opening again changes nothing
        assert again.integrity_check() == ["ok"]


def test_a_version_2_store_gains_the_warmup_table_and_keeps_its_placements(
    tmp_path: Path,
) -> None:
    from lab.store.schema import PLACEMENT_TABLE, SCHEMA_V1

    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_V1 + PLACEMENT_TABLE)
    conn.executescript(
        "INSERT INTO meta(key, value) VALUES ('schema_version', '2');"
        "INSERT INTO study(id, name) VALUES (1, 'hp');"
        "INSERT INTO guest(id, study_id, name, variant) VALUES (1, 1, 'lab-thp', 'thp');"
        "INSERT INTO run(id, study_id, key, workload) VALUES (1, 1, 'k', 'sysbench');"
        "INSERT INTO placement VALUES (1, 1, 1, 'own', '2');"
    )
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        assert store.warmup_declarations() == {}  # the table is there, and empty
        store.record_warmup(1, "2")
        assert store.warmup_declarations() == {1: "2"}
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == LATEST
    assert conn.execute("SELECT * FROM placement").fetchall() == [(1, 1, 1, "own", "2")]
    conn.close()


def test_a_version_4_store_keeps_its_stops_and_gains_their_intervals(tmp_path: Path) -> None:
    from lab.store.schema import PLACEMENT_TABLE, SCHEMA_V1, STOP_TABLE, WARMUP_TABLE

    path = tmp_path / "v4.db"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_V1 + PLACEMENT_TABLE + WARMUP_TABLE + STOP_TABLE)
    conn.executescript(
        "INSERT INTO meta(key, value) VALUES ('schema_version', '4');"
        "INSERT INTO study(id, name) VALUES (1, 'hp');"
        "INSERT INTO run(id, study_id, key, workload) VALUES (1, 1, 'k', 'sysbench');"
        "INSERT INTO run(id, study_id, key, workload) VALUES (2, 1, 'k2', 'sysbench');"
        "INSERT INTO stop(run_id, reason, decided) VALUES (1, 'after 9 pairs: …', 1.0);"
    )
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        assert store.stop_reason(1) == "after 9 pairs: …"
        assert store.stop_interval(1) is None  # stopped before intervals were kept
        store.record_stop(2, "after 4 pairs: …", '{"x": 1}')
        assert store.stop_interval(2) == '{"x": 1}'
        assert store.environment(1) == []  # and gains the environment table
        store.record_environment(1, "host", "local", {"kernel": "6.1"})
        store.record_environment(1, "guest", "lab-thp", {"kernel": "6.1", "thp_enabled": "always"})
        store.record_environment(1, "host", "local", {"kernel": "6.2"})  # resumed after a reboot
        got = [(e.scope, e.name, e.facts) for e in store.environment(1)]
        assert got == [("host", "local", {"kernel": "6.1"}),
                       ("guest", "lab-thp", {"kernel": "6.1", "thp_enabled": "always"}),
                       ("host", "local", {"kernel": "6.2"})]  # fmt: skip
        assert store.delete_run(1) == 0 and store.environment(1) == []
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == LATEST
    conn.close()


def test_a_version_5_store_gains_the_sweep_tables_and_keeps_its_runs(tmp_path: Path) -> None:
    from lab.store import schema

    v5 = (schema.SCHEMA_V1 + schema.PLACEMENT_TABLE + schema.WARMUP_TABLE + schema.STOP_TABLE
          + schema.STOP_INTERVAL + schema.ENVIRONMENT_TABLE)  # fmt: skip

    path = tmp_path / "v5.db"
    conn = sqlite3.connect(path)
    conn.executescript(v5)
    conn.executescript(
        "INSERT INTO meta(key, value) VALUES ('schema_version', '5');"
        "INSERT INTO study(id, name) VALUES (1, 'hp');"
        "INSERT INTO run(id, study_id, key, workload) VALUES (1, 1, 'k', 'sysbench');"
    )
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        assert store.sweeps() == [] and [r.key for r in store.runs()] == ["k"]
        sweep = store.ensure_sweep(1, "sw", "sysbench", [("total_size", ["16M"])], "blocked")
        store.add_sweep_run(sweep, 1, 0, {"total_size": "16M"})
        (found,) = store.sweeps("hp")
        assert [(r.run_key, r.point) for r in found.runs] == [("k", {"total_size": "16M"})]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == LATEST
    conn.close()


def test_a_store_without_the_boot_index_gains_it_and_reads_the_same_boots(
    tmp_path: Path,
) -> None:
    """An index is no schema version: a store of an older lab (or one whose index was
    dropped) gains it when opened, keeps its version, and reads the same boots."""
    path = tmp_path / "old.db"
    with Store.open(path) as store:
        study = store.ensure_study("hp")
        run = store.ensure_run(study, "hp/k", "sysbench", {}, None, 4, [TIME])
        guest = store.ensure_guest(study, "lab-thp", "thp")
        store.record(run, guest, [
            IterationRecord(1, 1, True, boot_id="b1", metrics={"time": 1.0}),
            IterationRecord(2, 1, True, boot_id="", metrics={"time": 2.0}),
            IterationRecord(3, 1, True, metrics={"time": 3.0}),  # none: the same boot as ""
            IterationRecord(4, 1, True, boot_id="b0", metrics={"time": 4.0}),
        ])  # fmt: skip
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX iteration_boot")
    conn.close()
    with Store.open(path) as store:
        ((runs, boots),) = store.sample_boots().values()
    assert boots.tolist() == ["b1", "", "", "b0"]
    assert runs.tolist() == [run] * 4
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == LATEST
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "iteration_boot" in indexes
    conn.close()
