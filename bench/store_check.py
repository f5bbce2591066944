"""Benchmark: ``lab store check`` on a store of N samples (default 6,000,000).

Builds the store once (``--db``, default a temporary folder): one study, two guests, one
run, one metric, N/2 successful iterations per guest, each with its sample, written with
``executemany`` inside one of the store's transactions, then runs ``lab store
check`` in a child process and prints its wall time beside the target: under 30 s for
6 million samples, where the orphan queries, unable to use an index, did not end in 10 min.

    python bench/store_check.py [--samples 6000000] [--db PATH]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))  # this checkout's lab, also where another is installed

from lab.store import MetricInfo, Store  # noqa: E402

TARGET_SECONDS = 30.0
BATCH = 200_000


def build(path: Path, samples: int) -> None:
    with Store.open(path) as store:
        study = store.ensure_study("bench", f"{samples:,} samples")
        run = store.ensure_run(study, "bench/check", "null", {}, None, samples // 2,
                               [MetricInfo("wall_s", "s", "lower")])  # fmt: skip
        guests = [store.ensure_guest(study, f"lab-{v}", v) for v in ("thp", "shp1g")]
        with store.transaction() as conn:
            for guest in guests:
                for start in range(1, samples // 2 + 1, BATCH):
                    numbers = range(start, min(start + BATCH, samples // 2 + 1))
                    conn.executemany(
                        "INSERT INTO iteration(run_id, guest_id, iteration, attempt, ok,"
                        " started) VALUES (?, ?, ?, 1, 1, ?)",
                        ((run, guest, i, float(i)) for i in numbers),
                    )
                    conn.executemany(
                        "INSERT INTO sample(run_id, guest_id, iteration, metric, value)"
                        " VALUES (?, ?, ?, 'wall_s', ?)",
                        ((run, guest, i, 1.0 + (i % 97) / 1000) for i in numbers),
                    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=6_000_000, help="samples in all")
    parser.add_argument("--db", type=Path, help="the store (built when missing)")
    args = parser.parse_args()
    folder = tempfile.TemporaryDirectory(prefix="lab-bench-check-")
    db = args.db or Path(folder.name) / "check.db"
    if not db.exists():
        started = time.monotonic()
        build(db, args.samples)
        print(f"built {args.samples:,} samples in {time.monotonic() - started:.1f} s: {db}")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "lab", "store", "check", "--db", str(db)],
        cwd=CHECKOUT, capture_output=True, text=True,
    )  # fmt: skip
    took = time.monotonic() - started
    print(done.stdout + done.stderr, end="")
    print(f"lab store check: {took:.1f} s (status {done.returncode}; target under"
          f" {TARGET_SECONDS:.0f} s for 6,000,000 samples)")  # fmt: skip
    folder.cleanup()
    return 0 if done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
