#!/usr/bin/env python3
"""An A/A check of the host telemetry beside every iteration (issue 42): the same pair and
workload with the telemetry on and off, and what it costs.

Needs a pair up (`lab up --pair thp,shp1g ...`). Two measurements, both in this one run:

1. **The cost of one look**, on the live pair: what the controller reads beside an iteration
   (each guest's QEMU smaps_rollup, /proc/buddyinfo, /proc/vmstat, the huge page pools),
   timed over many looks. A look comes at most every HOST_BACKING_EVERY_S (2 s) per guest
   after an iteration (sync, alternate) or per look at the journals (concurrent), on the
   host's CPUs, which the guests' vCPUs share when `--reserve-host-cpus 0`: its share of a
   CPU is the bound of what it can take from a guest.
2. **The A/A runs**: `lab run sysbench-memory` in blocks of three runs, each its own study,
   in an order drawn at random per block: without telemetry, with it, and with it read
   DOSE times at every look (``--dose``, 20 by default). Without telemetry is the same `lab`
   with the controller's host reads made to return nothing; the dose repeats them (patches
   applied by this script in the child process, not options of the lab's). The ratio of
   each block's run means to the run without is a paired sample.

   With it against without gives the direct answer, whose interval is as wide as the runs
   are noisy (±0.85 % over 12 run pairs here). The dose gives the precise one: what the
   reads cost, DOSE times over, is DOSE times what they cost once (their CPU time is
   taken from the guests' CPUs, linearly), so the effect of one look is the dose's log
   ratio over DOSE, with its interval over DOSE too. The direct interval holding the scaled
   estimate is the check of that linearity.

    python bench/telemetry_aa.py [--blocks 6] [--n 10] [--dose 20] [--schedule concurrent]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.host.qemuproc import read_qemu_memory  # noqa: E402
from lab.host.telemetry import thp_counters, unusable_index  # noqa: E402
from lab.run.evidence import HOST_BACKING_EVERY_S  # noqa: E402

WORKLOAD = ("sysbench-memory", "-p", "time=2", "-p", "total_size=1000G", "-p", "block_size=1M")
METRIC = "throughput_mib_s"
BOUND = 0.005  # the issue's: no difference beyond 0.5 %
# The child `lab`, with the controller's host reads patched: DOSE 0 reads nothing, DOSE k
# reads everything k times at every look (fresh host readings each time, so none is cached).
PATCHED = (
    "import sys; import lab.run.evidence as e; dose = int(sys.argv.pop(1));"
    " read = e.Evidence._host_backing\n"
    "def dosed(self, record, pools):\n"
    "    for _ in range(dose - 1): read(self, record, {})\n"
    "    return read(self, record, pools) if dose else {}\n"
    "e.Evidence._host_backing = dosed\n"
    "from lab.cli import main; sys.argv = ['lab'] + sys.argv[1:]; raise SystemExit(main())"
)


def one_look(guests: list[str]) -> float:
    """Seconds for one look of the telemetry's reads, for every guest of the pair."""
    read = lambda path: Path(path).read_text()  # noqa: E731
    t0 = time.perf_counter()
    unusable_index(read("/proc/buddyinfo"))
    thp_counters(read("/proc/vmstat"))
    for pool in Path("/sys/kernel/mm/hugepages").glob("hugepages-*/free_hugepages"):
        pool.read_text()
    for guest in guests:
        read_qemu_memory(read, guest)
    return time.perf_counter() - t0


def run(db: Path, study: str, n: int, schedule: str, dose: int) -> None:
    argv = ["run", *WORKLOAD, "--n", str(n), "--schedule", schedule, "--study", study,
            "--db", str(db), "--counters", "none"]  # fmt: skip
    python = [sys.executable, "-m", "lab"] if dose == 1 else [sys.executable, "-c", PATCHED]
    argv = argv if dose == 1 else [str(dose), *argv]
    subprocess.run([*python, *argv], check=True, cwd=ROOT, capture_output=True, text=True)


def interval(logs: list[float]) -> tuple[float, float]:
    """Mean of log ratios and its 95 % t half-width."""
    half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return statistics.fmean(logs), half


