"""Soak: `lab run null --n 20000` on both twins; the controller stays flat, nothing is lost.

Expected duration under TCG: the runner spawns one process (`true`) per iteration and
fsyncs two journal lines (``begin`` and the result). On this host, natively, that is
~1.8 ms for the spawn and ~1.2 ms between iterations; in a TCG guest the time between
iterations measures 17-35 ms (tests/integration stores), ~15x native, which puts the spawn
at ~25 ms: ~40-70 ms per iteration, so 20,000 iterations take ~15-25 min (both guests at
once, each on its own host CPU). On KVM it is a minute or two.

While the run goes on, the controller's VmRSS and open descriptors are sampled every 0.5 s
from /proc. Bounds:

* RSS growth from the sample at 10 % progress to the largest after it: at most 25 MiB.
  What legitimately grows is the set of completed iterations (~2.5 MiB per guest at 20,000:
  the set's table and an int per entry, see tests/unit/test_controller_memory.py), SQLite's
  page cache (2 MiB by default) and allocator slack. Keeping anything per iteration beyond
  that would show: 25 MiB over the remaining 36,000 iterations is ~700 bytes each, less
  than one parsed journal line (its text alone is ~460 bytes, its objects several times
  that).
* Descriptors: at most 8 more than at the 10 % sample. The controller holds the store
  (database, WAL, shared memory), one SSH connection per guest, the run lock and stdio; a
  sample may catch a reconnect's new socket beside the old one or a short-lived pipe, but
  a leak of one descriptor per poll would add thousands.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.conftest import Pair
from tests.integration.test_run import samples

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N = 20_000
MiB = 1024 * 1024
RSS_GROWTH_MAX = 25 * MiB
FD_SPREAD_MAX = 8
DEADLINE_S = 3 * 3600  # the estimate above, with a wide margin for a loaded host


def rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def open_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def stored_samples(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(db, timeout=30)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM sample").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0
    finally:
        conn.close()


def test_twenty_thousand_null_iterations_keep_the_controller_flat(
    pair: Pair,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "lab.db"
    log = tmp_path / "run.log"
    argv = [sys.executable, "-m", "lab", "run", "null", "--n", str(N), "--db", str(db)]
    started = time.monotonic()
    with open(log, "w") as out:  # a file, not a pipe nobody reads during half an hour
        proc = subprocess.Popen(argv, env=pair.lab.env, stdout=out, stderr=subprocess.STDOUT)
    # (time, rss, fds, samples stored); the store is asked every 10th tick only
    ticks: list[tuple[float, int, int, int]] = []
    stored = 0
    try:
        while proc.poll() is None:
            if time.monotonic() - started > DEADLINE_S:
                raise AssertionError(f"not done after {DEADLINE_S} s: {stored} samples stored")
            rss, fds = rss_bytes(proc.pid), open_fds(proc.pid)
            if len(ticks) % 10 == 0:
                stored = stored_samples(db)
            if rss is not None and fds is not None:
                ticks.append((time.monotonic() - started, rss, fds, stored))
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    duration = time.monotonic() - started
    output = log.read_text()
    assert proc.returncode == 0, output[-3000:]

    got = samples(db, "null", "wall_s")
    assert {name: len(v) for name, v in got.items()} == {"lab-thp": N, "lab-shp1g": N}
    for values in got.values():
        assert [i for i, _ in values] == list(range(1, N + 1))
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        spans = conn.execute(
            "SELECT g.name, (MAX(i.ended) - MIN(i.started)) / COUNT(*) FROM iteration i"
            " JOIN guest g ON g.id = i.guest_id GROUP BY g.name ORDER BY g.name"
        ).fetchall()
    finally:
        conn.close()

    steady = [t for t in ticks if t[3] >= 2 * N // 10]
    assert len(steady) >= 20, f"too few samples after 10 % progress: {len(ticks)} in all"
    at_tenth, after = steady[0], steady[1:]
    rss_max = max(t[1] for t in after)
    fd_min, fd_max = min(t[2] for t in steady), max(t[2] for t in steady)
    figures = {
        "soak_duration_s": round(duration, 1),
        "soak_ms_per_iteration_in_guest": {name: round(s * 1e3, 2) for name, s in spans},
        "soak_rss_start_mib": round(ticks[0][1] / MiB, 1),
        "soak_rss_at_10pct_mib": round(at_tenth[1] / MiB, 1),
        "soak_rss_max_mib": round(max(t[1] for t in ticks) / MiB, 1),
        "soak_rss_end_mib": round(ticks[-1][1] / MiB, 1),
        "soak_rss_growth_after_10pct_mib": round((rss_max - at_tenth[1]) / MiB, 2),
        "soak_fds_min_max_all": (min(t[2] for t in ticks), max(t[2] for t in ticks)),
        "soak_fds_min_max_after_10pct": (fd_min, fd_max),
        "soak_fds_at_10pct": at_tenth[2],
        "soak_ticks": len(ticks),
    }
    for key, value in figures.items():
        record_property(key, value)
    with capsys.disabled():  # shown whatever -s/-ra say
        print("\nsoak figures:", ", ".join(f"{k}={v}" for k, v in figures.items()))

    assert rss_max - at_tenth[1] <= RSS_GROWTH_MAX, figures
    # A leak is growth: the descriptors above those open at 10 % (the controller closing
    # its store and connections as it exits shows as a low minimum, not a leak).
    assert max(t[2] for t in after) - at_tenth[2] <= FD_SPREAD_MAX, figures
