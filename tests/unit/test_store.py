"""The result store: schema, idempotent batches, refusals, and reading series back."""

from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from lab.core.errors import StoreError
from lab.store import EXPORT_COLUMNS, SCHEMA_VERSION, IterationRecord, MetricInfo, Store

TIME = MetricInfo("time", "s", "lower")
RATE = MetricInfo("rate", "MiB/s", "higher")
LATEST = (str(SCHEMA_VERSION),)  # meta.schema_version of a new or upgraded store


def _store(tmp_path: Path) -> tuple[Store, int, int, int]:
    store = Store.open(tmp_path / "sub" / "lab.db")
    study = store.ensure_study("hp", "thp vs shp1g", "study.toml", "abc")
    run = store.ensure_run(study, "hp/sysbench", "sysbench", {"threads": 1}, "abab", 10, [TIME])
    guest = store.ensure_guest(study, "lab-thp", "thp", "<domain/>", {"cpus": 2}, {"kernel": "6"})
    return store, study, run, guest


def _ok(i: int, value: float, attempt: int = 1, source: str | None = None) -> IterationRecord:
    return IterationRecord(i, attempt, True, started=float(i), ended=i + 0.5, wall=0.5,
                           source=source, metrics={"time": value})  # fmt: skip


def test_open_creates_folder_schema_and_pragmas(tmp_path: Path) -> None:
    store, *_ = _store(tmp_path)
    conn = sqlite3.connect(tmp_path / "sub" / "lab.db")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"meta", "study", "guest", "run", "metric", "iteration", "sample", "placement",
                      "warmup", "stop", "environment", "sweep", "sweep_run",
                      "study_design"}  # fmt: skip
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == LATEST
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert store._conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    assert store._conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
    store.close()


def test_reopen_keeps_ids_and_data(tmp_path: Path) -> None:
    store, study, run, guest = _store(tmp_path)
    store.record(run, guest, [_ok(1, 2.0)])
    store.close()
    with Store.open(tmp_path / "sub" / "lab.db") as again:
        assert again.ensure_study("hp") == study
        assert again.ensure_guest(study, "lab-thp", "thp") == guest
        assert again.ensure_run(study, "hp/sysbench", "sysbench", {"threads": 1}, "abab", 20,
                                [TIME]) == run  # fmt: skip
        assert again.completed_iterations(run, guest) == {1}
        assert again.runs()[0].target_n == 20


def test_record_is_idempotent_and_counts_new_rows(tmp_path: Path) -> None:
    store, _, run, guest = _store(tmp_path)
    batch = [_ok(1, 2.0), _ok(2, 3.0)]
    assert store.record(run, guest, batch) == 2
    assert store.record(run, guest, batch) == 0
    assert store.record(run, guest, [_ok(2, 9.0), _ok(3, 4.0)]) == 1
    (series,) = store.values()
    assert series.iterations.tolist() == [1, 2, 3]
    assert series.values.tolist() == [2.0, 3.0, 4.0]  # the re-sent 9.0 did not overwrite


def test_failed_attempts_kept_without_samples(tmp_path: Path) -> None:
    store, _, run, guest = _store(tmp_path)
    failed = IterationRecord(1, 1, False, exit_status=137, output_tail="Killed",
                             metrics={"time": 1.0})  # fmt: skip
    assert store.next_attempt(run, guest, 1) == 1
    store.record(run, guest, [failed])
    assert store.completed_iterations(run, guest) == set()
    assert store.next_attempt(run, guest, 1) == 2
    store.record(run, guest, [_ok(1, 5.0, attempt=2)])
    assert store.completed_iterations(run, guest) == {1}
    assert store.next_attempt(run, guest, 1) == 3
    assert store.attempt_counts() == {("hp/sysbench", "lab-thp"): (1, 1)}
    # the failed attempt is exported as a row of its own: no sample, its exit status and error
    rows = [(r.attempt, r.ok, r.value, r.exit_status, r.error) for r in store.export_rows()]
    assert rows == [(1, 0, None, 137, "Killed"), (2, 1, 5.0, None, None)]


