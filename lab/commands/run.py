"""``lab run WORKLOAD --n N``: iterations on the twins, every sample stored as it happens."""

from __future__ import annotations

import argparse
from typing import Any

from lab.core.context import Context
from lab.store.cli import warmup_rule


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
    parser.add_argument(
        "--n",
        type=int,
        required=True,
        help="iterations per guest (with --until: the most it may take)",
    )
    parser.add_argument("--guests", help="comma-separated guest names (default: all)")
    from lab.guests.sites import add_hosts_argument

    add_hosts_argument(parser, default="every host where a lab is up")
    parser.add_argument(
        "--schedule",
        choices=("concurrent", "alternate", "sync"),
        default="concurrent",
        help="concurrent: all guests at once, each at its own pace (default); alternate: one"
        " guest at a time, iteration by iteration; sync: iteration i starts on all guests"
        " together and i+1 only when all finished i, so samples pair up (lab compare --paired)",
    )
    parser.add_argument(
        "--until",
        metavar="RULE",
        help="stop before --n once the rule holds: 'verdict' (faster, slower or equivalent"
        " by --threshold) or 'ci-halfwidth<0.5%%'. Checked after every pair of samples with"
        " an anytime-valid confidence sequence, so looking often does not inflate the"
        " false-positive rate (plain repeated t-tests would)",
    )
    parser.add_argument(
        "--swap-every",
        type=int,
        metavar="K",
        help="with --schedule sync: swap the two twins' CPU sets (live vCPU pins; the"
        " emulator threads keep their shared CPUs) every K iterations, so iterations"
        " K+1..2K, 3K+1..4K, ... run on each other's CPUs and the rest on their own. Each"
        " sample's placement is stored, and lab compare and lab report then show the"
        " effect of the variant and the effect of the CPU set separately, so 'which CPUs'"
        " cannot pass for 'which variant'. The pins are put back when the run ends",
    )
    parser.add_argument(
        "--warmup",
        metavar="K|auto",
        type=warmup_rule(allow_none=False),
        help="declare the warm-up, stored with the run: K discards the first K iterations"
        " after every boot of each guest, auto the leading iterations a CUSUM test finds;"
        " lab compare and lab report then leave them out unless told otherwise (--warmup"
        " there). Every iteration still runs and is stored, and the run's key does not"
        " change: a resumed run records the latest --warmup; without one it keeps its own",
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=99.99,
        metavar="PCT",
        help="confidence level for --until, in percent (default 99.99, as the reference study)",
    )
    parser.add_argument(
        "--threshold",
        default="1%",
        metavar="PCT",
        help="practical threshold for --until verdict (default 1%%)",
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


def parse_threshold(text: str) -> float:
    """'1%' or '0.01' as a fraction."""
    from lab.core.errors import UsageError

    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise UsageError(
            f"--threshold {text!r} is not a number", hint="e.g. --threshold 1%"
        ) from None
    if not 0 < value < 1:
        raise UsageError(f"--threshold {text!r} must lie between 0 and 100%")
    return value


def pair_items(pairs: list[str]) -> list[tuple[str, str]]:
    """``KEY=VALUE`` strings as pairs; the workload converts and checks the values."""
    from lab.core.errors import UsageError

    items = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"parameter {pair!r} is not KEY=VALUE", hint="e.g. -p time=10")
        items.append((key, value))
    return items


def command_line(args: argparse.Namespace) -> list[str]:
    """The `lab run` command as typed (near enough), for a second run that is refused."""
    argv = ["lab", "run", args.workload, "--n", str(args.n), "--study", args.study]
    for pair in args.param:
        argv += ["-p", pair]
    argv += ["--warmup", args.warmup] if args.warmup is not None else []
    argv += ["--hosts", args.hosts] if args.hosts else []
    return argv + (["--guests", args.guests] if args.guests else [])


