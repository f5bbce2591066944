"""The store survives SIGKILL of its writer at any moment: no torn file, no partial batch."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

BATCH = 25
METRICS = ("time", "rate", "ops")

WRITER = f"""
import sys
from lab.store import IterationRecord, MetricInfo, Store

store = Store.open(sys.argv[1])
study = store.ensure_study("crash")
metrics = [MetricInfo(m, "u", "lower") for m in {METRICS!r}]
run = store.ensure_run(study, "crash/run", "loop", {{}}, None, None, metrics)
guest = store.ensure_guest(study, "g", "thp")
first = store.max_iteration(run, guest) + 1
print("ready", flush=True)
while True:
    batch = [
        IterationRecord(i, 1, True, output_tail="x" * 500,
                        metrics={{m: float(i) for m in {METRICS!r}}})
        for i in range(first, first + {BATCH})
    ]
    store.record(run, guest, batch)
    first += {BATCH}
"""


def _count(path: Path) -> int:
    conn = sqlite3.connect(path, timeout=10)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM iteration").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def test_sigkill_mid_write_leaves_whole_batches(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    rng = random.Random(5)
    kills = 0
    for _ in range(5):
        before = _count(path)
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while _count(path) <= before and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.15))  # somewhere in the middle of some transaction
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL
        kills += 1

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    iterations = [r[0] for r in conn.execute("SELECT iteration FROM iteration ORDER BY 1")]
    assert kills == 5 and len(iterations) >= 5 * BATCH
    # whole batches only, numbered without gaps across the restarts
    assert len(iterations) % BATCH == 0
    assert iterations == list(range(1, len(iterations) + 1))
    per_iteration = conn.execute(
        "SELECT COUNT(*) FROM sample GROUP BY iteration HAVING COUNT(*) != ?", (len(METRICS),)
    ).fetchall()
    assert per_iteration == []
    assert conn.execute("SELECT COUNT(*) FROM sample").fetchone()[0] == len(iterations) * 3