def run_means(db: Path, study: str) -> dict[str, float]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT g.name, AVG(s.value), COUNT(*) FROM sample s JOIN run r ON r.id = s.run_id"
            " JOIN guest g ON g.id = s.guest_id WHERE r.study_id = (SELECT id FROM study WHERE"
            " name = ?) AND s.metric = ? GROUP BY g.name",
            (study, METRIC),
        ).fetchall()
    return {name: mean for name, mean, _ in rows}


def host_samples(db: Path, study: str) -> int:
    with sqlite3.connect(db) as conn:
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM sample s JOIN run r ON r.id = s.run_id WHERE r.study_id ="
            " (SELECT id FROM study WHERE name = ?) AND s.metric LIKE 'backing.host_%'",
            (study,),
        ).fetchone()
    return int(count)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=6, help="pairs of runs, on and off")
    parser.add_argument("--n", type=int, default=10, help="iterations per run")
    parser.add_argument("--schedule", default="concurrent",
                        help="concurrent: the looks come while the guests run")  # fmt: skip
    parser.add_argument("--looks", type=int, default=2000, help="looks timed for the cost")
    parser.add_argument("--dose", type=int, default=20, help="reads per look in the dosed runs")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    if args.dose < 2:  # 0 and 1 are the runs without and with the telemetry themselves
        parser.error(f"--dose must be 2 or more, not {args.dose}")
    state = json.loads(Path("/var/lib/lab/lab.json").read_text())
    guests = [g["name"] for g in state["guests"]]

    times = sorted(one_look(guests) for _ in range(args.looks))
    median = times[len(times) // 2]
    share = median / HOST_BACKING_EVERY_S
    print(
        f"one look (every guest of the pair): median {median * 1e3:.3f} ms, p99"
        f" {times[int(len(times) * 0.99)] * 1e3:.3f} ms over {args.looks} looks;"
        f" at most one look per {HOST_BACKING_EVERY_S:g} s: {share:.4%} of one host CPU"
    )

    rng = random.Random(args.seed)
    doses = (0, 1, args.dose)
    logs: dict[int, list[float]] = {1: [], args.dose: []}  # log(run mean / run mean without)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "aa.db"
        for block in range(args.blocks):
            order = rng.sample(doses, len(doses))
            means = {}
            for dose in order:
                study = f"aa-{block}-x{dose}"
                run(db, study, args.n, args.schedule, dose)
                means[dose] = run_means(db, study)
                seen = host_samples(db, study)
                assert (seen > 0) == (dose > 0), (study, seen)  # the patch took, or did not
            for guest in guests:
                for dose in logs:
                    logs[dose].append(math.log(means[dose][guest] / means[0][guest]))
            print(f"block {block + 1}/{args.blocks} (order x{order[0]} x{order[1]} x{order[2]}):"
                  + "".join(f" {g} x1/off {means[1][g] / means[0][g]:.4f}"
                            f" x{args.dose}/off {means[args.dose][g] / means[0][g]:.4f}"
                            for g in guests), flush=True)  # fmt: skip
    pairs = f"{len(logs[1])} run pairs ({args.blocks} blocks x {len(guests)} guests, n {args.n}," \
            f" {args.schedule})"  # fmt: skip
    mean, half = interval(logs[1])
    direct = (math.exp(mean - half), math.exp(mean + half))
    print(f"direct, telemetry on/off: x{math.exp(mean):.4f} [95 % CI {direct[0]:.4f},"
          f" {direct[1]:.4f}] over {pairs}")  # fmt: skip
    dmean, dhalf = interval(logs[args.dose])
    print(f"dose x{args.dose}/off: x{math.exp(dmean):.4f} [95 % CI {math.exp(dmean - dhalf):.4f},"
          f" {math.exp(dmean + dhalf):.4f}]")  # fmt: skip
    k = args.dose
    scaled = (math.exp((dmean - dhalf) / k), math.exp((dmean + dhalf) / k))
    print(f"one look, from the dose (its log ratio / {k}): x{math.exp(dmean / k):.5f} [95 % CI"
          f" {scaled[0]:.5f}, {scaled[1]:.5f}]")  # fmt: skip
    linear = direct[0] <= math.exp(dmean / k) <= direct[1]
    print(f"linearity: the direct interval {'holds' if linear else 'does NOT hold'} the scaled"
          " estimate")  # fmt: skip
    within = scaled[0] >= 1 - BOUND and scaled[1] <= 1 + BOUND and linear
    print(f"within ±{BOUND:.1%}: {'yes' if within else 'not shown'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
