#!/usr/bin/env python3
"""What the lab adds per iteration: `lab run null --n N` against a bare `true` loop.

Needs a pair up (`lab up --pair thp,shp1g ...`). For guest lab-thp it runs `null` N times
through the lab (runner, journal with fsync, controller ingesting into the store) and
the same `/bin/true` N times in a plain shell loop over one SSH call, then prints both per
iteration, the overhead and the ratio. Both are measured in this one run, since the
machine's speed drifts. Target: the lab adds under 5 % or under 2 ms per iteration,
whichever is larger.
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def lab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lab", *args], capture_output=True, text=True, check=True
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--guest", default="lab-thp")
    args = parser.parse_args()

    # Bare: one SSH call, the loop inside the guest, timed by the guest's own clock.
    script = (
        f"s=$(date +%s.%N); i=0; while [ $i -lt {args.n} ]; do /bin/true; i=$((i+1)); done;"
        ' e=$(date +%s.%N); echo "$s $e"'
    )
    start, end = map(float, lab("ssh", args.guest, "sh", "-c", script).stdout.split())
    bare = (end - start) / args.n

    # Through the lab: the runner's first start to its last journal line, from the store.
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        t0 = time.monotonic()
        lab(
            "run",
            "null",
            "--n",
            str(args.n),
            "--guests",
            args.guest,
            "--db",
            str(db),
            "--study",
            f"bench-{time.time():.0f}",
        )
        total = time.monotonic() - t0
        with sqlite3.connect(db) as conn:
            first, last = conn.execute("SELECT MIN(started), MAX(ended) FROM iteration").fetchone()
    in_guest = (last - first) / args.n
    overhead = in_guest - bare
    print(f"iterations            {args.n}")
    print(f"bare `true` loop      {bare * 1e3:8.3f} ms/iteration")
    print(f"lab run null          {in_guest * 1e3:8.3f} ms/iteration (runner start to last line)")
    print(f"lab run null, wall    {total / args.n * 1e3:8.3f} ms/iteration (whole command)")
    print(
        f"overhead              {overhead * 1e3:8.3f} ms/iteration"
        f" ({in_guest / bare:.1f}x the bare loop)"
    )
    allowed = max(0.05 * bare, 0.002)
    verdict = "meets" if overhead <= allowed else "misses"
    print(f"target                {verdict} the target (<= {allowed * 1e3:.3f} ms/iteration)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
