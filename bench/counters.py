#!/usr/bin/env python3
"""Benchmark: does counting each iteration with perf move the timed command's own figure?

Needs a pair up (`lab up --pair thp,shp1g ...`). In one session it runs, on the pair, with
the sync schedule, rounds of `lab run WORKLOAD --counters none` and `--counters all`
alternately (each round a new study, so no run resumes another), and prints per workload
the median of the command's own metric with and without counters, each round's ratio of
the two (the guests' speed drifts between rounds by more than what is measured, so a ratio
is taken within a round) and the median of those ratios: the figure the study is about must
not move because of the sampling (a ratio near 1.00).

    python bench/counters.py [--n 10] [--rounds 3] [--workloads null,sysbench-memory]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# the figure each workload's verdict reads, and its parameters for a short iteration (a
# sysbench run of a fixed time: its throughput, since its total time is the time asked)
FIGURE = {"null": "wall_s", "sysbench-memory": "throughput_mib_s"}
PARAMS = {"null": [], "sysbench-memory": ["-p", "time=1", "-p", "total_size=256M"]}


def run(workload: str, n: int, counters: str, study: str, db: Path) -> list[float]:
    subprocess.run(
        [sys.executable, "-m", "lab", "run", workload, "--n", str(n), "--schedule", "sync",
         "--counters", counters, "--study", study, "--db", str(db), *PARAMS[workload]],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT s.value FROM sample s JOIN run r ON r.id = s.run_id JOIN study st"
            " ON st.id = r.study_id WHERE st.name = ? AND s.metric = ?",
            (study, FIGURE[workload]),
        ).fetchall()
    return [float(v) for (v,) in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10, help="iterations per run (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both (default 3)")
    parser.add_argument("--workloads", default="null,sysbench-memory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lab-counters-") as folder:
        db = Path(folder) / "lab.db"
        for workload in args.workloads.split(","):
            got: dict[str, list[float]] = {"none": [], "all": []}
            ratios = []
            for i in range(args.rounds):
                round_of: dict[str, list[float]] = {}
                for counters in ("none", "all") if i % 2 == 0 else ("all", "none"):
                    study = f"bench-{workload}-{counters}-{i}"
                    round_of[counters] = run(workload, args.n, counters, study, db)
                    got[counters] += round_of[counters]
                ratio = statistics.median(round_of["all"]) / statistics.median(round_of["none"])
                ratios.append(ratio)
                print(f"{workload} round {i + 1}: with/without counters {ratio:.3f}", flush=True)
            off, on = statistics.median(got["none"]), statistics.median(got["all"])
            print(
                f"{workload}: {FIGURE[workload]} median {off:.4g} without counters,"
                f" {on:.4g} with ({len(got['all'])} samples each); median of the rounds'"
                f" ratios {statistics.median(ratios):.3f}"
                f" ({min(ratios):.3f} to {max(ratios):.3f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
