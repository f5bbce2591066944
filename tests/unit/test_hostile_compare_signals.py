"""``lab compare`` stopped while child processes read its samples (lab.store.parts): no child
reads on for nobody, whatever stopped it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.store import IterationRecord, MetricInfo, Store

CHECKOUT = Path(__file__).resolve().parents[2]

# A parent that starts a child reading parts, says the child's pid, and waits to be stopped.
# The parts are many and absent (three index lookups each): the child reads for seconds.
PARENT = """
import sys, time
from lab.store.parts import Children
children = Children(sys.argv[1], [[(9, 9, f"m{i}") for i in range(300_000)]])
print(children.procs[0].pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_child_ends_with_the_parent_that_was_killed(tmp_path: Path, sig: int) -> None:
    """Killed, the parent never closes its children (its ``with`` block does not end):
    they read on, for seconds at a million samples each, their output unread."""
    db = tmp_path / "lab.db"
    with Store.open(db) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, None, 1, [MetricInfo("t", "s", "lower")])
        guest = store.ensure_guest(study, "lab-thp", "thp")
        store.record(run, guest, [IterationRecord(1, 1, True, metrics={"t": 1.0})])
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, f"file:{db}?mode=ro"], stdout=subprocess.PIPE,
        env=env, text=True,
    )  # fmt: skip
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(0.2)  # reading
    assert _alive(child)
    parent.send_signal(sig)
    parent.wait(10)
    parent.stdout.close()
    deadline = time.monotonic() + 2
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child)
