"""lab import of hyperfine, pyperf, pytest-benchmark and GNU time -v, each on output captured
on this machine (tests/fixtures/captures), and an unknown JSON document refused as such."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.core.errors import UsageError
from lab.importers.ingest import ImportOptions, MalformedInputError, detect_format, import_file
from lab.store import Store

CAPTURES = Path(__file__).parents[1] / "fixtures" / "captures"
HYPERFINE = CAPTURES / "hyperfine-1.15.0-export-json.json"
HYPERFINE_FAILED = CAPTURES / "hyperfine-1.15.0-ignore-failure-false.json"
PYPERF = CAPTURES / "pyperf-2.11.0-timeit.json"
PYTEST_BENCHMARK = CAPTURES / "pytest-benchmark-5.3.1-save-data.json"
GNU_TIME = CAPTURES / "gnu-time-1.9-v-append.txt"
GNU_TIME_FAILED = CAPTURES / "gnu-time-1.9-v-failed-then-ok.txt"


@pytest.fixture(name="store")
def store_fixture(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "lab.db")


def _series(store: Store) -> dict[tuple[str, str, str], list[float]]:
    return {(s.workload, s.variant, s.metric): s.values.tolist() for s in store.values()}


@pytest.mark.parametrize(
    ("path", "fmt"),
    [(HYPERFINE, "hyperfine"), (PYPERF, "pyperf"), (PYTEST_BENCHMARK, "pytest-benchmark"),
     (GNU_TIME, "gnu-time"), (GNU_TIME_FAILED, "gnu-time")],
)  # fmt: skip
def test_each_tools_output_is_recognised(path: Path, fmt: str) -> None:
    assert detect_format(path, path.read_text()[:65536]) == fmt


def test_an_unknown_json_document_is_not_a_format_lab_reads(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{\n  "rows": [1, 2]\n}\n')
    with pytest.raises(UsageError, match="no format lab reads") as caught:
        detect_format(path, path.read_text())
    assert "no end object" not in str(caught.value) and "--format" in caught.value.hint


def test_hyperfine_every_command_is_a_variant_every_time_a_sample(store: Store) -> None:
    summary = import_file(store, HYPERFINE, ImportOptions())
    document = json.loads(HYPERFINE.read_text())
    expected = {("hyperfine", r["command"], "wall_s"): r["times"] for r in document["results"]}
    assert len(expected) == 2 and summary.stored == sum(map(len, expected.values()))
    assert _series(store) == expected
    (series, *_) = store.values()
    assert (series.unit, series.direction) == ("s", "lower")


def test_hyperfine_failed_runs_are_malformed_not_samples(store: Store) -> None:
    with pytest.raises(MalformedInputError, match=r"'false' run 1 failed \(exit code 1\)"):
        import_file(store, HYPERFINE_FAILED, ImportOptions())
    assert _series(store) == {}


def test_pyperf_values_of_every_run_without_the_warmups(store: Store) -> None:
    with pytest.raises(UsageError, match="--variant"):
        import_file(store, PYPERF, ImportOptions())
    import_file(store, PYPERF, ImportOptions(variant="py311"))
    document = json.loads(PYPERF.read_text())
    (bench,) = document["benchmarks"]
    values = [v for run in bench["runs"] for v in run.get("values", [])]
    assert len(values) >= 2
    assert _series(store) == {(document["metadata"]["name"], "py311", "time_s"): values}


def test_pytest_benchmark_every_round_of_every_benchmark(store: Store) -> None:
    import_file(store, PYTEST_BENCHMARK, ImportOptions(variant="main"))
    document = json.loads(PYTEST_BENCHMARK.read_text())
    assert _series(store) == {
        (b["name"], "main", "time_s"): b["stats"]["data"] for b in document["benchmarks"]
    }


def test_pytest_benchmark_without_its_data_says_which_option_saves_it(
    store: Store, tmp_path: Path
) -> None:
    document = json.loads(PYTEST_BENCHMARK.read_text())
    for bench in document["benchmarks"]:
        del bench["stats"]["data"]
    path = tmp_path / "no-data.json"
    path.write_text(json.dumps(document, indent=4))
    with pytest.raises(MalformedInputError, match="--benchmark-save-data"):
        import_file(store, path, ImportOptions(variant="main"))


def _gnu_time(text: str, label: str) -> list[str]:
    return re.findall(rf"{re.escape(label)}: (\S+)", text)


def test_gnu_time_wall_user_sys_and_max_rss(store: Store) -> None:
    import_file(store, GNU_TIME, ImportOptions(variant="thp", workload="sum"))
    text = GNU_TIME.read_text()
    walls = [sum(float(p) * 60**i for i, p in enumerate(reversed(w.split(":"))))
             for w in _gnu_time(text, "Elapsed (wall clock) time (h:mm:ss or m:ss)")]  # fmt: skip
    assert len(walls) == 3
    assert _series(store) == {
        ("sum", "thp", "wall_s"): pytest.approx(walls),
        ("sum", "thp", "user_s"): [float(v) for v in _gnu_time(text, "User time (seconds)")],
        ("sum", "thp", "sys_s"): [float(v) for v in _gnu_time(text, "System time (seconds)")],
        ("sum", "thp", "max_rss_kib"): [
            float(v) for v in _gnu_time(text, "Maximum resident set size (kbytes)")
        ],
    }
    rss = next(s for s in store.values() if s.metric == "max_rss_kib")
    assert (rss.unit, rss.direction) == ("KiB", "lower")


def test_gnu_time_a_failed_command_is_malformed_and_the_next_is_read(store: Store) -> None:
    with pytest.raises(MalformedInputError, match="exited with status 1"):
        import_file(store, GNU_TIME_FAILED, ImportOptions(variant="thp"))
    import_file(store, GNU_TIME_FAILED, ImportOptions(variant="thp", skip_bad=True))
    assert len(_series(store)[("gnu-time", "thp", "wall_s")]) == 1
