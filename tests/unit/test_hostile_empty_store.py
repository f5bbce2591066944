"""A command that only reads, given an empty file, says there is no store there and leaves
the file as it was: SQLite takes an empty file for an empty database, and the command wrote
the whole schema into it (118 KB), a file it had been told to read."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.cli import main
from lab.core.errors import UsageError
from lab.store import Store

pytestmark = pytest.mark.usefixtures("no_config")

CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "command", [["compare"], ["runs"], ["store", "check"], ["plan", "--from-store"]]
)
def test_a_read_of_an_empty_file_leaves_it_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    (tmp_path / "st").mkdir()
    db = tmp_path / "st" / "lab.db"
    db.touch()
    assert main([*command, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"lab: error: no result store at {db}: the file is empty.")
    assert db.stat().st_size == 0
    assert [p.name for p in db.parent.iterdir()] == ["lab.db"]  # no -wal, no -shm


def test_a_writer_still_makes_a_store_of_an_empty_file(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    db.touch()
    with pytest.raises(UsageError):
        Store.open(db, create=False)
    with Store.open(db) as store:
        store.ensure_study("s")
    with Store.open(db, create=False) as store:
        assert [s.name for s in store.studies()] == ["s"]
