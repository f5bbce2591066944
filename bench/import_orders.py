"""Benchmark: ``lab import`` in any row order and at any scale (issue 39 §1).

Writes long-format CSVs, then imports each into a new store as a child ``python -m lab
import`` (the whole command: wall and CPU time, peak RSS from ``wait4``), and prints each
figure beside its goal:

* the seed study's 1,824,000 samples (``bench/seed_scale.py``'s file) in four orders: as
  ``lab export`` writes them (by iteration), grouped by metric (what pandas' ``melt`` or a
  loop over metrics writes), reversed and shuffled; each under 15 s and 300 MiB;
* 10,000 runs in one file (a ``run`` column; 4 samples each): under 30 s;
* 1,000,000 metric names of one iteration: refused at once (``MAX_METRICS`` names per
  iteration, lab.importers.limits), and the most that is taken, ``MAX_METRICS`` names, under
  60 s.

``--scale F`` makes every file F times as long (the goals scaled with it), to see how the
time grows: linear growth keeps the seconds per row constant.

    python bench/import_orders.py [--dir PATH] [--scale 1] [--only seed,runs,metrics]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# the lab of this checkout, whichever is installed: the children run it too
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from seed_scale import MIB, lab_child, write_csv  # a sibling script

from lab.importers.limits import MAX_METRICS


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    rows: int
    seconds: float
    peak: int | None
    argv: tuple[str, ...] = ()
    refused: bool = False  # the goal is a refusal (exit 2) within the time


def reorder(source: Path, target: Path, order: str) -> None:
    """``source``'s rows (header first) in another order: grouped by metric (stable within
    it), reversed, or shuffled with a fixed seed."""
    with source.open() as f:
        header = f.readline()
        lines = f.readlines()
    if order == "metric":
        column = header.rstrip("\n").split(",").index("metric")
        lines.sort(key=lambda line: line.split(",", column + 1)[column])
    elif order == "reversed":
        lines.reverse()
    else:
        random.Random(39).shuffle(lines)
    with target.open("w") as f:
        f.write(header)
        f.writelines(lines)


def write_runs(path: Path, runs: int) -> int:
    """``runs`` runs of one workload, 2 guests × 2 iterations of one metric each."""
    rng = random.Random(1)
    with path.open("w") as f:
        f.write("run,variant,workload,metric,iteration,value,direction\n")
        for r in range(runs):
            for variant in ("thp", "shp1g"):
                for i in (1, 2):
                    f.write(f"s/r{r}/w,{variant},w,t,{i},{rng.uniform(1, 2):.4f},lower\n")
    return runs * 4


def write_metrics(path: Path, names: int) -> int:
    """One iteration of one variant with ``names`` metrics."""
    with path.open("w") as f:
        f.write("variant,workload,metric,iteration,value,direction\n")
        f.writelines(f"thp,w,m{m},1,{m % 97 + 1},lower\n" for m in range(names))
    return names


def in_child(function: object, *args: object) -> None:
    """Run ``function(*args)`` in a child process: the files are made there, so that this
    process stays small, and each import child's peak RSS (which counts what it had at the
    fork) is its own."""
    child = multiprocessing.get_context("fork").Process(target=function, args=args)
    child.start()
    child.join()
    if child.exitcode != 0:
        raise SystemExit(f"making the files failed (exit {child.exitcode})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="folder for the files and stores")
    parser.add_argument("--scale", type=float, default=1.0, help="every file this times as long")
    parser.add_argument("--only", default="seed,runs,metrics", help="comma-separated cases")
    args = parser.parse_args()
    folder = tempfile.TemporaryDirectory(prefix="lab-orders-")
    where = Path(args.dir or folder.name)
    where.mkdir(parents=True, exist_ok=True)
    only, scale = set(args.only.split(",")), args.scale
    cases: list[Case] = []
    started = time.perf_counter()
    if "seed" in only:
        iterations = round(24_000 * scale)
        by_iteration = where / f"seed-{iterations}-iteration.csv"
        if not by_iteration.exists():
            in_child(write_csv, by_iteration, iterations)
        with by_iteration.open() as f:
            rows = sum(1 for _ in f) - 1
        for order in ("iteration", "metric", "reversed", "shuffled"):
            path = where / f"seed-{iterations}-{order}.csv"
            if not path.exists():
                in_child(reorder, by_iteration, path, order)
            cases.append(Case(f"seed study, by {order}", path, rows, 15 * scale, 300 * MIB))
    if "runs" in only:
        runs = round(10_000 * scale)
        path = where / f"runs-{runs}.csv"
        rows = write_runs(path, runs)
        cases.append(Case(f"{runs:,} runs in one file", path, rows, 30 * scale, None))
    if "metrics" in only:
        path = where / "metrics-1m.csv"
        rows = write_metrics(path, 1_000_000)
        cases.append(Case("1,000,000 metrics of one iteration", path, rows, 60, None, (), True))
        most = where / f"metrics-{MAX_METRICS}.csv"
        rows = write_metrics(most, MAX_METRICS)
        cases.append(Case(f"{MAX_METRICS:,} metrics of one iteration", most, rows, 60, None))
    print(f"wrote the files in {time.perf_counter() - started:.1f} s, in {where}")

    print(f"{'import':42} {'rows':>10} {'wall':>8} {'CPU':>8} {'µs/row':>7} {'peak RSS':>10}"
          f"  {'goal':>18}  verdict")  # fmt: skip
    ok = True
    for case in cases:
        db = where / (case.path.stem + ".db")
        for leftover in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            leftover.unlink(missing_ok=True)
        done = lab_child(["import", str(case.path), "--db", str(db), *case.argv])
        wanted_status = 2 if case.refused else 0
        met = done.status == wanted_status and done.wall < case.seconds
        if case.peak is not None:
            met = met and done.peak < case.peak
        ok &= met
        goal = (
            ("refused, " if case.refused else "")
            + f"< {case.seconds:g} s"
            + (f", < {case.peak // MIB} MiB" if case.peak is not None else "")
        )
        status = "" if done.status == wanted_status else f" (exit {done.status})"
        print(
            f"{case.name:42} {case.rows:>10,} {done.wall:7.1f}s {done.cpu:7.1f}s"
            f" {done.wall / case.rows * 1e6:7.2f} {done.peak / MIB:7,.0f} MiB  {goal:>18}"
            f"  {'meets' if met else 'misses'}{status}"
        )
        if done.status != wanted_status or case.refused:
            print(f"    {done.err.strip()[-300:]}")
    load = os.getloadavg()[0]
    print(f"load average at the end: {load:.1f} on {os.cpu_count()} CPUs (wall = CPU / share)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
