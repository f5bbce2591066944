"""``lab import``: every raw format, CSV and JSONL, malformed lines, all-or-nothing, re-import."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.core.errors import UsageError
from lab.importers.appended import (
    parse_iperf3_text,
    read_iperf3_json,
    read_iperf3_text,
    read_sysbench,
    read_time,
)
from lab.importers.ingest import ImportOptions, MalformedInputError, detect_format, import_file
from lab.importers.records import infer_direction
from lab.store import Store

FIX = Path(__file__).parent.parent / "fixtures" / "import"


def _text(name: str) -> str:
    return (FIX / name).read_text()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "lab.db")


def test_single_real_captures_parse() -> None:
    (t,) = read_time(_text("bash-time-make-nfs-guest.txt")).samples
    assert t.metrics == {"real_s": 3.166, "user_s": 1.978, "sys_s": 0.9} and t.line == 2
    (s,) = read_sysbench(_text("sysbench-1.0.20-memory-guest-tcg.txt")).samples
    assert s.metrics["total_time_s"] == 0.5005 and s.metrics["throughput_mib_s"] == 4053.53
    (j,) = read_iperf3_json(_text("iperf3-3.12-client-J-guest-tcg.json")).samples
    assert j.metrics["sender_bits_per_s"] == pytest.approx(1839860024.10323)
    assert j.started == 1795343891
    assert parse_iperf3_text(_text("iperf3-3.12-client-text-guest-tcg.txt")) == {
        "sender_bits_per_s": 2.92e9, "receiver_bits_per_s": 2.92e9, "retransmits": 0.0,
    }  # fmt: skip


def test_appended_files_split_into_runs_with_lines() -> None:
    times = read_time(_text("time-thp.txt"))
    assert [s.metrics["real_s"] for s in times.samples] == pytest.approx(
        [147.081, 146.52, 149.903, 592.13, 145.7]
    )
    assert [s.line for s in times.samples] == [2, 6, 10, 14, 18] and times.bad == []
    reports = read_sysbench(_text("sysbench-thp.txt"))
    assert [s.metrics["total_time_s"] for s in reports.samples] == [0.5005, 0.5102, 0.495]
    assert [s.line for s in reports.samples] == [1, 38, 75]
    runs = read_iperf3_text(_text("iperf3-text-thp.txt"))
    assert [s.metrics["sender_bits_per_s"] for s in runs.samples] == [2.92e9, 2.87e9, 2.95e9]
    assert [s.metrics["retransmits"] for s in runs.samples] == [0, 3, 0]
    objects = read_iperf3_json(_text("iperf3-J-thp.json"))
    assert [s.started for s in objects.samples] == [1795343891, 1795343901, 1795343911]
    assert objects.samples[1].metrics["sender_bits_per_s"] == 1801234567.5


@pytest.mark.parametrize(
    ("reader", "name", "lines", "words", "good"),
    [
        (read_time, "time-malformed.txt", [6, 9, 15], ["real", "make:", "without a real"], 2),
        (read_sysbench, "sysbench-truncated.txt", [38], ["total time"], 1),
        (read_iperf3_text, "iperf3-text-busy.txt", [13], ["server busy"], 2),
        (read_iperf3_json, "iperf3-J-bad.json", [191, 200], ["Bad file descriptor", "JSON"], 2),
    ],
)  # fmt: skip
def test_malformed_runs_are_named_by_line(
    reader: object, name: str, lines: list[int], words: list[str], good: int
) -> None:
    parsed = reader(_text(name))  # type: ignore[operator]
    assert [b.line for b in parsed.bad] == lines
    for word, bad in zip(words, parsed.bad, strict=False):
        assert word in bad.message
    assert len(parsed.samples) == good


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("time-thp.txt", "time"), ("sysbench-thp.txt", "sysbench"),
     ("iperf3-text-thp.txt", "iperf3"), ("iperf3-J-thp.json", "iperf3-json"),
     ("results.csv", "csv"), ("results.jsonl", "jsonl")],
)  # fmt: skip
def test_format_detection(name: str, fmt: str) -> None:
    assert detect_format(FIX / name, _text(name)) == fmt


def test_unknown_format_says_pass_format(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello world\n")
    with pytest.raises(UsageError, match="--format"):
        detect_format(path, path.read_text())


def test_import_time_pair_then_compare_values(store: Store) -> None:
    import_file(store, FIX / "time-thp.txt", ImportOptions(variant="thp", workload="gdb-build"))
    summary = import_file(store, FIX / "time-shp1g.txt",
                          ImportOptions(variant="shp1g", workload="gdb-build"))  # fmt: skip
    assert summary.stored == 4 and summary.format == "time"
    series = {(s.variant, s.metric): s for s in store.values(workload="gdb-build")}
    real = series[("thp", "real_s")]
    assert real.values.tolist() == pytest.approx([147.081, 146.52, 149.903, 592.13, 145.7])
    assert real.iterations.tolist() == [1, 2, 3, 4, 5]
    assert (real.unit, real.direction, real.study) == ("s", "lower", "imported")
    rows = [r for r in store.export_rows() if r.variant == "thp" and r.metric == "real_s"]
    assert rows[3].source == f"{(FIX / 'time-thp.txt').resolve()}:14"


def test_raw_format_needs_a_variant(store: Store) -> None:
    with pytest.raises(UsageError, match="--variant"):
        import_file(store, FIX / "time-thp.txt", ImportOptions())


def test_malformed_file_stores_nothing(store: Store) -> None:
    with pytest.raises(MalformedInputError) as caught:
        import_file(store, FIX / "time-malformed.txt", ImportOptions(variant="thp"))
    message = str(caught.value)
    assert f"{FIX / 'time-malformed.txt'}:6:" in message
    assert "2 more malformed" in message and "nothing was stored" in message
    assert "--skip-bad" in message
    assert [b.line for b in caught.value.bad] == [6, 9, 15]
    assert store.values() == [] and store.studies() == []


def test_skip_bad_stores_the_rest(store: Store) -> None:
    summary = import_file(store, FIX / "time-malformed.txt",
                          ImportOptions(variant="thp", skip_bad=True))  # fmt: skip
    assert summary.stored == 2 and [b.line for b in summary.bad] == [6, 9, 15]
    (real,) = store.values(metric="real_s")
    assert real.values.tolist() == [3.166, 3.201]


def test_reimport_adds_only_appended_runs(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "times.txt"
    lines = _text("time-thp.txt")
    path.write_text(lines[: lines.index("\nreal", 10)])  # only the first block so far
    first = import_file(store, path, ImportOptions(variant="thp"))
    path.write_text(lines)  # the loop appended more runs
    second = import_file(store, path, ImportOptions(variant="thp"))
    third = import_file(store, path, ImportOptions(variant="thp"))
    assert (first.stored, second.stored, third.stored) == (1, 4, 0)
    assert (second.already, third.already) == (1, 5)
    (real,) = store.values(metric="real_s")
    assert real.iterations.tolist() == [1, 2, 3, 4, 5]
    assert real.values.tolist() == pytest.approx([147.081, 146.52, 149.903, 592.13, 145.7])


def test_csv_with_iterations_units_and_timestamps(store: Store) -> None:
    summary = import_file(store, FIX / "results.csv", ImportOptions())
    assert summary.stored == 6
    series = {s.variant: s for s in store.values()}
    assert series["thp"].values.tolist() == [131.2, 129.8, 133.0]
    assert series["shp1g"].unit == "s" and series["shp1g"].direction == "lower"
    started = sorted(r.started for r in store.export_rows() if r.variant == "thp")
    assert started[0] == pytest.approx(1600682460.0)  # 2020-09-21T10:01:00Z
    again = import_file(store, FIX / "results.csv", ImportOptions())
    assert again.stored == 0 and again.already == 6


def test_csv_malformed_rows_named(store: Store) -> None:
    with pytest.raises(MalformedInputError) as caught:
        import_file(store, FIX / "results-malformed.csv", ImportOptions())
    bad = {b.line: b.message for b in caught.value.bad}
    assert sorted(bad) == [4, 5, 6, 7]
    assert "not a number" in bad[4]
    assert "a second 'total_time' value for iteration 1" in bad[5]
    assert "no metric" in bad[6]
    assert "not a whole number" in bad[7]
    assert store.values() == []


def test_jsonl_guests_and_malformed(store: Store) -> None:
    import_file(store, FIX / "results.jsonl", ImportOptions())
    guests = {(g.variant, g.name) for g in store.guests()}
    assert guests == {("thp", "thp"), ("shp1g", "twin-b")}
    (thp,) = store.values(workload="iperf3", study="imported")[1:]
    assert thp.direction == "higher" and thp.unit == "bit/s"
    with pytest.raises(MalformedInputError) as caught:
        import_file(store, FIX / "results-malformed.jsonl", ImportOptions(study="other"))
    assert [b.line for b in caught.value.bad] == [3, 4, 5]
    assert "unknown key(s) 'colour'" in caught.value.bad[2].message


def test_export_csv_imports_back(store: Store, tmp_path: Path) -> None:
    import csv

    from lab.store import EXPORT_COLUMNS

    import_file(store, FIX / "sysbench-thp.txt", ImportOptions(variant="thp"))
    out = tmp_path / "export.csv"
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, EXPORT_COLUMNS)
        writer.writeheader()
        writer.writerows(r.as_dict() for r in store.export_rows())
    copy = Store.open(tmp_path / "copy.db")
    import_file(copy, out, ImportOptions())
    before = {(s.variant, s.metric): s.values.tolist() for s in store.values()}
    after = {(s.variant, s.metric): s.values.tolist() for s in copy.values()}
    assert after == before and len(after) >= 6


@pytest.mark.parametrize(
    ("metric", "unit", "direction"),
    [("total_time_s", "", "lower"), ("sender_bits_per_s", "", "higher"),
     ("latency_p95_ms", "", "lower"), ("build", "s", "lower"), ("x", "MB/s", "higher"),
     ("retransmits", "", "lower"), ("widgets", "", None)],
)  # fmt: skip
def test_direction_inference(metric: str, unit: str, direction: str | None) -> None:
    assert infer_direction(metric, unit) == direction


def test_undecidable_direction_asks_for_it(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("variant,workload,metric,value\nthp,w,widgets,3\n")
    with pytest.raises(UsageError, match="--direction"):
        import_file(store, path, ImportOptions())
    import_file(store, path, ImportOptions(direction="higher"))
    assert store.values()[0].direction == "higher"


def test_the_import_action_stores_all_or_leaves_no_store_behind(tmp_path: Path) -> None:
    from lab.app.importing import import_files

    options = ImportOptions(variant="thp", workload="gdb-build")
    db = tmp_path / "new" / "deeper" / "lab.db"
    good, bad = str(FIX / "time-thp.txt"), str(FIX / "time-malformed.txt")
    with pytest.raises(MalformedInputError):
        import_files(db, [good, bad], options, None)
    assert not (tmp_path / "new").exists()  # the store, its -wal and -shm, and its folders
    (summary,) = import_files(db, [good], options, None)
    assert summary.stored == 5 and summary.format == "time"
    assert [s.values.size for s in Store.open(db).values(metric="real_s")] == [5]
