"""``lab up``: bring twin guests up from one base image, ready and verified."""

from __future__ import annotations

import argparse
from typing import Any

from lab.context import Context
from lab.twinplan import add_twin_arguments, parse_pair, request_from

PHASES = ("clone", "define", "start", "booting", "lease", "ssh", "cloud-init", "verified")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "up",
        help="bring a pair of twin guests up",
        description="Make linked clones of the base image, a NoCloud seed per guest, define"
        " each guest from the common base plus its variant, pin vCPUs to disjoint host CPUs,"
        " boot them, wait until each has a DHCP lease, SSH and a finished cloud-init, and"
        " verify that each runs as declared (pinning, huge page backing). Refuses before"
        " creating anything when the host lacks what a variant needs.",
    )
    parser.add_argument(
        "--pair",
        required=True,
        metavar="A,B",
        help="the two variants, e.g. thp,shp1g (see `lab variants`)",
    )
    parser.add_argument("--image", help="base image name (config: image)")
    add_twin_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from dataclasses import replace

    from rich.table import Table

    from lab.bringup import bring_up
    from lab.hostmemory import check_host_memory
    from lab.progress import PhaseBoard

    if args.image:
        ctx.config = replace(ctx.config, image=args.image)
    request = request_from(args, ctx, parse_pair(args.pair))
    check_host_memory(ctx, request)  # variants, CPU plan and memory, before anything is made
    with PhaseBoard(ctx.err, PHASES) as board:
        result = bring_up(ctx, request, board.update)
    table = Table(
        "guest",
        "variant",
        "address",
        "vCPUs on",
        "kernel",
        "guest THP",
        "ready after",
        title=f"lab up: {result.state.accelerator}",
    )
    for guest in result.state.guests:
        seconds = result.seconds[guest.name]
        table.add_row(
            guest.name,
            guest.variant,
            guest.ip or "-",
            ",".join(map(str, guest.vcpu_cpus)),
            str(guest.facts.get("kernel")),
            str(guest.facts.get("thp_enabled")),
            f"{seconds.get('verified', 0):.1f} s",
        )
    ctx.out.print(table)
    ctx.out.print("verified: pinning as planned, RAM backing as declared. Next: lab run WORKLOAD")
    return 0