def run(args: argparse.Namespace, ctx: Context) -> int:
    from pathlib import Path

    from lab.core.errors import UsageError
    from lab.core.inventory import LOCAL
    from lab.guests.bringup import shell_for
    from lab.guests.labstate import guest_named
    from lab.guests.sites import guests_of, require_up
    from lab.run.controller import STORE_CACHE_KIB, Controller, RunPlan
    from lab.run.hostside import host_side
    from lab.run.lock import run_lock
    from lab.run.progress import RunProgress
    from lab.run.workload import get_workload
    from lab.store import Store

    if args.n < 1:
        raise UsageError(f"--n must be 1 or more, not {args.n}", hint="e.g. --n 30")
    if args.max_failures < 0:
        raise UsageError(f"--max-failures must be 0 or more, not {args.max_failures}")
    if args.warmup is not None:
        from lab.stats.discard import declared_warmup

        try:
            declared_warmup(args.warmup, args.n)
        except ValueError as err:
            raise UsageError(
                f"--warmup {args.warmup} {err}",
                hint="Declare a warm-up shorter than the run, or run more iterations",
            ) from None
    if args.swap_every is not None:
        from lab.run.placement import check_swap_schedule

        check_swap_schedule(args.schedule, args.swap_every)
    workload = get_workload(args.workload)
    up = require_up(ctx, args.hosts)
    state = next((st for site, st in up if not site.remote), up[0][1])
    everyone = guests_of(up)
    names = args.guests.split(",") if args.guests else [g.name for g in everyone]
    guests = [guest_named(everyone, name) for name in names]
    _check_remote(workload, guests)
    if args.swap_every is not None:
        from lab.run.placement import check_swap_plan

        check_swap_plan(args.schedule, guests, args.swap_every)
    params = workload.resolve(dict(pair_items(args.param)))
    plan = RunPlan(
        study=args.study,
        workload=workload,
        params=params,
        n=args.n,
        schedule=args.schedule,
        max_failures=args.max_failures,
        until=args.until,
        confidence=args.confidence,
        threshold=parse_threshold(args.threshold),
        swap_every=args.swap_every,
    )
    with (
        run_lock(Path(ctx.config.state_dir), command_line(args), ctx.warn),
        Store.open(Path(args.db or ctx.config.store), cache_kib=STORE_CACHE_KIB) as store,
        host_side(
            ctx, workload, params, state, [g for g in guests if g.host == LOCAL], plan.runner_dir
        ),
        RunProgress(ctx, args.n) as progress,
    ):
        controller = Controller(
            ctx, store, state, guests, plan, lambda record: shell_for(ctx, record), progress.update,
            sites=up,
        )  # fmt: skip
        if args.warmup is not None:  # analysis, not identity: not part of the run's key
            store.record_warmup(controller.run_id, args.warmup)
        progress.start(controller)
        try:
            controller.run()
        except KeyboardInterrupt:
            controller.stop_runners()
            ctx.err.print(
                "stopped. Every finished iteration is stored; run the same command again to resume."
            )
            return 130
    if controller.decision is not None and controller.decision.stop:
        done = min(len(g.completed) for g in controller.guests)
        ctx.out.print(f"{controller.decision.method}: {controller.decision.reason}")
        ctx.out.print(
            f"run {controller.key}: stopped after {done} of at most {args.n} iterations per"
            f" guest, stored in {args.db or ctx.config.store}. Next: lab compare"
            f" --workload {args.workload} --paired"
        )
        return 0
    ctx.out.print(
        f"run {controller.key}: {args.n} iterations on {len(guests)} guests stored in"
        f" {args.db or ctx.config.store}. Next: lab compare --workload {args.workload}"
    )
    return 0


def _check_remote(workload: Any, guests: list[Any]) -> None:
    """Servers and NFS exports are made on this machine only, for its own guests."""
    from lab.core.errors import UsageError
    from lab.core.inventory import LOCAL

    remote = sorted({g.host for g in guests if g.host != LOCAL})
    if not remote:
        return
    if workload.serves_from_host:
        raise UsageError(
            f"{workload.name} needs servers on the guests' host, which the lab starts only on"
            f" this machine, and guests on {', '.join(remote)} would use it",
            hint="Run it with --hosts local, or run a workload without host servers there"
            " (see `lab workloads`)",
        )
