"""``lab runs --study NAME`` of a study the store does not hold says so, naming the ones it
does: it printed "no runs stored yet" of a store full of runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.cli import main
from lab.store import MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")


def _store(path: Path, studies: tuple[str, ...]) -> Path:
    with Store.open(path) as store:
        for name in studies:
            study = store.ensure_study(name)
            store.ensure_run(study, f"{name}/w", "w", {}, None, 5, [MetricInfo("t", "s", "lower")])
    return path


def test_runs_of_a_study_the_store_does_not_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _store(tmp_path / "st" / "lab.db", ("s1", "s2"))
    assert main(["runs", "--db", str(db), "--study", "nope"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        err
        == f"lab: error: no study 'nope' in {db}. Its studies: s1, s2 (--study takes one of them)\n"
    )
    assert main(["runs", "--db", str(db), "--study", "s2", "--json"]) == 0
    assert [r["key"] for r in json.loads(capsys.readouterr().out)] == ["s2/w"]


def test_runs_of_a_store_without_studies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _store(tmp_path / "st" / "lab.db", ())
    assert main(["runs", "--db", str(db)]) == 0
    assert "no runs stored yet" in capsys.readouterr().out
    assert main(["runs", "--db", str(db), "--study", "s"]) == 2
    assert "It holds no study yet: `lab run` or `lab import` makes one" in capsys.readouterr().err