def test_undeclared_metric_and_non_finite_value_refused(tmp_path: Path) -> None:
    store, _, run, guest = _store(tmp_path)
    with pytest.raises(StoreError, match=r"does not declare metric.*ensure_run"):
        store.record(run, guest, [IterationRecord(1, 1, True, metrics={"rate": 1.0})])
    with pytest.raises(StoreError, match="not a finite number"):
        store.record(run, guest, [_ok(1, float("nan"))])
    assert store.completed_iterations(run, guest) == set()


def test_batch_with_error_stores_nothing(tmp_path: Path) -> None:
    store, _, run, guest = _store(tmp_path)
    bad = IterationRecord(2, 1, True, metrics={"nope": 1.0})
    with pytest.raises(StoreError):
        store.record(run, guest, [_ok(1, 1.0), bad])
    assert store.max_iteration(run, guest) == 0


def test_guest_variant_and_run_identity_are_enforced(tmp_path: Path) -> None:
    store, study, run, _guest = _store(tmp_path)
    with pytest.raises(StoreError, match="is variant 'thp'"):
        store.ensure_guest(study, "lab-thp", "shp1g")
    with pytest.raises(StoreError, match="new run key"):
        store.ensure_run(study, "hp/sysbench", "sysbench", {"threads": 2}, None, None, [])
    with pytest.raises(StoreError, match="stored as s"):
        store.ensure_run(study, "hp/sysbench", "sysbench", {"threads": 1}, None, None,
                         [MetricInfo("time", "ms", "lower")])  # fmt: skip
    with pytest.raises(StoreError, match="different study file"):
        store.ensure_study("hp", study_hash="def")
    other = store.ensure_study("other")
    other_guest = store.ensure_guest(other, "x", "thp")
    with pytest.raises(StoreError, match="different studies"):
        store.record(run, other_guest, [_ok(1, 1.0)])


def test_guest_facts_updated_when_given(tmp_path: Path) -> None:
    store, study, _, guest = _store(tmp_path)
    store.ensure_guest(study, "lab-thp", "thp", host_facts={"cpus": 4})
    (record,) = store.guests()
    assert record.id == guest
    assert record.host_facts == {"cpus": 4}
    assert record.guest_facts == {"kernel": "6"}  # not given: kept
    assert record.domain_xml == "<domain/>"


def test_values_groups_by_variant_and_filters(tmp_path: Path) -> None:
    store, study, run, thp = _store(tmp_path)
    shp = store.ensure_guest(study, "lab-shp1g", "shp1g")
    net = store.ensure_run(study, "hp/iperf3", "iperf3", {}, None, None, [RATE])
    store.record(run, thp, [_ok(i, 10.0 + i) for i in (3, 1, 2)])
    store.record(run, shp, [_ok(i, 20.0 + i) for i in (1, 2)])
    store.record(net, shp, [IterationRecord(1, 1, True, metrics={"rate": 7.0})])
    everything = store.values()
    assert [(s.workload, s.variant) for s in everything] == [
        ("iperf3", "shp1g"), ("sysbench", "shp1g"), ("sysbench", "thp"),
    ]  # fmt: skip
    thp_series = everything[2]
    assert thp_series.iterations.tolist() == [1, 2, 3]
    assert thp_series.values.tolist() == [11.0, 12.0, 13.0]
    assert (thp_series.unit, thp_series.direction, thp_series.guest) == ("s", "lower", "lab-thp")
    assert isinstance(thp_series.values, np.ndarray)
    assert [s.variant for s in store.values(workload="sysbench")] == ["shp1g", "thp"]
    assert [s.metric for s in store.values(metric="rate")] == ["rate"]
    assert store.values(study="nope") == []


def test_export_rows_carry_context(tmp_path: Path) -> None:
    store, _, run, guest = _store(tmp_path)
    store.record(run, guest, [_ok(1, 2.5, source="times.txt:4")])
    (row,) = list(store.export_rows())
    data = row.as_dict()
    assert list(data) == list(EXPORT_COLUMNS)
    assert data["study"] == "hp" and data["variant"] == "thp" and data["value"] == 2.5
    assert data["source"] == "times.txt:4" and data["unit"] == "s" and data["attempt"] == 1


