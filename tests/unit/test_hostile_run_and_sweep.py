"""``--run`` with ``--sweep``: refused, naming both. The sweep went unread (the run alone was
compared), even a sweep that did not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.app.analyse import Selection
from lab.cli import main
from lab.core.errors import UsageError
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")


def test_run_and_sweep_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "st" / "lab.db"
    with Store.open(db) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, None, 9, [MetricInfo("t", "s", "lower")])
        for variant in ("thp", "shp1g"):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, metrics={"t": 10.0 + i % 3}) for i in range(1, 10)
            ])  # fmt: skip
    for command in (["compare"], ["report", "--out", str(tmp_path / "report")]):
        assert main([*command, "--db", str(db), "--run", "s/w", "--sweep", "nosuch"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(
            "lab: error: --run s/w and --sweep nosuch both say which runs to compare"
        )
    assert not (tmp_path / "report").exists()
    with pytest.raises(UsageError):
        Selection(run="s/w", sweep="k")
    assert main(["compare", "--db", str(db), "--run", "s/w"]) == 0  # either alone is read
