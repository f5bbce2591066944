"""A selection that matches nothing is named in the refusal, by lab compare and lab report
alike, even when it is empty (--metric "$UNSET"): they said "no samples in the store" of a
store full of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.cli import main
from lab.store import MetricInfo, Store
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
