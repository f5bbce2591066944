"""``lab compare --by host`` writes a table or JSON; asked for CSV or Markdown it says so,
where it printed the table as if asked for it (a pipeline reading CSV got box drawing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "st" / "lab.db"
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, None, 20, [MetricInfo("t", "s", "lower")])
        for variant, base in (("thp", 10.0), ("shp1g", 10.5)):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, metrics={"t": base + (i % 7) / 10})
                for i in range(1, 21)
            ])  # fmt: skip
    return path


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
