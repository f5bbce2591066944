#!/usr/bin/env python3
"""The soak: `lab run null --n N` on both twins, the controller's memory and descriptors watched.

Needs a pair up (`lab up --pair thp,shp1g ...`). While the run goes on, the controller's
VmRSS and open descriptors are read from /proc every half second, with the number of
iterations stored so far. After the first 10 % of the run (start-up, imports, SQLite's
imports) each is fitted against the iteration number: the changes from one look to the
next added up, less the three largest, over the iterations between the first look and the
last. A leak adds a little at many looks and stays in the sum; a one-off step does not:
the controller's heap reaches its high-water mark in the first large backlogs it ingests
(the journal lines that gathered while it asked the runners whether they still run, every
30 s), and a set's table doubles now and then. The slopes are bounded:

* RSS: at most ``RSS_SLOPE_MAX`` bytes per iteration (of each twin). What legitimately
  grows is the set of completed iterations (an int and a table slot, ~60 bytes per
  iteration of each twin), in steps as its table doubles; the store's page cache is held
  at 256 KiB while a run writes (``lab.run.controller.STORE_CACHE_KIB``; SQLite's default
  2 MiB filled over the first 4,000 iterations, ~500 bytes per iteration). Measured on
  the real pair, 3,000 iterations: 7-124 bytes per iteration. Keeping one journal line
  per iteration (its text ~300 bytes for `null`, two twins) measured 476: past the bound.
* Descriptors: at most ``FD_SLOPE_MAX`` per 1,000 iterations: a descriptor left open per
  poll (one a second) would add dozens.

The totals are bounded too (growth of RSS after 10 %, descriptors above those open at
10 %), as the 20,000-iteration soak always was. A short soak (a few thousand
iterations, `tests/integration/test_soak.py`, in CI) catches a leak by its slope; this
script runs the long one (20,000 iterations by default, half an hour under TCG on a slow
machine, a few minutes on KVM) and prints its figures:

    .venv/bin/python bench/soak.py [--n 20000] [--db PATH]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MiB = 1024 * 1024
RSS_SLOPE_MAX = 300.0  # bytes per iteration (of each twin), after the first 10 %
FD_SLOPE_MAX = 1.0  # descriptors per 1,000 iterations, after the first 10 %
RSS_GROWTH_MAX = 25 * MiB  # after the first 10 %, whatever the length
FD_SPREAD_MAX = 8  # descriptors above those open at 10 %
SETTLE = 0.10  # the share of the run left out of the fits
STEPS = 3  # the largest rises left out of the slope: one-off high-water marks


@dataclass(frozen=True)
class Tick:
    """One look at the controller: seconds since start, RSS bytes, descriptors, iterations
    stored per twin so far."""

    t: float
    rss: int
    fds: int
    iterations: float


@dataclass
class Watched:
    returncode: int
    duration: float
    ticks: list[Tick]
    output: str


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


def stored_iterations(db: Path, twins: int) -> float:
    """Successful iterations stored, per twin (0 before the store has its schema)."""
    if not db.exists():
        return 0.0
    conn = sqlite3.connect(db, timeout=30)
    try:
        count = conn.execute("SELECT COUNT(*) FROM iteration WHERE ok").fetchone()[0]
        return int(count) / twins
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0.0
    finally:
        conn.close()


def watch(
    argv: Sequence[str],
    env: dict[str, str],
    db: Path,
    log: Path,
    deadline_s: float,
    twins: int = 2,
    interval: float = 0.5,
) -> Watched:
    """Run ``argv`` (a `lab run ... --db DB`) and look at it every ``interval`` seconds."""
    started = time.monotonic()
    with open(log, "w") as out:  # a file, not a pipe nobody reads for half an hour
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    ticks: list[Tick] = []
    try:
        while proc.poll() is None:
            if time.monotonic() - started > deadline_s:
                done = stored_iterations(db, twins)
                raise AssertionError(f"not done after {deadline_s} s: {done} iterations stored")
            rss, fds = rss_bytes(proc.pid), open_fds(proc.pid)
            iterations = stored_iterations(db, twins)
            if rss is not None and fds is not None and proc.poll() is None:
                ticks.append(Tick(time.monotonic() - started, rss, fds, iterations))
            time.sleep(interval)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return Watched(proc.returncode, time.monotonic() - started, ticks, log.read_text())


def settled(ticks: Sequence[Tick], n: int) -> list[Tick]:
    """The looks after the first 10 % of the run's iterations and before its last: once
    every iteration is stored the controller closes its store and connections and the
    interpreter frees what it held, which is no part of the run."""
    return [t for t in ticks if SETTLE * n <= t.iterations < n]


def slope(ticks: Sequence[Tick], field: str) -> float:
    """Growth of ``field`` per iteration: the changes from one look to the next added up,
    less the ``STEPS`` largest (one-off high-water marks), over the iterations in between."""
    values = [float(getattr(t, field)) for t in ticks]
    span = ticks[-1].iterations - ticks[0].iterations
    if len(ticks) < STEPS + 2 or span <= 0:
        raise AssertionError(f"too few looks to fit {field}: {len(ticks)} over {span} iterations")
    changes = sorted((b - a for a, b in itertools.pairwise(values)), reverse=True)
    return sum(changes[STEPS:]) / span


def figures(ticks: Sequence[Tick], n: int) -> dict[str, Any]:
    """What the soak measured, from its ticks: slopes, totals after 10 %, descriptors."""
    steady = settled(ticks, n)
    if len(steady) < 20:
        raise AssertionError(f"too few looks after 10 % progress: {len(steady)} of {len(ticks)}")
    at_tenth, after = steady[0], steady[1:]
    return {
        "rss_slope_bytes_per_iteration": round(slope(steady, "rss"), 1),
        "fd_slope_per_1000_iterations": round(1000 * slope(steady, "fds"), 3),
        "rss_start_mib": round(ticks[0].rss / MiB, 1),
        "rss_at_10pct_mib": round(at_tenth.rss / MiB, 1),
        "rss_max_mib": round(max(t.rss for t in ticks) / MiB, 1),
        "rss_growth_after_10pct_mib": round((max(t.rss for t in after) - at_tenth.rss) / MiB, 2),
        "fds_at_10pct": at_tenth.fds,
        "fds_min_max_after_10pct": (min(t.fds for t in steady), max(t.fds for t in steady)),
        "fds_growth_after_10pct": max(t.fds for t in after) - at_tenth.fds,
        "looks": len(ticks),
        "looks_fitted": len(steady),
    }


def leaks(found: dict[str, Any]) -> list[str]:
    """The bounds the figures break, each said in a line; none when the controller is flat."""
    broken = []
    rss_slope = float(found["rss_slope_bytes_per_iteration"])
    if rss_slope > RSS_SLOPE_MAX:
        broken.append(f"RSS grows {rss_slope:.0f} bytes per iteration (bound {RSS_SLOPE_MAX:.0f})")
    fd_slope = float(found["fd_slope_per_1000_iterations"])
    if fd_slope > FD_SLOPE_MAX:
        broken.append(
            f"descriptors grow {fd_slope:.2f} per 1,000 iterations (bound {FD_SLOPE_MAX})"
        )
    growth = float(found["rss_growth_after_10pct_mib"])
    if growth * MiB > RSS_GROWTH_MAX:
        broken.append(f"RSS grew {growth:.1f} MiB after 10 % (bound {RSS_GROWTH_MAX // MiB})")
    fd_growth = int(found["fds_growth_after_10pct"])
    if fd_growth > FD_SPREAD_MAX:
        broken.append(f"{fd_growth} more descriptors than at 10 % (bound {FD_SPREAD_MAX})")
    return broken


def ms_per_iteration(db: Path) -> dict[str, float]:
    """Each guest's time per iteration in the guest: its journal's span over its count."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT g.name, (MAX(i.ended) - MIN(i.started)) / COUNT(*) FROM iteration i"
            " JOIN guest g ON g.id = i.guest_id GROUP BY g.name ORDER BY g.name"
        ).fetchall()
    finally:
        conn.close()
    return {name: round(span * 1e3, 2) for name, span in rows}


