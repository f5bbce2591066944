#!/usr/bin/env python3
"""What the lab adds per iteration: `lab run null --n N` against a bare `true` loop.

Needs a pair up (`lab up --pair thp,shp1g ...`). For guest lab-thp it runs `null` N times
through the lab (runner, journal with fsync, controller ingesting into the store) and
the same `/bin/true` N times in a plain shell loop over one SSH call, then prints both per
iteration, the overhead and the ratio. Both are measured in this one run, since the
machine's speed drifts. Target: the lab adds under 5 % or under 2 ms per iteration,
whichever is larger.

To say where the overhead goes it also measures, in the same guest: the runner alone (run in
the foreground over SSH, no controller reading its journal), and one fsynced journal-sized
append (the journal fsyncs once per group of iterations, lab/inguest/journalfile.py).

``--baseline REV`` also runs the runner of git revision REV alone, in the same guest and the
same run (a runner that was one file, ``guest/runner.py``, with ``tools.py`` beside it, as
before lab/inguest existed; or a later zipapp), so a change's effect is a ratio measured
at one moment on one machine.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.guests.seed import GUEST_USER
from lab.run.controller import RUNNER_DIR
from lab.run.shipping import runner_zipapp, write_zipapp

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 5  # the default
WRITE = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text(sys.argv[2])"


def lab(*args: str, tree: str | None = None) -> subprocess.CompletedProcess[str]:
    """`lab ARGS`, of this checkout or of the one in ``tree`` (its own code, this Python)."""
    return subprocess.run(
        [sys.executable, "-m", "lab", *args], capture_output=True, text=True, check=True,
        cwd=tree,
    )  # fmt: skip


FSYNC_PROBE = """
import os, sys, time
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
t = time.monotonic()
for _ in range(n):
    os.write(fd, b"x" * 400 + b"\\n")
    os.fsync(fd)
print((time.monotonic() - t) / n)
os.unlink(path)
"""


class Where:
    """Runs argument lists in the guest (through `lab ssh`) or, with no guest, on this host."""

    def __init__(self, guest: str | None, scratch: str) -> None:
        self.guest, self.scratch = guest, scratch

    def run(self, *argv: str) -> str:
        if self.guest is None:
            return subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        return lab("ssh", self.guest, *argv).stdout


def bare_loop(where: Where, n: int) -> float:
    """`/bin/true` n times in a shell loop, timed by the loop's own clock."""
    script = (
        f"s=$(date +%s.%N); i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done;"
        ' e=$(date +%s.%N); echo "$s $e"'
    )
    start, end = map(float, where.run("sh", "-c", script).split())
    return (end - start) / n


def per_iteration(journal: str) -> tuple[int, float]:
    """(attempts, seconds per attempt from the first start to the last end) of a journal."""
    records = [json.loads(line) for line in journal.splitlines() if line.strip()]
    results = [r for r in records if "event" not in r]
    first = min(r["started"] for r in results)
    last = max(r["ended"] for r in results)
    return len(results), (last - first) / len(results)


