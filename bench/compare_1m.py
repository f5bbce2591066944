"""Benchmark: ``lab compare`` on a store of 2 variants × 1,000,000 samples of one metric.

Builds the store once (``--db``, default a temporary folder), then runs ``lab compare`` in a
child process ``--repeat`` times (the whole command, from the interpreter's start) and prints
each run's wall time and CPU time (user + system), then the median wall time, the samples
per second at that median and the peak resident memory (the children's ru_maxrss), each
beside its target: under 2 s and under 1 GiB. The CPU time shows what a busy machine
added to the wall time.

    python bench/compare_1m.py [--samples 1000000] [--db PATH] [--format table] [--repeat 3]

The default is what ``lab compare`` prints by default, the summary table; ``--format json``
(or ``--detail``'s tables) also computes every statistic the summary does not show: the
median's bootstrap, Brunner–Munzel, the effect sizes and each arm's diagnostics.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import lab
from lab.store import IterationRecord, MetricInfo, Store

TARGET_SECONDS = 2.0
TARGET_BYTES = 1 << 30
BATCH = 50_000


def build(path: Path, samples: int) -> None:
    """The study's GDB build times at a million samples per variant (normal body, a few tails)."""
    rng = np.random.default_rng(20200921)
    with Store.open(path) as store:
        study = store.ensure_study("bench", "2 × 1M samples")
        run = store.ensure_run(study, "bench/gdb", "gdb-build", {"make": "-j12"}, None, samples,
                               [MetricInfo("real_s", "s", "lower")])  # fmt: skip
        for variant, mean, sd in (("thp", 147.08, 14.53), ("shp1g", 145.43, 14.42)):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            values = rng.normal(mean, sd, samples)
            values[rng.integers(0, samples, samples // 4000)] += rng.uniform(100, 450)
            for start in range(0, samples, BATCH):
                chunk = values[start : start + BATCH]
                store.record(run, guest, [
                    IterationRecord(start + i + 1, 1, True, metrics={"real_s": float(v)})
                    for i, v in enumerate(chunk)
                ])  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000, help="samples per variant")
    parser.add_argument("--db", help="store to use (built if it does not exist)")
    parser.add_argument(
        "--format", default="table", help="lab compare --format (default: table, the summary)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of lab compare (default: 3)")
    args = parser.parse_args()

    folder = tempfile.TemporaryDirectory(prefix="lab-bench-")
    path = Path(args.db) if args.db else Path(folder.name) / "bench.db"
    if not path.exists():
        started = time.perf_counter()
        build(path, args.samples)
        print(
            f"built {path}: 2 × {args.samples:,} samples in {time.perf_counter() - started:.1f} s"
        )

    # The child runs the lab this script imported, from the store's folder: `-m lab` in the
    # current folder would run a checkout there, whatever PYTHONPATH says.
    root = Path(lab.__file__).resolve().parent.parent
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    # Its bytecode compiled first, as pip compiles an installed package: where
    # PYTHONDONTWRITEBYTECODE is set (as on this machine), every run would otherwise compile
    # each module changed since the last compile.
    compileall.compile_dir(root / "lab", quiet=1)
    print(f"lab compare of {root}")
    command = [sys.executable, "-m", "lab", "compare", "--db", str(path.resolve()),
               "--format", args.format]  # fmt: skip
    walls = []
    for i in range(args.repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        result = subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=path.resolve().parent
        )
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
            return result.returncode
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        print(f"run {i + 1}: {walls[-1]:.2f} s wall, {cpu:.2f} s CPU")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
    if "m-out-of-n" in result.stdout or '"m":' in result.stdout:
        print("note: the median's bootstrap is subsampled (m-out-of-n, m = 5,000 per variant)")
    seconds = statistics.median(walls)
    total = 2 * args.samples
    print(f"lab compare: {seconds:.2f} s (median of {len(walls)}) for {total:,} samples"
          f" = {total / seconds:,.0f} samples/s; target < {TARGET_SECONDS:g} s")  # fmt: skip
    print(
        f"peak RSS of lab compare: {peak / 2**20:,.0f} MiB; target < {TARGET_BYTES / 2**30:g} GiB"
    )
    ok = seconds < TARGET_SECONDS and peak < TARGET_BYTES
    print(f"targets: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
