"""A run key from a careless command line: an empty one (an unset shell variable) or a prefix
too short to mean one run picks nothing, wherever a key is resolved."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")
ROOT = Path(__file__).resolve().parents[2]
KEYS = ("w-1a2b3c4d", "abc")  # a usual key and a short one, whole


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "lab.db"
    with Store.open(path) as store:
        study = store.ensure_study("s")
        for key in KEYS:
            run = store.ensure_run(study, key, "w", {}, None, 2, [MetricInfo("t", "s", "lower")])
            for variant in ("thp", "shp1g"):
                guest = store.ensure_guest(study, f"g-{variant}", variant)
                records = [IterationRecord(i, 1, True, metrics={"t": i + 0.5}) for i in (1, 2)]
                store.record(run, guest, records)
    return path


def run_count(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM run").fetchone()[0])


def lab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "COLUMNS": "300"})  # fmt: skip


@pytest.mark.parametrize("key", ["", "   ", "\t"])
def test_runs_delete_of_an_empty_key_deletes_nothing(db: Path, key: str) -> None:
    """With one run in the store, "" was a unique prefix of its key."""
    assert lab("runs", "--db", str(db), "delete", "--yes", "abc").returncode == 0
    done = lab("runs", "--db", str(db), "delete", "--yes", key)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "empty run key" in done.stderr
    assert run_count(db) == 1


@pytest.mark.parametrize("prefix", ["w", "w-", "w-1"])
def test_a_prefix_shorter_than_four_characters_picks_nothing(
    db: Path, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unique here, yet three characters could name another run tomorrow."""
    assert main(["runs", "--db", str(db), "delete", "--yes", prefix]) == 2
    assert "shorter than 4 characters" in capsys.readouterr().err
    assert run_count(db) == 2
    assert main(["runs", "--db", str(db), "show", prefix]) == 2


def test_a_whole_short_key_and_a_long_prefix_still_pick_their_run(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "--db", str(db), "show", "abc", "--json"]) == 0
    assert '"key": "abc"' in capsys.readouterr().out
    assert main(["runs", "--db", str(db), "delete", "--yes", "w-1a"]) == 0
    capsys.readouterr()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT key FROM run").fetchall() == [("abc",)]


@pytest.mark.parametrize(
    "command",
    [
        ["export", "--run", ""],
        ["export", "--run", "w-1"],
        ["compare", "--run", ""],
        ["compare", "--run", "w-1"],
        ["compare", "--run", "abc", "--against", ""],
        ["report", "--run", "", "--embed"],
    ],
)
def test_every_run_option_refuses_empty_and_short_keys(
    db: Path, tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--run ""` was taken as no --run at all: every run exported or compared."""
    extra = ["--out", str(tmp_path / "out")] if command[0] in ("export", "report") else []
    assert main([*command, "--db", str(db), *extra]) == 2
    err = capsys.readouterr().err
    assert "empty run key" in err or "shorter than 4 characters" in err, err
    assert not (tmp_path / "out").exists()
