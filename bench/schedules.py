#!/usr/bin/env python3
"""What each schedule adds per iteration to the work it measures: `lab run null` under
concurrent, sync (counters off and on) and alternate, in one run of this script.

Needs a pair up (`lab up --pair thp,shp1g ...`), unless ``--native``. Each schedule runs
``null`` (`true` in the guest) N times on both twins into a scratch store; from the store,
per guest and on its own clock (the twins' clocks differ), from the first iteration after
the first tenth (what the runner's start leaves behind is not the steady state) to the last:

* concurrent: the time per iteration less the mean wall time of the command;
* sync: the time per iteration less the mean of the longer twin's wall time, i.e. what a
  pair of samples costs beyond its longer half;
* alternate: half of the time per iteration less both twins' wall times: per half.

Targets (issue 31): under emulation, sync and alternate add at most 0.1 s per iteration
(per half), counters at most 0.01 s more; natively, at most 5 ms.

``--native``: no guest. The real runner and controller against local processes (the unit
tests' local shells), timed the same way.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = (  # (schedule, counters)
    ("concurrent", "none"),
    ("sync", "none"),
    ("sync", "all"),
    ("alternate", "none"),
)
TARGET = {"guest": 0.1, "native": 0.005}
COUNTERS_TARGET = {"guest": 0.01, "native": 0.005}


def lab(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "lab", *args], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"lab {' '.join(args)} failed:\n{done.stderr[-2000:]}")


Rows = dict[str, list[tuple[int, float, float, float]]]  # guest -> (iteration, start, end, wall)


def rows_of(db: Path) -> Rows:
    with sqlite3.connect(db) as conn:
        found = conn.execute(
            "SELECT g.name, i.iteration, i.started, i.ended, i.wall FROM iteration i"
            " JOIN guest g ON g.id = i.guest_id WHERE i.ok ORDER BY g.name, i.iteration"
        ).fetchall()
    rows: Rows = {}
    for name, iteration, started, ended, wall in found:
        rows.setdefault(name, []).append((iteration, started, ended, wall))
    return rows


def added(schedule: str, rows: Rows) -> float:
    """Seconds the schedule adds per iteration (per half for alternate), steady state."""
    guests = sorted(rows)
    n = min(len(rows[g]) for g in guests)
    skip = n // 10
    walls = {g: {i: w for i, _, _, w in rows[g]} for g in guests}
    span = list(range(rows[guests[0]][skip][0], rows[guests[0]][n - 1][0] + 1))
    figures = []
    for g in guests:
        own = rows[g]
        period = (own[n - 1][2] - own[skip][1]) / (n - skip)
        if schedule == "concurrent":
            work = statistics.fmean(walls[g][i] for i in span)
        elif schedule == "sync":
            work = statistics.fmean(max(walls[h][i] for h in guests) for i in span)
        else:  # alternate: both halves in each period
            work = statistics.fmean(sum(walls[h][i] for h in guests) for i in span)
            period, work = period / 2, work / 2
        figures.append(period - work)
    return max(figures) if schedule == "concurrent" else statistics.fmean(figures)


def in_guests(n: int) -> dict[tuple[str, str], float]:
    results = {}
    for schedule, counters in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "bench.db"
            lab("run", "null", "--n", str(n), "--schedule", schedule, "--counters", counters,
                "--db", str(db), "--study", f"bench-{schedule}-{time.time():.0f}")  # fmt: skip
            results[(schedule, counters)] = added(schedule, rows_of(db))
    return results


def natively(n: int) -> dict[tuple[str, str], float]:
    sys.path.insert(0, str(ROOT))
    from tests.unit.test_controller import make_pair  # the unit tests' local shells

    results = {}
    for schedule, counters in CASES:
        if counters != "none":
            continue  # no QEMU here to count
        with tempfile.TemporaryDirectory() as tmp:
            controller, store = make_pair(
                Path(tmp), n, schedule, {"lab-thp": "0", "lab-shp1g": "0"}
            )
            controller.run()
            store.close()
            results[(schedule, counters)] = added(schedule, rows_of(Path(tmp) / "lab.db"))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200, help="iterations per schedule")
    parser.add_argument("--native", action="store_true", help="local processes, no guests")
    args = parser.parse_args()
    where = "native" if args.native else "guest"
    results = natively(args.n) if args.native else in_guests(args.n)
    target = TARGET[where]
    print(f"`lab run null --n {args.n}` ({'local processes' if args.native else 'the pair'})")
    print(f"{'schedule':<12} {'counters':<9} {'added per iteration':>20}  target")
    for (schedule, counters), seconds in results.items():
        unit = " per half" if schedule == "alternate" else ""
        limit = target
        if counters != "none":
            limit = target + COUNTERS_TARGET[where]
        word = "meets" if seconds <= limit or schedule == "concurrent" else "misses"
        goal = "-" if schedule == "concurrent" else f"{word} (<= {limit * 1e3:.0f} ms)"
        print(f"{schedule:<12} {counters:<9} {seconds * 1e3:14.1f} ms{unit:<9} {goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
