"""Benchmark: ``lab import`` and ``lab export`` of 2 variants × 1,000,000 samples.

Writes a long-format CSV (variant, workload, metric, value, iteration: 2 × ``--samples``
rows, about 62 MB at the default), then runs, each as its own child process (the whole
command, from the interpreter's start):

* ``lab import`` of it into a new store: wall and CPU time, rows/s, peak RSS, and the
  store's bytes per sample;
* ``lab export --format csv``, ``jsonl`` and, when pyarrow is installed, ``parquet`` of that
  store to files: the same figures;
* ``lab import`` of inputs that never end: an endless line on standard input, and
  ``/dev/zero`` on standard input: how long until it refuses them, and its peak RSS.

Each figure is printed beside its target (import under 15 s and 300 MiB, export at least
200,000 rows/s, an endless input refused within 10 s); the CPU time shows what a busy machine
added to the wall time.

    python bench/import_export.py [--samples 1000000] [--dir PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import lab

IMPORT_SECONDS = 15.0
IMPORT_BYTES = 300 << 20
EXPORT_ROWS_PER_S = 200_000
ENDLESS_SECONDS = 10.0


@dataclass(frozen=True)
class Child:
    """One finished child: its exit status, wall and CPU seconds, peak RSS, stderr."""

    status: int
    wall: float
    cpu: float
    peak: int  # bytes
    err: str


def write_csv(path: Path, samples: int) -> None:
    """The study's GDB build times, one row per sample, the two variants interleaved."""
    rng = random.Random(20200921)
    with path.open("w") as f:
        f.write("variant,workload,metric,value,iteration\n")
        for i in range(1, samples + 1):
            f.write(f"thp,gdb,real_s,{rng.gauss(147.08, 14.53):.3f},{i}\n")
            f.write(f"shp1g,gdb,real_s,{rng.gauss(145.43, 14.42):.3f},{i}\n")


def run(
    argv: list[str], feed: bytes | None = None, endless: bool = False, stdin: str | None = None
) -> Child:
    """Run ``lab ARGV`` from this checkout; ``endless`` feeds one line without end on stdin,
    ``stdin`` names a file to read it from."""
    root = Path(lab.__file__).resolve().parent.parent
    paths = (str(root), os.environ.get("PYTHONPATH"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    env["LAB_CONFIG"] = os.devnull
    started = time.perf_counter()
    source = open(stdin, "rb") if stdin else None  # noqa: SIM115 (closed below)
    child = subprocess.Popen(
        [sys.executable, "-m", "lab", *argv], env=env, cwd=root, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.PIPE if endless else source or subprocess.DEVNULL,
    )  # fmt: skip
    if source:
        source.close()
    if endless:
        threading.Thread(target=_feed_forever, args=(child,), daemon=True).start()
    assert child.stderr is not None
    err = child.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return Child(child.returncode, wall, cpu, usage.ru_maxrss * 1024, err)


def _feed_forever(child: subprocess.Popen[bytes]) -> None:
    assert child.stdin is not None
    try:
        child.stdin.write(b"variant,workload,metric,value\nthp,w,t_s,1\n")
        while True:
            child.stdin.write(b"y" * 65536)
    except (BrokenPipeError, ValueError, OSError):
        pass


def mib(count: int) -> str:
    return f"{count / 2**20:,.0f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000, help="samples per variant")
    parser.add_argument("--dir", help="folder for the CSV, the store and the exports")
    args = parser.parse_args()
    folder = tempfile.TemporaryDirectory(prefix="lab-bench-")
    where = Path(args.dir or folder.name)
    where.mkdir(parents=True, exist_ok=True)
    total = 2 * args.samples
    csv_path, db = where / "samples.csv", where / "bench.db"
    for leftover in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        leftover.unlink(missing_ok=True)
    write_csv(csv_path, args.samples)
    print(f"{csv_path}: {total:,} rows, {mib(csv_path.stat().st_size)}; lab of {lab.__file__}")
    ok = True

    done = run(["import", str(csv_path), "--db", str(db)])
    if done.status != 0:
        print(done.err, file=sys.stderr)
        return done.status
    met = done.wall < IMPORT_SECONDS and done.peak < IMPORT_BYTES
    ok &= met
    print(
        f"import: {done.wall:.1f} s wall ({done.cpu:.1f} s CPU) = {total / done.wall:,.0f} rows/s,"
        f" peak RSS {mib(done.peak)} ({done.peak / csv_path.stat().st_size:.1f}x the file);"
        f" target < {IMPORT_SECONDS:g} s and < {mib(IMPORT_BYTES)}: {'met' if met else 'NOT met'}"
    )
    print(f"store: {db.stat().st_size:,} bytes = {db.stat().st_size / total:.0f} bytes/sample")

    formats = ["csv", "jsonl"] + (["parquet"] if importlib.util.find_spec("pyarrow") else [])
    for fmt in formats:
        out = where / f"export.{fmt}"
        done = run(["export", "--db", str(db), "--format", fmt, "--out", str(out)])
        if done.status != 0:
            print(done.err, file=sys.stderr)
            return done.status
        met = total / done.wall >= EXPORT_ROWS_PER_S
        ok &= met or fmt == "parquet"  # parquet has no target: an optional extra
        target = f"target >= {EXPORT_ROWS_PER_S:,}: {'met' if met else 'NOT met'}"
        print(
            f"export {fmt}: {done.wall:.1f} s wall ({done.cpu:.1f} s CPU) ="
            f" {total / done.wall:,.0f} rows/s, peak RSS {mib(done.peak)},"
            f" {mib(out.stat().st_size)}; {target if fmt != 'parquet' else 'no target'}"
        )
    if "parquet" not in formats:
        print("export parquet: not measured (pyarrow is not installed: pip install lab[parquet])")

    endless_db = ["--db", str(where / "endless.db")]
    # /dev/zero named as a file is refused before a byte is read (not a regular file), so
    # it is measured as what a pipe of it is: standard input.
    for name, argv, endless, stdin in (
        ("an endless line on stdin", ["import", "-", *endless_db], True, None),
        ("/dev/zero on stdin", ["import", "-", "--format", "csv", *endless_db], False, "/dev/zero"),
    ):
        done = run(argv, endless=endless, stdin=stdin)
        met = done.status == 2 and done.wall < ENDLESS_SECONDS
        ok &= met
        why = done.err.strip().splitlines()[-1][:100] if done.err.strip() else "(nothing said)"
        print(
            f"import of {name}: exit {done.status} after {done.wall:.1f} s, peak RSS"
            f" {mib(done.peak)}: {why}; target refused < {ENDLESS_SECONDS:g} s:"
            f" {'met' if met else 'NOT met'}"
        )
    print(
        f"peak RSS of this script: {mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10)}"
    )
    print(f"targets: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