def soak_command(n: int, db: Path, study: str, schedule: str = "sync") -> list[str]:
    """`lab run null` for n iterations into ``db``: a study of its own gives a run of its own
    (a run's key is what was asked, so the same command would resume an earlier soak)."""
    return [sys.executable, "-m", "lab", "run", "null", "--n", str(n), "--db", str(db),
            "--study", study, "--schedule", schedule]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="iterations per twin")
    parser.add_argument("--db", type=Path, help="store to use (default: a temporary one)")
    parser.add_argument("--deadline", type=float, default=4 * 3600, help="seconds at most")
    parser.add_argument("--ticks", type=Path, help="write every look to this CSV file")
    parser.add_argument(
        "--schedule",
        default="sync",
        choices=("sync", "alternate", "concurrent"),
        help="the run's schedule (default: sync, lab run's)",
    )
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="lab-soak-"))
    db = args.db or scratch / "lab.db"
    run = soak_command(args.n, db, f"soak-{time.time():.0f}", args.schedule)
    print(f"soak: {' '.join(run[1:])} (log: {scratch / 'run.log'})", flush=True)
    watched = watch(run, dict(os.environ), db, scratch / "run.log", args.deadline)
    if watched.returncode != 0:
        print(watched.output[-3000:], file=sys.stderr)
        return 1
    if args.ticks:
        with open(args.ticks, "w") as out:
            out.write("t,rss,fds,iterations\n")
            for t in watched.ticks:
                out.write(f"{t.t:.2f},{t.rss},{t.fds},{t.iterations}\n")
    found = figures(watched.ticks, args.n)
    found["duration_s"] = round(watched.duration, 1)
    found["ms_per_iteration_in_guest"] = ms_per_iteration(db)
    for key, value in found.items():
        print(f"{key:32} {value}")
    broken = leaks(found)
    for line in broken:
        print(f"soak: LEAK: {line}")
    print("soak: flat" if not broken else "soak: the controller leaks")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
