"""hyperfine, pyperf, pytest-benchmark and GNU time -v refuse what CSV refuses (issue 39 §3):
names lab import refuses, a key given twice, negative durations, two benchmarks of one name;
and --workload is honoured. Each input is the real capture of tests/fixtures/captures, changed
where the test says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.importers.ingest import ImportOptions, MalformedInputError, import_file
from lab.store import Store
from tests.unit.test_import_foreign import GNU_TIME, HYPERFINE, PYPERF, PYTEST_BENCHMARK


def _refused(tmp_path: Path, name: str, text: str, **options: Any) -> str:
    path = tmp_path / name
    path.write_text(text)
    with Store.open(tmp_path / "lab.db") as store, pytest.raises(MalformedInputError) as caught:
        import_file(store, path, ImportOptions(**options))
    return str(caught.value)


def test_a_ten_kilobyte_hyperfine_command_is_refused_in_a_short_message(tmp_path: Path) -> None:
    doc = json.loads(HYPERFINE.read_text())
    doc["results"][0]["command"] = "x" * 10_000
    message = _refused(tmp_path, "h.json", json.dumps(doc))
    assert "is longer than 200 characters" in message, message
    assert len(message) < 400 and message.count("(10,000 characters)") == 1


def test_a_control_character_in_a_hyperfine_command_is_refused(tmp_path: Path) -> None:
    doc = json.loads(HYPERFINE.read_text())
    doc["results"][0]["command"] = "sleep\x1b[2J 1"
    assert "control character" in _refused(tmp_path, "h.json", json.dumps(doc))


def test_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    # json.loads keeps the last "command": a result was stored under a name it never had
    text = HYPERFINE.read_text().replace('"command":', '"command": "evil", "command":', 1)
    assert "gives the key 'command' twice" in _refused(tmp_path, "h.json", text)


@pytest.mark.parametrize("tool", ["hyperfine", "pyperf", "pytest-benchmark"])
def test_a_negative_duration_is_refused(tmp_path: Path, tool: str) -> None:
    if tool == "hyperfine":
        doc = json.loads(HYPERFINE.read_text())
        doc["results"][0]["times"][0] = -1.5
        text, options = json.dumps(doc), {}
    elif tool == "pyperf":
        doc = json.loads(PYPERF.read_text())
        runs = [r for r in doc["benchmarks"][0]["runs"] if r.get("values")]
        runs[0]["values"][0] = -0.25
        text, options = json.dumps(doc), {"variant": "thp"}
    else:
        doc = json.loads(PYTEST_BENCHMARK.read_text())
        doc["benchmarks"][0]["stats"]["data"][0] = -0.001
        text, options = json.dumps(doc), {"variant": "thp"}
    assert "a negative time" in _refused(tmp_path, "t.json", text, **options)


def test_a_negative_gnu_time_user_time_is_refused(tmp_path: Path) -> None:
    text = GNU_TIME.read_text()
    line = next(x for x in text.splitlines() if "User time (seconds):" in x)
    changed = text.replace(line, line.split(":")[0] + ": -0.50", 1)
    message = _refused(tmp_path, "t.txt", changed, variant="thp", format="gnu-time")
    assert "'User time (seconds)' is negative" in message


def test_two_pytest_benchmarks_of_one_name_are_refused(tmp_path: Path) -> None:
    # their rounds were merged into one series
    doc = json.loads(PYTEST_BENCHMARK.read_text())
    doc["benchmarks"].append(dict(doc["benchmarks"][0]))
    name = doc["benchmarks"][0]["name"]
    message = _refused(tmp_path, "t.json", json.dumps(doc), variant="thp")
    assert f"two benchmarks are named '{name}'" in message


@pytest.mark.parametrize(("path", "unit"), [(PYPERF, "s"), (PYTEST_BENCHMARK, "s")])
def test_workload_makes_each_benchmark_a_metric_of_it(
    tmp_path: Path, path: Path, unit: str
) -> None:
    # pyperf stored "timeit" and pytest-benchmark the test names, whatever --workload said
    doc = json.loads(path.read_text())
    names = sorted(
        (b.get("metadata") or {}).get("name") or doc.get("metadata", {}).get("name") or b["name"]
        for b in doc["benchmarks"]
    )
    with Store.open(tmp_path / "lab.db") as store:
        import_file(store, path, ImportOptions(variant="thp", workload="mine"))
        series = store.values()
    assert {s.workload for s in series} == {"mine"}
    assert sorted(s.metric for s in series) == names
    assert {s.unit for s in series} == {unit}