def test_not_sqlite_file_says_what_it_is(tmp_path: Path) -> None:
    text = tmp_path / "results.csv"
    text.write_text("variant,workload,metric,value\nthp,x,y,1\n")
    with pytest.raises(StoreError, match="not a lab result store: it is a CSV file beginning"):
        Store.open(text)
    packed = tmp_path / "lab.db.gz"
    packed.write_bytes(gzip.compress(b"hello"))
    with pytest.raises(StoreError, match="gzip-compressed"):
        Store.open(packed)
    with pytest.raises(StoreError, match="is a directory"):
        Store.open(tmp_path)


def test_foreign_sqlite_database_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    sqlite3.connect(path).execute("CREATE TABLE songs(title TEXT)").connection.commit()
    with pytest.raises(StoreError, match=r"not a lab result store.*songs"):
        Store.open(path)


def test_newer_schema_says_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"newer lab.*Upgrade lab"):
        Store.open(path)


def test_transaction_groups_writes_and_rolls_back_all(tmp_path: Path) -> None:
    store, study, run, guest = _store(tmp_path)
    with pytest.raises(StoreError), store.transaction():
        other = store.ensure_guest(study, "lab-shp1g", "shp1g")
        store.record(run, guest, [_ok(1, 1.0)])
        store.record(run, other, [IterationRecord(1, 1, True, metrics={"nope": 1.0})])
    assert [g.name for g in store.guests()] == ["lab-thp"]  # the new guest was rolled back too
    assert store.max_iteration(run, guest) == 0
    with store.transaction():
        store.record(run, guest, [_ok(1, 1.0)])
        with pytest.raises(StoreError):  # a failing inner batch leaves the outer one intact
            store.record(run, guest, [IterationRecord(2, 1, True, metrics={"nope": 1.0})])
        store.record(run, guest, [_ok(3, 1.0)])
    assert store.completed_iterations(run, guest) == {1, 3}


def test_study_file_text_and_hash_survive_later_runs_and_reopening(tmp_path: Path) -> None:
    """`lab study run` stores the file; the `lab run` steps it calls name the study only."""
    text = '# études: "thp" vs "shp1g"\r\nname = "hp"\n\n[[workload]]\nname = "null"\nn = 3\n'
    path = tmp_path / "lab.db"
    with Store.open(path) as store:
        study = store.ensure_study("hp", "a study", study_file=text, study_hash="f" * 64)
        assert store.ensure_study("hp", description="lab run") == study  # a `lab run` step
        assert store.ensure_study("hp", study_file=text, study_hash="f" * 64) == study
    with Store.open(path) as store:
        (stored,) = store.studies()
    assert (stored.description, stored.study_file, stored.study_hash) == ("a study", text, "f" * 64)


# -- schema 2: the placement of each iteration (lab run --swap-every) --------------------------


def test_placement_of_a_repeated_iteration_is_the_last_recorded(tmp_path: Path) -> None:
    store, _, run, guest = _store(tmp_path)
    store.record_placement(run, guest, 1, "own", [2, 3])
    store.record_placement(run, guest, 1, "swapped", [4, 5])
    rows = store._conn.execute("SELECT iteration, label, cpus FROM placement").fetchall()
    assert rows == [(1, "swapped", "4,5")]
    with pytest.raises(StoreError, match="neither 'own' nor 'swapped'"):
        store.record_placement(run, guest, 2, "elsewhere", [1])
    with pytest.raises(StoreError, match="no run id 99"):
        store.record_placement(99, guest, 1, "own", [1])


