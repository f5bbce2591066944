"""Benchmark: the seed study's scale, each command timed from the shell (issue 31 §2).

Writes a long-format CSV of the seed study's shape: 3 workloads × 24,000 iterations × 2
variants, each iteration with what ``lab run`` records beside its times: the runner's
``wall_s``, ``user_s`` and ``sys_s`` (``lab.inguest.runner``), the guest's THP counters
(``lab.inguest.backing.METRICS``), its QEMU's memory on the host (``lab.run.evidence.
HOST_BACKING``) and the host's free huge pages per pool (``POOL_FREE``, two pools for two of
the workloads, one for the third): 1,824,000 samples, with a boot column (a guest reboots
every 500 iterations). Then runs, each as a child ``python -m lab ...`` (the whole command,
from the interpreter's start; wall time, and peak RSS from ``wait4``):

* ``lab import`` of the CSV into a new store;
* ``lab compare`` of that store (the summary table, and ``--format json``);
* ``lab compare`` of 2 × 1,000,000 samples of one metric (``bench/compare_1m.py``'s store),
  table and json;
* ``lab export`` of the store (csv, to a file);
* ``lab report`` of the store (every figure it draws, to a folder);

and prints a table with each figure beside its goal, and "meets" or "misses".

    python bench/seed_scale.py [--dir PATH] [--iterations 24000] [--skip-1m]
"""

from __future__ import annotations

import argparse
import compileall
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# the lab of this checkout, whichever is installed: the children run it too (lab_child)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lab
from lab.inguest.backing import METRICS as GUEST_BACKING
from lab.run.evidence import HOST_BACKING, POOL_FREE

WORKLOADS = (  # name, wall_s mean and sd of each variant (thp, shp1g), pools of huge pages
    ("gdb-build", (147.08, 14.53), (145.43, 14.42), ("2048kB", "1048576kB")),
    ("sysbench-memory", (12.40, 0.35), (12.05, 0.33), ("2048kB", "1048576kB")),
    ("stream", (8.90, 0.21), (8.91, 0.22), ("2048kB",)),
)
VARIANTS = ("thp", "shp1g")
BOOT_EVERY = 500  # iterations between the guests' reboots
MIB = 1 << 20


@dataclass(frozen=True)
class Goal:
    name: str
    seconds: float
    peak: int | None = None  # bytes


GOALS = {
    "import": Goal("import", 15.0, 300 * MIB),
    "compare": Goal("compare", 2.0),
    "compare json": Goal("compare --format json", 2.0),
    "compare 1m": Goal("compare, 2 × 1M of one metric", 2.0),
    "compare 1m json": Goal("compare --format json, 2 × 1M of one metric", 2.0),
    "export": Goal("export (csv)", 10.0),
    "report": Goal("report", 10.0),
}