def baseline_runner(where: Where, rev: str) -> str:
    """The runner of git revision ``rev`` put in ``where``'s scratch folder; its path."""

    def show(path: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip

    folder = f"{where.scratch}/baseline-{rev}"
    where.run("mkdir", "-p", folder)
    where.run("python3", "-c", WRITE, f"{folder}/runner.py", show("guest/runner.py"))
    where.run("python3", "-c", WRITE, f"{folder}/tools.py", show("lab/parsers/tools.py"))
    return f"{folder}/runner.py"


def runner_alone(where: Where, runner: str, n: int, backing: bool = True) -> float:
    """The runner in the foreground, journalling as in a run, with no controller reading;
    ``backing``: reading the guest's THP counters around each attempt, as `lab run` asks
    (a runner older than that option is given a spec without it)."""
    spec = {"workload": "null", "argv": ["true"], "env": {"LC_ALL": "C"},
            "metrics_from": {"wall_s": "wall_s"}, "end_iteration": n}  # fmt: skip
    if backing:
        spec["backing"] = True
    key, folder = f"bench-{time.time():.0f}", f"{where.scratch}/runs"
    where.run("mkdir", "-p", folder)
    where.run("python3", "-c", WRITE, f"{folder}/{key}.json", json.dumps(spec))
    where.run("python3", runner, "start", "--foreground", "--dir", folder, "--run-key", key,
              "--spec", f"{folder}/{key}.json")  # fmt: skip
    count, seconds = per_iteration(where.run("cat", f"{folder}/{key}.journal"))
    where.run("rm", "-rf", folder)
    assert count == n, f"the runner recorded {count} attempts, not {n}"
    return seconds


def fsynced_append(where: Where) -> float:
    return float(where.run("python3", "-c", FSYNC_PROBE, f"{where.scratch}/fsync.probe", "100"))


def through_lab(guest: str, n: int, tree: str | None = None) -> tuple[float, float, float]:
    """`lab run null`: (the runner's first start to its last line, the same from the first
    iteration after the first tenth, the whole command), per iteration, from the store; with
    ``tree``, that checkout's lab.

    The first tenth shares the guest's one CPU with what the controller's start of the
    runner leaves behind (the start command exiting, its SSH session closing, the SFTP
    server starting): 0.1-0.4 s here, a millisecond and more per iteration in a round of
    200, nothing in a study of thousands. The second figure is the lab in its steady state.
    """
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        t0 = time.monotonic()
        # concurrent: the runner left to its loop (bench/schedules.py times the paired ones)
        lab("run", "null", "--n", str(n), "--guests", guest, "--db", str(db), "--schedule",
            "concurrent", "--study", f"bench-{time.time():.0f}", tree=tree)  # fmt: skip
        total = time.monotonic() - t0
        with sqlite3.connect(db) as conn:
            starts = [row[0] for row in conn.execute("SELECT started FROM iteration ORDER BY 1")]
            (last,) = conn.execute("SELECT MAX(ended) FROM iteration").fetchone()
    skip = n // 10
    return (last - starts[0]) / n, (last - starts[skip]) / (n - skip), total / n


def verdict(overhead: float, bare: float) -> str:
    allowed = max(0.05 * bare, 0.002)
    word = "meets" if overhead <= allowed else "misses"
    return f"{word} the target (<= {allowed * 1e3:.3f} ms/iteration)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--guest", default="lab-thp")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds")
    parser.add_argument("--baseline", metavar="REV", help="also time the runner of git REV alone")
    parser.add_argument(
        "--baseline-tree", metavar="DIR",
        help="also time `lab run null` of the checkout in DIR (e.g. a worktree of an older"
        " commit) in every round: the whole lab before and after, at the same moments",
    )  # fmt: skip
    parser.add_argument(
        "--native", action="store_true",
        help="no guest: the bare loop, the runner alone and the fsync on this host",
    )  # fmt: skip
    args = parser.parse_args()
    print(f"iterations            {args.n}")

    if args.native:
        with tempfile.TemporaryDirectory() as tmp:
            where = Where(None, tmp)
            bare = bare_loop(where, args.n)
            alone = runner_alone(where, str(write_zipapp(Path(tmp))), args.n)
            old = args.baseline and runner_alone(
                where, baseline_runner(where, args.baseline), args.n, backing=False
            )
            fsync = fsynced_append(where)
        print(f"bare `true` loop      {bare * 1e3:8.3f} ms/iteration (this host)")
        print(f"runner alone          {alone * 1e3:8.3f} ms/iteration (this host)")
        if old:
            print(
                f"runner of {args.baseline:<11} {old * 1e3:8.3f} ms/iteration (this host),"
                f" adds {(old - bare) * 1e3:.3f} ms; now {(alone - bare) / (old - bare):.2f}x that"
            )
        print(f"overhead              {(alone - bare) * 1e3:8.3f} ms/iteration")
        print(f"  one fsynced append   {fsync * 1e3:8.3f} ms (one per group of iterations)")
        print(f"target                {verdict(alone - bare, bare)}")
        return 0

    # The guest's speed drifts by 10 % and more over minutes, so the loops are measured in
    # --rounds interleaved rounds, each figure between two bare loops (bare, the lab, bare,
    # the runner alone, bare, ...) and compared with their mean: a drift during the round
    # then counts in both, and the medians of these differences are compared.
    where = Where(args.guest, f"/home/{GUEST_USER}/lab-bench")
    app = f"{RUNNER_DIR}/{runner_zipapp().name}"
    old_runner = baseline_runner(where, args.baseline) if args.baseline else None
    per_round = max(10, args.n // args.rounds)
    bares: list[float] = []
    rows: list[dict[str, tuple[float, float]]] = []  # per round: name -> (value, its bare)

    def bracketed(row: dict[str, tuple[float, float]], **values: float) -> None:
        before = bares[-1]
        bares.append(bare_loop(where, per_round))
        row.update({name: (value, (before + bares[-1]) / 2) for name, value in values.items()})

    for _ in range(args.rounds):
        row: dict[str, tuple[float, float]] = {}
        bares.append(bare_loop(where, per_round))
        in_guest, steady, whole = through_lab(args.guest, per_round)  # installs the zipapp
        bracketed(row, lab=in_guest, steady=steady, whole=whole)
        if args.baseline_tree:
            old, old_steady, _ = through_lab(args.guest, per_round, args.baseline_tree)
            bracketed(row, old_lab=old, old_steady=old_steady)
        bracketed(row, alone=runner_alone(where, app, per_round))
        if old_runner:
            bracketed(row, old_runner=runner_alone(where, old_runner, per_round, backing=False))
        rows.append(row)
    fsync = fsynced_append(where)

    def value(name: str) -> float:
        return statistics.median(row[name][0] for row in rows)

    def added(name: str) -> float:
        """The median over the rounds of the figure less the bare loops around it."""
        return statistics.median(row[name][0] - row[name][1] for row in rows)

    for i, row in enumerate(rows, 1):
        shown = ", ".join(f"{name} {v * 1e3:.2f} (+{(v - b) * 1e3:.2f})"
                          for name, (v, b) in row.items() if name != "whole")  # fmt: skip
        print(f"round {i}: {shown}")
    bare, overhead, runner_share = statistics.median(bares), added("lab"), added("alone")
    print(f"rounds                {args.rounds} x {per_round} iterations, medians")
    print(f"bare `true` loop      {bare * 1e3:8.3f} ms/iteration")
    print(
        f"lab run null          {value('lab') * 1e3:8.3f} ms/iteration (runner start to last line)"
    )
    print(f"lab run null, wall    {value('whole') * 1e3:8.3f} ms/iteration (whole command)")
    print(f"runner alone          {value('alone') * 1e3:8.3f} ms/iteration (no controller)")
    if old_runner:
        old_share = added("old_runner")
        print(
            f"runner of {args.baseline:<11} {value('old_runner') * 1e3:8.3f} ms/iteration (no"
            f" controller), adds {old_share * 1e3:.3f} ms; now {runner_share / old_share:.2f}x that"
        )
    print(
        f"overhead              {overhead * 1e3:8.3f} ms/iteration"
        f" (median of the rounds' lab - bare; {value('lab') / bare:.2f}x the bare loop)"
    )
    steady = added("steady")
    print(f"  in the steady state  {steady * 1e3:8.3f} ms/iteration (after the first tenth)")
    if args.baseline_tree:
        before = added("old_lab")
        print(
            f"lab of {args.baseline_tree} adds {before * 1e3:.3f} ms/iteration"
            f" (median of the rounds' lab - bare); this one {overhead / before:.2f}x that"
        )
        before = added("old_steady")
        print(
            f"  in the steady state {before * 1e3:.3f} ms/iteration; this one"
            f" {steady / before:.2f}x that"
        )
        gaps = statistics.median(row["lab"][0] - row["old_lab"][0] for row in rows)
        print(f"  lab - lab of the tree, round by round: median {gaps * 1e3:+.3f} ms/iteration")
    print(f"  of which runner      {runner_share * 1e3:8.3f} ms/iteration (alone - bare)")
    print(f"  of which controller  {(overhead - runner_share) * 1e3:8.3f} ms/iteration")
    print(f"  one fsynced append   {fsync * 1e3:8.3f} ms (one per group of iterations)")
    print(f"target                {verdict(overhead, bare)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
