"""``--run`` with ``--sweep``: refused, naming both. The sweep went unread (the run alone was
compared), even a sweep that did not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.app.analyse import Selection
from lab.cli import main
from lab.core.errors import UsageError
from tests.unit.helpers import twins_store

pytestmark = pytest.mark.usefixtures("no_config")


def test_run_and_sweep_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = twins_store(tmp_path / "st" / "lab.db", 9)
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
