"""``lab compare --by host`` writes a table or JSON; asked for CSV or Markdown it says so,
where it printed the table as if asked for it (a pipeline reading CSV got box drawing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.cli import main
from tests.unit.helpers import twins_store

pytestmark = pytest.mark.usefixtures("no_config")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return twins_store(tmp_path / "st" / "lab.db", 20)


@pytest.mark.parametrize("form", ["csv", "markdown"])
def test_by_host_refuses_a_format_it_does_not_write(
    db: Path,
    capsys: pytest.CaptureFixture[str],
    form: str,
) -> None:
    assert main(["compare", "--db", str(db), "--by", "host", "--format", form]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"lab: error: --by host writes a table or JSON, not {form}. Pass --format table or"
        " --format json with --by host\n"
    )


def test_by_host_writes_its_table(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--db", str(db), "--by", "host"]) == 0
    assert "local" in capsys.readouterr().out
