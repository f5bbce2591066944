"""Benchmark: ``lab compare``'s peak memory from the seed study's scale up, one store a scale.

The seed study stored 1.82 M samples; ``lab compare`` must stay under 300 MB there and
grow linearly beyond. For each scale (samples per variant, two variants, one metric, as
``bench/compare_1m.py`` builds them) this builds a store once (in ``--dir``, kept for the
next run), runs ``lab compare --format FORMAT`` on it in a fresh interpreter and prints its
peak resident memory: the most of the command and of the child processes that read the
samples for it (wait4's rusage). Then the memory each further sample adds between
neighbouring scales: a linear growth gives the same figure at every step.

    python bench/compare_memory.py [--scales 910000,1550000,3100000] [--dir DIR] [--format table]
"""

from __future__ import annotations

import argparse
import compileall
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_1m import build  # the same store, at another scale

import lab

SEED_SAMPLES = 1_820_000
TARGET_SEED_BYTES = 300_000_000


def peak_of(command: list[str], env: dict[str, str], cwd: Path) -> int:
    """The peak resident bytes of ``command`` and its reaped children."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, cwd=cwd)  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        assert proc.stderr is not None
        sys.stderr.write(proc.stderr.read().decode())
        raise SystemExit(proc.returncode)
    return usage.ru_maxrss * 1024  # KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="910000,1550000,3100000",
                        help="samples per variant, one store each (default: the seed study's"
                             " 1.82 M samples, then 3.1 M and 6.2 M)")  # fmt: skip
    parser.add_argument("--dir", help="folder for the stores (kept; default: a temporary one)")
    parser.add_argument("--format", default="table", help="lab compare --format (default: table)")
    args = parser.parse_args()
    scales = [int(s) for s in args.scales.split(",")]

    folder = tempfile.TemporaryDirectory(prefix="lab-bench-")
    where = Path(args.dir or folder.name)
    where.mkdir(parents=True, exist_ok=True)
    root = Path(lab.__file__).resolve().parent.parent
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    compileall.compile_dir(root / "lab", quiet=1)  # as pip compiles an installed package
    print(f"lab compare --format {args.format} of {root}")
    peaks = []
    for per_variant in scales:
        path = where / f"compare-{per_variant}.db"
        if not path.exists():
            started = time.perf_counter()
            build(path, per_variant)
            print(f"built {path.name} in {time.perf_counter() - started:.0f} s")
        command = [sys.executable, "-m", "lab", "compare", "--db", str(path.resolve()),
                   "--format", args.format]  # fmt: skip
        peaks.append(peak_of(command, env, where))
        print(f"{2 * per_variant:>11,} samples: peak {peaks[-1] / 2**20:6,.0f} MiB")
    steps = list(zip(scales, peaks, strict=True))
    for (a, pa), (b, pb) in itertools.pairwise(steps):
        print(f"{2 * a:,} → {2 * b:,} samples: {(pb - pa) / (2 * (b - a)):.0f} bytes a sample")
    seed = [p for s, p in zip(scales, peaks, strict=True) if 2 * s <= SEED_SAMPLES]
    if seed:
        ok = max(seed) < TARGET_SEED_BYTES
        verdict = "met" if ok else "NOT met"
        print(f"at the seed's scale (≤ {SEED_SAMPLES:,} samples): {max(seed) / 1e6:,.0f} MB;"
              f" target < {TARGET_SEED_BYTES / 1e6:,.0f} MB: {verdict}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
