"""``lab run WORKLOAD --n N``: iterations on the twins, every sample stored as it happens."""

from __future__ import annotations

import argparse
from typing import Any

from lab.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run a workload on the twins and store every sample",
        description="Run WORKLOAD for N iterations on the lab's guests (both at once by"
        " default). A runner inside each guest does the iterations and journals each one"
        " durably; the controller streams the journals into the result store. Re-running the"
        " same command resumes where it stopped (after Ctrl-C, a killed controller, a lost"
        " connection or a rebooted guest); failed iterations are kept and repeated.",
        epilog="Workloads and their parameters: lab workloads",
    )
    parser.add_argument("workload", help="workload name (see `lab workloads`)")
    parser.add_argument("--n", type=int, required=True, help="iterations per guest")
    parser.add_argument("--guests", help="comma-separated guest names (default: all)")
    parser.add_argument(
        "--schedule",
        choices=("concurrent", "alternate"),
        default="concurrent",
        help="concurrent: all guests at once (default); alternate: one guest"
        " at a time, iteration by iteration",
    )
    parser.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a workload parameter (repeatable), e.g. -p time=10",
    )
    parser.add_argument("--study", default="default", help="study name the samples belong to")
    parser.add_argument("--db", help="result store (config: store)")
    parser.add_argument(
        "--max-failures",
        type=int,
        default=10,
        metavar="K",
        help="stop when a guest has more than K failed attempts (default 10)",
    )
    parser.set_defaults(run=run)


def pair_items(pairs: list[str]) -> list[tuple[str, str]]:
    """``KEY=VALUE`` strings as pairs; the workload converts and checks the values."""
    from lab.errors import UsageError

    items = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"parameter {pair!r} is not KEY=VALUE", hint="e.g. -p time=10")
        items.append((key, value))
    return items


def run(args: argparse.Namespace, ctx: Context) -> int:
    from pathlib import Path

    from lab.bringup import shell_for
    from lab.controller import Controller, RunPlan
    from lab.errors import UsageError
    from lab.labstate import require_state
    from lab.runprogress import RunProgress
    from lab.store import Store
    from lab.workload import get_workload
    from lab.workloadhost import host_side

    if args.n < 1:
        raise UsageError(f"--n must be 1 or more, not {args.n}")
    workload = get_workload(args.workload)
    state = require_state(Path(ctx.config.state_dir))
    names = args.guests.split(",") if args.guests else [g.name for g in state.guests]
    guests = [state.guest(name) for name in names]
    params = workload.resolve(dict(pair_items(args.param)))
    plan = RunPlan(
        study=args.study,
        workload=workload,
        params=params,
        n=args.n,
        schedule=args.schedule,
        max_failures=args.max_failures,
    )
    with (
        Store.open(Path(args.db or ctx.config.store)) as store,
        host_side(ctx, workload, params, state, guests, plan.runner_dir),
        RunProgress(ctx, args.n) as progress,
    ):
        controller = Controller(
            ctx, store, state, guests, plan, lambda record: shell_for(ctx, record), progress.update
        )
        progress.start(controller)
        try:
            controller.run()
        except KeyboardInterrupt:
            controller.stop_runners()
            ctx.err.print(
                "stopped. Every finished iteration is stored; run the same command again to resume."
            )
            return 130
    ctx.out.print(
        f"run {controller.key}: {args.n} iterations on {len(guests)} guests stored in"
        f" {args.db or ctx.config.store}. Next: lab compare --workload {args.workload}"
    )
    return 0