def test_placement_labels_line_up_with_the_samples_of_each_series(tmp_path: Path) -> None:
    store, study, run, thp = _store(tmp_path)
    shp = store.ensure_guest(study, "lab-shp1g", "shp1g")
    again = store.ensure_run(study, "hp/sysbench-2", "sysbench", {"threads": 1}, "sync", 4, [TIME])
    store.record(run, thp, [_ok(i, 10.0 + i) for i in (1, 2)])  # a run without a swap
    store.record(again, thp, [_ok(i, 20.0 + i) for i in (1, 2, 4)])  # iteration 3 failed
    store.record(again, shp, [_ok(i, 30.0 + i) for i in (1, 2, 3, 4)])
    for guest in (thp, shp):
        for i, label in enumerate(("own", "swapped", "swapped", "own"), 1):
            store.record_placement(again, guest, i, label, [i])
    series = {s.variant: s for s in store.values()}
    labels = store.placement_labels()
    thp_labels = labels[("hp", "sysbench", "time", "thp", "local", "lab-thp")]
    assert series["thp"].values.tolist() == [11.0, 12.0, 21.0, 22.0, 24.0]
    assert thp_labels.tolist() == ["", "", "own", "swapped", "own"]  # the first run had none
    shp_labels = labels[("hp", "sysbench", "time", "shp1g", "local", "lab-shp1g")]
    assert shp_labels.tolist() == ["own", "swapped", "swapped", "own"]
    assert store.placement_labels(workload="iperf3") == {}
    assert set(store.placement_labels(study="hp")) == set(labels)


def test_a_sweep_keeps_its_runs_in_order_and_refuses_another_at_a_taken_place(
    tmp_path: Path,
) -> None:
    store, study, first, _ = _store(tmp_path)
    second = store.ensure_run(study, "hp/sysbench-2", "sysbench", {"threads": 2}, None, 10, [TIME])
    axes = [("threads", ["2", "1"])]
    sweep = store.ensure_sweep(study, "hp/sweep", "sysbench", axes, "interleaved")
    assert store.ensure_sweep(study, "hp/sweep", "sysbench", axes, "interleaved") == sweep
    store.add_sweep_run(sweep, first, 1, {"threads": "1"})
    store.add_sweep_run(sweep, second, 0, {"threads": "2"})
    store.add_sweep_run(sweep, second, 0, {"threads": "2"})  # again: nothing changes
    (found,) = store.sweeps()
    assert (found.key, found.study, found.workload, found.order) == (
        "hp/sweep", "hp", "sysbench", "interleaved",
    )  # fmt: skip
    assert found.axes == (("threads", ("2", "1")),)
    assert [(r.position, r.run_key, r.point) for r in found.runs] == [
        (0, "hp/sysbench-2", {"threads": "2"}), (1, "hp/sysbench", {"threads": "1"}),
    ]  # fmt: skip
    with pytest.raises(StoreError, match="stored with another run"):
        store.add_sweep_run(sweep, first, 0, {"threads": "1"})
    with pytest.raises(StoreError, match="another study, workload, axes or order"):
        store.ensure_sweep(study, "hp/sweep", "sysbench", axes, "blocked")
    with pytest.raises(StoreError, match="cannot store sweep"):
        store.ensure_sweep(study, "hp/other", "sysbench", axes, "shuffled")
    assert store.sweeps(study="none") == []
    store.delete_run(first)  # the sweep stays, with one value fewer
    assert [r.run_key for r in store.sweeps()[0].runs] == ["hp/sysbench-2"]


def test_a_run_s_warmup_declaration_is_replaced_checked_and_read_per_study(
    tmp_path: Path,
) -> None:
    store, _, run, _ = _store(tmp_path)
    other = store.ensure_run(store.ensure_study("other"), "o/k", "null", {}, None, 3, [TIME])
    store.record_warmup(run, "auto")
    store.record_warmup(run, "02")  # declared again: the last one counts, as a plain count
    store.record_warmup(other, "0")
    assert store.warmup_declarations() == {run: "2", other: "0"}
    assert store.warmup_declarations("hp") == {run: "2"}
    for bad in ("-1", "soon", "", "2.5"):
        with pytest.raises(StoreError, match="neither 'auto' nor a count"):
            store.record_warmup(run, bad)
    with pytest.raises(StoreError, match="no run id 999"):
        store.record_warmup(999, "2")
    store.close()


