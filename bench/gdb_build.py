#!/usr/bin/env python3
"""The reference study's third benchmark at full size: all of GDB built on NFS in both twins.

Needs a pair up (`lab up --pair thp,shp1g ...`) on a real host: under TCG one full build
takes hours, so CI proves the same path on one directory of the tree
(`tests/integration/test_run_gdb.py`, `target=all-libdecnumber`). It fetches Debian's GDB
source once (`scripts/fetch-gdb-source`), runs `lab run gdb-build --n N` with
`target=all` (both twins at once; the top-level configure untimed, `make clean` untimed
before each iteration), then prints each twin's build times and `lab compare`'s table:

    .venv/bin/python bench/gdb_build.py [--n 3] [--jobs J] [--db PATH]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

FETCH = Path(__file__).resolve().parents[1] / "scripts" / "fetch-gdb-source"


def lab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", *args], text=True, check=True)


def build_times(db: Path) -> dict[str, list[float]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT g.name, s.value FROM sample s JOIN run r ON r.id = s.run_id"
            " JOIN guest g ON g.id = s.guest_id"
            " WHERE r.workload = 'gdb-build' AND s.metric = 'wall_s'"
            " ORDER BY g.name, s.iteration"
        ).fetchall()
    out: dict[str, list[float]] = {}
    for name, value in rows:
        out.setdefault(name, []).append(value)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3, help="builds per twin")
    parser.add_argument("--jobs", type=int, help="make -j (default: the guest's vCPUs)")
    parser.add_argument("--db", type=Path, help="store to use (default: a temporary one)")
    args = parser.parse_args()
    source = subprocess.run(
        ["bash", str(FETCH)], capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    db = args.db or Path(tempfile.mkdtemp(prefix="lab-gdb-")) / "lab.db"
    extra = ["-p", f"jobs={args.jobs}"] if args.jobs else []
    lab("run", "gdb-build", "--n", str(args.n), "--db", str(db),
        "-p", f"source={source}", "-p", "target=all", *extra)  # fmt: skip
    for name, walls in build_times(db).items():
        sd = statistics.stdev(walls) if len(walls) > 1 else 0.0
        print(f"{name}: {len(walls)} builds, mean {statistics.fmean(walls):.1f} s, sd {sd:.1f} s,"
              f" min {min(walls):.1f} s, max {max(walls):.1f} s")  # fmt: skip
    lab("compare", "--db", str(db))
    return 0


if __name__ == "__main__":
    sys.exit(main())