def write_csv(path: Path, iterations: int) -> int:
    """The seed study's samples as ``lab import`` reads them; returns their count."""
    rng = np.random.default_rng(20200921)
    count = 0
    header = "variant,workload,iteration,boot,metric,unit,value\n"
    with path.open("w") as f:
        f.write(header)
        for workload, *means, pools in WORKLOADS:
            n = iterations
            number = np.arange(1, n + 1)
            for variant, (mean, sd) in zip(VARIANTS, means, strict=True):
                wall = rng.normal(mean, sd, n)
                wall[rng.integers(0, n, max(1, n // 4000))] += rng.uniform(0.5, 3.0) * mean
                user = wall * rng.uniform(0.9, 0.97, n)
                series: dict[str, tuple[str, np.ndarray]] = {
                    "wall_s": ("s", wall),
                    "user_s": ("s", user),
                    "sys_s": ("s", wall - user - rng.uniform(0.0, 0.02, n) * mean),
                }
                for name in GUEST_BACKING:
                    scale = 1_800_000 if name.endswith("_kib") else 40
                    series[name] = (
                        "KiB" if name.endswith("_kib") else "count",
                        np.cumsum(rng.poisson(scale / 400, n)) % (scale * 10),
                    )
                for name in HOST_BACKING:
                    base = 4_300_000 if variant == "thp" or "hugetlb" not in name else 4_194_304
                    series[name] = ("KiB", base + rng.integers(-2048, 2048, n))
                for pool in pools:
                    series[POOL_FREE.format(size=pool)] = ("pages", rng.integers(0, 64, n))
                boots = [f"{workload}-{variant}-boot{(i - 1) // BOOT_EVERY + 1}" for i in number]
                columns = []
                for metric, (unit, values) in series.items():
                    text = (
                        [f"{v:.3f}" for v in values.tolist()]
                        if values.dtype.kind == "f"
                        else list(map(str, values.tolist()))
                    )
                    columns.append((metric, unit, text))
                lines = []
                for i in range(n):
                    head = f"{variant},{workload},{i + 1},{boots[i]}"
                    for metric, unit, text in columns:
                        lines.append(f"{head},{metric},{unit},{text[i]}\n")
                f.write("".join(lines))
                count += len(lines)
    return count


def build_1m(path: Path) -> None:
    """bench/compare_1m.py's store: 2 × 1,000,000 samples of one metric."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from compare_1m import build  # a sibling script

    build(path, 1_000_000)


@dataclass(frozen=True)
class Child:
    status: int
    wall: float
    cpu: float  # user + system seconds: what a busy machine adds to the wall time shows here
    peak: int  # bytes
    err: str


def lab_child(argv: list[str]) -> Child:
    """``python -m lab ARGV`` of this checkout, from the shell's point of view, its bytecode
    compiled first as pip compiles an installed package (where PYTHONDONTWRITEBYTECODE is
    set, as on this machine, each run would otherwise compile every module changed since)."""
    root = Path(lab.__file__).resolve().parent.parent
    compileall.compile_dir(root / "lab", quiet=1)
    env = {**os.environ, "LAB_CONFIG": os.devnull}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "lab", *argv], env=env, cwd=root, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert child.stderr is not None
    err = child.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    cpu = usage.ru_utime + usage.ru_stime
    return Child(os.waitstatus_to_exitcode(status), wall, cpu, usage.ru_maxrss * 1024, err)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="folder for the CSV, the stores, export and report")
    parser.add_argument("--iterations", type=int, default=24_000, help="per workload and variant")
    parser.add_argument("--skip-1m", action="store_true", help="no 2 × 1M compare")
    parser.add_argument("--only", help="comma-separated steps: import,compare,1m,export,report")
    args = parser.parse_args()
    folder = tempfile.TemporaryDirectory(prefix="lab-seed-")
    where = Path(args.dir or folder.name)
    where.mkdir(parents=True, exist_ok=True)
    steps = set((args.only or "import,compare,1m,export,report").split(","))
    if args.skip_1m:
        steps.discard("1m")
    csv_path, db, db_1m = where / "seed.csv", where / "seed.db", where / "seed-1m.db"

    results: list[tuple[str, Child]] = []

    def step(key: str, argv: list[str]) -> bool:
        done = lab_child(argv)
        results.append((key, done))
        if done.status != 0:
            print(f"{key}: exit {done.status}: {done.err.strip()[-400:]}", file=sys.stderr)
        return done.status == 0

    if "import" in steps or not db.exists():
        if not csv_path.exists():
            started = time.perf_counter()
            count = write_csv(csv_path, args.iterations)
            print(
                f"wrote {csv_path}: {count:,} samples, {csv_path.stat().st_size / MIB:,.0f} MiB"
                f" in {time.perf_counter() - started:.1f} s"
            )
        for leftover in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            leftover.unlink(missing_ok=True)
        if not step("import", ["import", str(csv_path), "--db", str(db)]):
            return 1
    print(f"lab of {Path(lab.__file__).resolve().parent}; store {db}")
    if "compare" in steps:
        step("compare", ["compare", "--db", str(db)])
        step("compare json", ["compare", "--db", str(db), "--format", "json"])
    if "1m" in steps:
        if not db_1m.exists():
            build_1m(db_1m)
        step("compare 1m", ["compare", "--db", str(db_1m)])
        step("compare 1m json", ["compare", "--db", str(db_1m), "--format", "json"])
    if "export" in steps:
        out = where / "export.csv"
        step("export", ["export", "--db", str(db), "--format", "csv", "--out", str(out)])
    if "report" in steps:
        step("report", ["report", "--db", str(db), "--out", str(where / "report")])

    print(f"{'command':46} {'wall':>8} {'CPU':>8} {'peak RSS':>10}  {'goal':>17}  verdict")
    ok = True
    for key, done in results:
        goal = GOALS[key]
        met = done.status == 0 and done.wall < goal.seconds
        if goal.peak is not None:
            met = met and done.peak < goal.peak
        ok &= met
        wanted = f"< {goal.seconds:g} s" + (
            f", < {goal.peak // MIB} MiB" if goal.peak is not None else ""
        )
        failed = "" if done.status == 0 else f" (exit {done.status})"
        print(
            f"{goal.name:46} {done.wall:7.1f}s {done.cpu:7.1f}s {done.peak / MIB:7,.0f} MiB"
            f"  {wanted:>17}"
            f"  {'meets' if met else 'misses'}{failed}"
        )
    load = os.getloadavg()[0]
    print(f"load average at the end: {load:.1f} on {os.cpu_count()} CPUs (wall = CPU / share)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
