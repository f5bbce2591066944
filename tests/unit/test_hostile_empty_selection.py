"""A selection that matches nothing is named in the refusal, by lab compare and lab report
alike, even when it is empty (--metric "$UNSET"): they said "no samples in the store" of a
store full of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store
from tests.unit.helpers import twins_store

pytestmark = pytest.mark.usefixtures("no_config")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return twins_store(tmp_path / "st" / "lab.db", 9)


@pytest.mark.parametrize(
    ("option", "value"),
    [("--metric", ""), ("--workload", ""), ("--study", ""), ("--workload", "x")],
)
@pytest.mark.parametrize("command", ["compare", "report"])
def test_the_refusal_names_the_selection(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, option: str,
    value: str,
) -> None:  # fmt: skip
    out = ["--out", str(tmp_path / "report")] if command == "report" else []
    assert main([command, "--db", str(db), option, value, *out]) == 2
    name = option.removeprefix("--")
    assert capsys.readouterr().err == (
        f"lab: error: no samples in the store for {name} {value!r}. Collect some with `lab run`"
        " or bring them in with `lab import FILE`\n"
    )
    assert not (tmp_path / "report").exists()


def test_a_run_without_samples_is_named_alone_or_against_another(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--run of a run without samples said "no samples in the store"; --against it said the
    runs "share no variant to compare (shp1g, thp against )"."""
    with Store.open(db) as store:
        (study,) = store.studies()
        store.ensure_run(
            study.id, "s/empty", "w", {"x": 1}, None, 9, [MetricInfo("t", "s", "lower")]
        )
    said = (
        "lab: error: no samples in the store for run 's/empty'. Collect some with `lab run` or"
        " bring them in with `lab import FILE`\n"
    )
    for pair in (["--run", "s/empty"], ["--run", "s/w", "--against", "s/empty"],
                 ["--run", "s/empty", "--against", "s/w"]):  # fmt: skip
        assert main(["compare", "--db", str(db), *pair]) == 2
        assert capsys.readouterr().err == said


def one_variant_store(path: Path, workloads: dict[str, tuple[str, ...]]) -> Path:
    """Each workload's samples of the variants given, two each."""
    with Store.open(path) as store:
        study = store.ensure_study("s")
        for workload, variants in workloads.items():
            run = store.ensure_run(study, f"s/{workload}", workload, {}, "sync", 2,
                                   [MetricInfo("t", "s", "lower")])  # fmt: skip
            for variant in variants:
                guest = store.ensure_guest(study, f"lab-{variant}", variant)
                store.record(run, guest, [IterationRecord(i, 1, True, metrics={"t": 1.0 + i})
                                          for i in (1, 2)])  # fmt: skip
    return path


@pytest.mark.parametrize("form", ["table", "json"])
def test_a_compare_with_nothing_to_compare_says_why_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    """Issue 40: one variant per workload (a pytest-benchmark test each) printed nothing and
    exited 0."""
    db = one_variant_store(tmp_path / "lab.db", {"w1": ("thp",), "w2": ("shp1g",)})
    assert main(["compare", "--db", str(db), "--format", form]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        "lab: error: nothing to compare: each workload holds one variant: w1 (thp), w2 (shp1g)."
    )
    assert err.count("\n") == 1


def test_a_workload_of_one_variant_beside_compared_ones_is_named_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = one_variant_store(tmp_path / "lab.db", {"w1": ("thp", "shp1g"), "w2": ("shp1g",)})
    assert main(["compare", "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    assert "w1" in out and "w2" not in out
    assert "lab: not compared, one variant only: w2 (shp1g)\n" in err