def test_sample_boots_line_up_with_the_samples_of_each_series(tmp_path: Path) -> None:
    store, study, run, guest = _store(tmp_path)
    store.record(run, guest, [
        IterationRecord(1, 1, True, boot_id="b1", metrics={"time": 1.0}),
        IterationRecord(2, 1, False, boot_id="b1"),  # failed on b1, then succeeded on b2
        IterationRecord(2, 2, True, boot_id="b2", metrics={"time": 2.0}),
        IterationRecord(3, 1, True, metrics={"time": 3.0}),  # no boot id (as imported)
    ])  # fmt: skip
    later = store.ensure_run(study, "hp/again", "sysbench", {"threads": 1}, None, 1, [TIME])
    store.record(later, guest, [IterationRecord(1, 1, True, boot_id="b3", metrics={"time": 4.0})])
    (series,) = store.values()
    runs, boots = store.sample_boots()[("hp", "sysbench", "time", "thp", "local", "lab-thp")]
    assert series.values.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert runs.tolist() == [run, run, run, later]
    assert boots.tolist() == ["b1", "b2", "", "b3"]
    store.close()


@pytest.mark.parametrize("seeks", [1_000, 3])
def test_sample_boots_match_each_samples_own_successful_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seeks: int
) -> None:
    """Boots found from their change points agree with a lookup per sample (the reference:
    the boot of each sample's last successful attempt), through restarts, repeats and gaps;
    whether the boots are found by seeks in the index or, past BOOT_SEEKS, by a scan."""
    monkeypatch.setattr("lab.store.reads.BOOT_SEEKS", seeks)
    store, _, run, guest = _store(tmp_path)
    records, boot = [], "boot-1"
    for i in range(1, 200):
        if i % 37 == 0:
            boot = f"boot-{i}"  # the guest restarted
        if i % 11 == 0:  # a failed attempt, then an ok one in the next boot
            records.append(IterationRecord(i, 1, False, started=float(i), boot_id=boot))
            boot = f"boot-r{i}"
            records.append(IterationRecord(i, 2, True, started=i + 0.1, ended=i + 0.5,
                                           boot_id=boot, metrics={"time": 1.0}))  # fmt: skip
        elif i % 23 != 0:  # every 23rd iteration has no sample: a gap
            records.append(IterationRecord(i, 1, True, started=float(i), ended=i + 0.5,
                                           boot_id=boot, metrics={"time": 1.0}))  # fmt: skip
    store.record(run, guest, records)
    ((_, boots),) = store.sample_boots().values()
    conn = sqlite3.connect(tmp_path / "sub" / "lab.db")
    reference = [row[0] for row in conn.execute(
        "SELECT (SELECT i.boot_id FROM iteration i WHERE i.run_id=s.run_id AND"
        " i.guest_id=s.guest_id AND i.iteration=s.iteration AND i.ok=1 ORDER BY i.attempt DESC"
        " LIMIT 1) FROM sample s WHERE s.run_id=? AND s.guest_id=? ORDER BY s.iteration",
        (run, guest),
    )]  # fmt: skip
    assert len(reference) == len(boots) > 150 and boots.tolist() == reference


def test_sample_boots_when_a_later_boot_repeats_an_earlier_iteration(tmp_path: Path) -> None:
    """Iteration 5 failed in boot A, 6..10 went on in A, and 5 was repeated in boot B: the
    boots' ranges overlap, so the change points come from the window over every attempt."""
    store, study, run, _ = _store(tmp_path)
    guest = store.ensure_guest(study, "lab-shp1g", "shp1g")

    def ok(i: int, boot: str, attempt: int = 1) -> IterationRecord:
        return IterationRecord(i, attempt, True, started=float(i), ended=i + 0.5, boot_id=boot,
                               metrics={"time": 1.0})  # fmt: skip

    records = [ok(i, "A") for i in (1, 2, 3, 4, 6, 7, 8, 9, 10)]
    records.append(IterationRecord(5, 1, False, started=5.0, boot_id="A"))
    records += [ok(5, "B", attempt=2), *(ok(i, "B") for i in range(11, 15))]
    store.record(run, guest, records)
    boots = {key[-1]: b for key, (_, b) in store.sample_boots().items()}["lab-shp1g"]
    assert boots.tolist() == ["A"] * 4 + ["B"] + ["A"] * 5 + ["B"] * 4
