"""One `lab run` per lab: the run lock, held by real processes.

A holder is a separate Python process that takes the lock and sleeps; the tests take the
same lock in this process, kill the holder with SIGKILL, and fake a reused pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.cli import main
from lab.core.errors import LabError
from lab.guests.labstate import GuestRecord, LabState, save_state
from lab.run.lock import (
    LOCK_FILE,
    Holder,
    RunLockedError,
    command_of,
    run_lock,
    start_ticks,
)

PROJECT = Path(__file__).resolve().parents[2]
HOLD = """
import sys, time
from pathlib import Path
from lab.run.lock import run_lock
with run_lock(Path(sys.argv[1]), ["lab", "run", "null", "--n", "500"]):
    print("locked", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A live process holding the run lock of ``tmp_path/state``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "state")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def killed(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    return proc.pid


def test_a_second_run_is_refused_naming_the_first(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    with (
        pytest.raises(RunLockedError) as err,
        run_lock(tmp_path / "state", ["lab", "run", "null", "--n", "3"]),
    ):
        pass
    message = str(err.value)
    assert f"pid {holder.pid}" in message
    assert "command `lab run null --n 500`" in message
    assert "started " + time.strftime("%Y-%m-%d") in message
    assert f"kill {holder.pid}" in message and str(tmp_path / "state" / LOCK_FILE) in message
    assert err.value.holder is not None and err.value.holder.pid == holder.pid


def test_a_lock_of_a_killed_holder_is_taken_over_with_a_notice(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    pid = killed(holder)
    notes: list[str] = []
    with run_lock(tmp_path / "state", ["lab", "run", "null", "--n", "3"], notes.append) as me:
        assert me.pid == os.getpid()
        body = json.loads((tmp_path / "state" / LOCK_FILE).read_text())
        assert body["pid"] == os.getpid() and body["argv"][:3] == ["lab", "run", "null"]
    assert len(notes) == 1
    assert "took over a stale run lock" in notes[0]
    assert f"pid {pid}" in notes[0] and "lab run null --n 500" in notes[0]
    assert f"pid {pid} is no longer running" in notes[0]


def test_a_clean_release_leaves_nothing_stale(tmp_path: Path) -> None:
    notes: list[str] = []
    with run_lock(tmp_path, ["lab", "run", "a"], notes.append):
        pass
    assert (tmp_path / LOCK_FILE).read_text() == ""
    with run_lock(tmp_path, ["lab", "run", "b"], notes.append):
        pass
    assert notes == []


def test_a_reused_pid_is_told_apart_by_its_start_time(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"])
    deadline = time.monotonic() + 10
    while command_of(other.pid) != "sleep 30" and time.monotonic() < deadline:
        time.sleep(0.01)  # between fork and exec the child is still a python
    try:
        ticks = start_ticks(other.pid)
        assert ticks is not None
        dead = Holder(other.pid, time.time() - 60, ticks - 1, os.uname().nodename, ["lab", "run"])
        (tmp_path / LOCK_FILE).write_text(json.dumps(dead.__dict__))
        notes: list[str] = []
        with run_lock(tmp_path, ["lab", "run", "null"], notes.append):
            pass
        assert f"pid {other.pid} now belongs to another program (sleep 30)" in notes[0]
    finally:
        other.kill()
        other.wait()


def test_the_lock_is_re_entrant_within_a_process(tmp_path: Path) -> None:
    with run_lock(tmp_path, ["lab", "demo"]), run_lock(tmp_path, ["lab", "run", "null"]):
        body = json.loads((tmp_path / LOCK_FILE).read_text())
        assert body["argv"] == ["lab", "demo"]
    assert (tmp_path / LOCK_FILE).read_text() == ""


def test_a_lock_that_cannot_be_made_is_a_lab_error(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("a file where the state directory should be")
    with (
        pytest.raises(LabError, match="cannot open the run lock"),
        run_lock(tmp_path / "state", ["lab", "run"]),
    ):
        pass


def test_start_ticks_of_this_process_and_of_no_process() -> None:
    assert isinstance(start_ticks(os.getpid()), int)
    assert start_ticks(2**22 + 7) is None  # above pid_max: never a process


def test_lab_run_refuses_while_another_run_holds_the_lab(
    tmp_path: Path,
    holder: subprocess.Popen[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    state_dir = tmp_path / "state"
    record = GuestRecord("lab-thp", "thp", "52:54:00:00:00:01", str(tmp_path), [0], 0, "")
    save_state(state_dir, LabState([record], "qemu", "t", "img", "h", "lab", "198.18.0.1", [0], 0))
    config = tmp_path / "lab.toml"
    config.write_text(
        f'libvirt_uri = "test:///default"\nstate_dir = "{state_dir}"\n'
        f'store = "{tmp_path / "lab.db"}"\n'
    )
    monkeypatch.setenv("LAB_CONFIG", str(config))
    assert main(["run", "null", "--n", "3"]) == RunLockedError.exit_code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("lab: error: another lab run is using this lab: ")
    assert f"pid {holder.pid}" in err[0] and "lab run null --n 500" in err[0]
    assert not (tmp_path / "lab.db").exists()  # refused before the store was opened


def test_a_study_is_refused_while_another_run_holds_the_lab(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    """lab.app.studyrun holds the lock for the whole study: refused before its store is made."""
    from lab.app.study import load_study
    from lab.app.studyrun import run_study_holding_the_lab
    from lab.commands.show import ConsoleShow
    from lab.core.config import Config
    from lab.core.context import Context
    from lab.core.paths import STUDIES_DIR

    ctx = Context(config=Config(state_dir=str(tmp_path / "state")))
    study = load_study(STUDIES_DIR / "demo.toml")
    db = tmp_path / "lab.db"
    argv = ["lab", "study", "run", "demo.toml"]
    with pytest.raises(RunLockedError, match=f"pid {holder.pid}"):
        run_study_holding_the_lab(ctx, study, str(db), ConsoleShow(ctx), argv)
    assert not db.exists()
