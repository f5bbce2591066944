"""What issues 43 and 42 add to a run's start and to ``lab report``, timed.

1. A run's start: the revision workload's ``source_versions`` for two guests (``git
   rev-parse REV^{commit}`` and ``git describe --always --tags`` each) on a repository of
   ``--commits`` commits, with the revisions given symbolically (``main`` and ``main~N``),
   and gdb-build's SHA-256 of a ``--tarball-mib`` MiB tarball (sha256sum).
2. The report: ``thp_coverage`` (the store read and the pairing) and the figure drawn to PNG,
   on a store of ``--runs`` runs × 2 twins × ``--iterations`` iterations that each recorded
   the host's unusable index and its QEMU's THP (a real run samples them at most every 2 s).

Each timed ``--repeat`` times; the median printed with the range. Every check that the
figures are right is in tests/unit (test_sources.py, test_report_thp_age.py).

    python bench/versions_age.py [--commits 2000] [--runs 40] [--iterations 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from lab.app.thpcoverage import thp_coverage
from lab.core.hostexec import Host
from lab.report.ageplot import age_plot
from lab.report.plots import png
from lab.run.backing import DEFAULT_DECLARED, HUGETLB_DECLARED
from lab.run.environment import latest
from lab.run.workloads.gdb_build import WORKLOAD as GDB
from lab.run.workloads.revision import WORKLOAD as REVISION
from lab.store import IterationRecord, MetricInfo, Store

RAM_KIB = 1_048_576


def timed(call: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """(median, fastest, slowest) seconds of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def shown(label: str, t: tuple[float, float, float]) -> None:
    print(f"{label}: {t[0] * 1000:.1f} ms (range {t[1] * 1000:.1f}–{t[2] * 1000:.1f} ms)")


def make_repo(path: Path, commits: int) -> None:
    """``commits`` commits on main, one tag at the first, made by git fast-import."""
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    stream = []
    for i in range(commits):
        data = f"{i}\n"
        stream += [f"commit refs/heads/main\nmark :{i + 1}\n"
                   f"committer t <t@t> {1_700_000_000 + i} +0000\ndata 2\nc\n"]  # fmt: skip
        if i:
            stream.append(f"from :{i}\n")
        stream.append(f"M 644 inline f.txt\ndata {len(data)}\n{data}\n")
    stream.append("reset refs/tags/v1\nfrom :1\n\n")
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"], input="".join(stream),
                   text=True, check=True)  # fmt: skip


def make_store(path: Path, runs: int, iterations: int) -> None:
    rng = np.random.default_rng(42)
    metrics = [MetricInfo("wall_s", "s", "lower"),
               MetricInfo("backing.host_thp_unusable_index", "ratio", None),
               MetricInfo("backing.qemu_anon_huge_kib", "KiB", None),
               MetricInfo("backing.qemu_hugetlb_kib", "KiB", None)]  # fmt: skip
    with Store.open(path) as store:
        study = store.ensure_study("age")
        guests = {v: store.ensure_guest(study, f"lab-{v}", v) for v in ("thp", "shp1g")}
        for r in range(runs):
            run = store.ensure_run(study, f"r{r}", "null", {"r": r}, "sync", iterations, metrics)
            base = r / max(1, runs - 1)
            for variant, guest in guests.items():
                index = np.clip(base + rng.normal(0, 0.02, iterations), 0, 1)
                thp = variant == "thp"
                store.record(run, guest, [IterationRecord(i + 1, 1, True, metrics={
                    "wall_s": 1.0, "backing.host_thp_unusable_index": float(index[i]),
                    "backing.qemu_anon_huge_kib": (0.9 - 0.8 * float(index[i])) * RAM_KIB
                    if thp else 0.0,
                    "backing.qemu_hugetlb_kib": 0.0 if thp else float(RAM_KIB)})
                    for i in range(iterations)])  # fmt: skip
                declared = DEFAULT_DECLARED if thp else HUGETLB_DECLARED
                store.record_environment(run, "guest", f"lab-{variant}", {
                    "memory_kib": str(RAM_KIB), "variant": variant,
                    "memory_backing_declared": declared})  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--tarball-mib", type=int, default=24)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]
    print(f"{os.cpu_count()} CPUs; git {git}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = root / "repo"
        make_repo(repo, args.commits)
        back = args.commits // 2
        params = {"repo": str(repo), "revs": f"lab-thp=main,lab-shp1g=main~{back}", "argv": "x"}
        found = REVISION.source_versions(params, Host(), root / "nfs")
        print(f"revision, {args.commits:,} commits: {found['lab-thp']['source_describe']},"
              f" {found['lab-shp1g']['source_describe']}")  # fmt: skip
        shown(
            "  source_versions, 2 guests (rev-parse + describe each)",
            timed(lambda: REVISION.source_versions(params, Host(), root / "nfs"), args.repeat),
        )
        tarball = root / "gdb_13.1.orig.tar.xz"
        tarball.write_bytes(os.urandom(args.tarball_mib << 20))
        shown(f"gdb-build, {args.tarball_mib} MiB tarball: source_versions (sha256sum)",
              timed(lambda: GDB.source_versions({"source": str(tarball)}, Host(), root),
                    args.repeat))  # fmt: skip

        db = root / "lab.db"
        start = time.perf_counter()
        make_store(db, args.runs, args.iterations)
        built, size = time.perf_counter() - start, db.stat().st_size / 2**20
        print(f"store: {args.runs} runs × 2 twins × {args.iterations:,} iterations, built in"
              f" {built:.1f} s, {size:.1f} MiB")  # fmt: skip
        with Store.open(db, create=False) as store:
            runs = store.runs()
            now = {r.key: latest(store.environment(r.id)) for r in runs}
            coverage = thp_coverage(store, runs, now)
            shown(f"thp_coverage ({sum(x.size for x, _ in coverage.points.values()):,} points)",
                  timed(lambda: thp_coverage(store, runs, now), args.repeat))  # fmt: skip
        shown("age_plot + PNG", timed(lambda: png(age_plot(coverage)[0]), args.repeat))


if __name__ == "__main__":
    main()
