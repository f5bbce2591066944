"""``lab runs delete`` asking on a terminal: Ctrl-D (no answer) deletes nothing and says so,
where it ended in "unexpected EOFError ... This is a bug in lab"."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from lab.store import MetricInfo, Store

CHECKOUT = Path(__file__).resolve().parents[2]


def _read_until(fd: int, text: bytes, seconds: float = 20) -> bytes:
    got = b""
    deadline = time.monotonic() + seconds
    while text not in got and time.monotonic() < deadline:
        try:
            got += os.read(fd, 4096)
        except OSError:  # the terminal's other end closed: the process ended
            break
    return got


def test_ctrl_d_at_the_delete_prompt_deletes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    with Store.open(db) as store:
        study = store.ensure_study("s")
        store.ensure_run(study, "s/w", "w", {}, None, 5, [MetricInfo("t", "s", "lower")])
    main_fd, terminal = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT), "COLUMNS": "200"}
    env.pop("LAB_CONFIG", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab", "runs", "delete", "s/w", "--db", str(db)],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=CHECKOUT, env=env,
    )  # fmt: skip
    os.close(terminal)
    try:
        assert b"[y/N]" in _read_until(main_fd, b"[y/N]")
        os.write(main_fd, b"\x04")  # Ctrl-D
        said = _read_until(main_fd, b"nothing deleted")
        assert proc.wait(20) == 0, said
    finally:
        proc.kill()
        proc.wait()
        os.close(main_fd)
    assert b"nothing deleted" in said and b"EOFError" not in said
    with Store.open(db, create=False) as store:
        assert [r.key for r in store.runs()] == ["s/w"]


def test_delete_without_a_terminal_says_it_would_have_asked(tmp_path: Path) -> None:
    """It printed its question as the error: "delete run s/w (w, study s)?. Nothing..."."""
    db = tmp_path / "lab.db"
    with Store.open(db) as store:
        study = store.ensure_study("s")
        store.ensure_run(study, "s/w", "w", {}, None, 5, [MetricInfo("t", "s", "lower")])
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT), "COLUMNS": "200"}
    env.pop("LAB_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "lab", "runs", "delete", "s/w", "--db", str(db)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=CHECKOUT, env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "lab: error: deleting run s/w (w, study s) is asked first, and standard input is no"
        " terminal to ask on. Nothing was deleted: pass --yes to delete it without being asked\n"
    )
    with Store.open(db, create=False) as store:
        assert [r.key for r in store.runs()] == ["s/w"]
