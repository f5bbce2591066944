"""``lab demo``: the main job end to end, a short real study with the embedded defaults.

Each step is the `lab` command a user would type, run in order and shown as it runs,
so the demo doubles as a walk-through of the tool.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from lab.core.context import Context

PAIR = "thp,shp1g"


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo",
        help="run a short real study end to end (prepare, build, up, run, compare)",
        description="Prepare the host, build the base image (cached), bring a thp,shp1g pair"
        " up, run short sysbench-memory, iperf3, demo-build and null runs on both twins at"
        " once, compare them, write the report and bring the pair down again. Under TCG it"
        " takes about 10 minutes.",
    )
    parser.add_argument("--n", type=int, default=5, help="iterations per workload (default 5)")
    parser.add_argument("--keep", action="store_true", help="leave the pair up at the end")
    parser.add_argument("--db", help="result store (default: results/demo.db)")
    parser.set_defaults(run=run)


def steps(n: int, db: str, reserve: int) -> list[list[str]]:
    sizing = ["--vcpus", "1", "--memory", "1G", "--reserve-host-cpus", str(reserve)]
    run = ["--study", "demo", "--db", db, "--n", str(n)]
    return [
        ["host", "prepare", "--hugepages", "1G:1"],
        ["image", "build"],
        ["down"],
        ["up", "--pair", PAIR, *sizing],
        [
            "run",
            "sysbench-memory",
            *run,
            "-p",
            "time=5",
            "-p",
            "total_size=1G",
            "-p",
            "block_size=1M",
        ],
        ["run", "iperf3", *run, "-p", "duration=3"],
        ["run", "demo-build", *run],
        ["run", "null", *run],
        ["compare", "--db", db],
        ["report", "--db", db],
    ]


def run(args: argparse.Namespace, ctx: Context) -> int:
    from pathlib import Path

    from lab.cli import main
    from lab.core.errors import UsageError
    from lab.core.paths import RESULTS_DIR
    from lab.run.lock import run_lock

    if args.n < 1:
        raise UsageError(f"--n must be 1 or more, not {args.n}", hint="e.g. lab demo --n 5")
    db = args.db or str(RESULTS_DIR / "demo.db")
    # Keep one host CPU free when the host has one to spare; a 2-CPU host gives both away.
    reserve = 1 if (os.cpu_count() or 1) >= 3 else 0
    plan = steps(args.n, db, reserve)
    if not args.keep:
        plan.append(["down"])
    # Held for the whole demo (its `lab run` steps take it again): a second demo or a
    # `lab run` started meanwhile is refused instead of downing or sharing this pair.
    # Each step reads the same lab.toml as the demo (`lab --config X demo`).
    config = ["--config", args.config] if getattr(args, "config", None) else []
    with run_lock(Path(ctx.config.state_dir), ["lab", "demo", "--n", str(args.n)], ctx.warn):
        for step in plan:
            ctx.err.rule(f"lab {' '.join(step)}")
            status = main([*config, *step])
            if status != 0:
                ctx.err.print(
                    f"[bold red]lab demo: `lab {' '.join(step)}` failed ({status});"
                    " the pair is left as it is: see `lab status`, then `lab down`."
                )
                return status
    ctx.out.print(f"demo done: results in {db}, report under {Path(db).parent / 'report'}")
    return 0
