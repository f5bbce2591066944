"""``lab up``: bring twin guests up from one base image, ready and verified."""

from __future__ import annotations

import argparse
from typing import Any

from lab.core.context import Context
from lab.guests.plan import add_twin_arguments, parse_pair, request_from

PHASES = ("clone", "define", "start", "booting", "lease", "ssh", "cloud-init", "verified")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "up",
        help="bring a pair of twin guests up",
        description="Make linked clones of the base image, a NoCloud seed per guest, define"
        " each guest from the common base plus its variant, pin vCPUs to disjoint host CPUs,"
        " boot them, wait until each has a DHCP lease, SSH and a finished cloud-init, and"
        " verify that each runs as declared (pinning, huge page backing). Refuses before"
        " creating anything when the host lacks what a variant needs. With --hosts, one pair"
        " on each host of lab.toml's [hosts] (libvirt URIs), brought up at once: the base"
        " image is uploaded once per host into a storage pool, guests are reached through"
        " the host's SSH.",
    )
    parser.add_argument(
        "--pair",
        required=True,
        metavar="A,B",
        help="the two variants, e.g. thp,shp1g (see `lab variants`)",
    )
    parser.add_argument("--image", help="base image name (config: image)")
    add_twin_arguments(parser)
    from lab.guests.sites import add_hosts_argument

    add_hosts_argument(parser, default="local; 'all' with --pairs")
    parser.add_argument(
        "--pairs",
        type=int,
        metavar="N",
        help="N pairs, one per host: on the first N hosts of --hosts (in lab.toml's order,"
        " 'local' first) that have no lab up yet; refused when fewer are free",
    )
    parser.add_argument(
        "--allow-overcommit",
        action="store_true",
        help="bring the pair up even when other running guests may use its CPUs (refused"
        " otherwise: their load would be in the timings)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from concurrent.futures import ThreadPoolExecutor
    from dataclasses import replace

    from lab.core.errors import LabError
    from lab.core.progress import PhaseBoard
    from lab.guests.bringup import UpResult, bring_up
    from lab.guests.memory import check_host_memory
    from lab.guests.sites import Site, chosen_sites

    if args.image:
        ctx.config = replace(ctx.config, image=args.image)
    request = request_from(args, ctx, parse_pair(args.pair))
    sites = chosen_sites(ctx, args.hosts if args.pairs is None or args.hosts else "all")
    if args.pairs is not None:
        from lab.core.inventory import spread_pairs

        up_already = {s.name for s in sites if s.load_state() is not None}
        names = spread_pairs([s.name for s in sites], up_already, args.pairs)
        sites = [s for s in sites if s.name in names]
        skipped = f" (a lab is up on {', '.join(sorted(up_already))})" if up_already else ""
        ctx.note(f"{args.pairs} pair(s), one per host: on {', '.join(names)}{skipped}")
    if any(not s.remote for s in sites):  # variants, CPU plan and memory, before anything
        check_host_memory(ctx, request)
    failures: list[tuple[Site, LabError]] = []
    results: list[UpResult] = []
    with PhaseBoard(ctx.err, PHASES) as board:

        def up(site: Site) -> None:
            try:
                results.append(bring_up(ctx, request, board.update, site, args.allow_overcommit))
            except LabError as err:
                if len(sites) == 1:
                    raise
                failures.append((site, err))

        with ThreadPoolExecutor(max_workers=len(sites)) as pool:
            list(pool.map(up, sites))
    for result in results:
        _print_result(ctx, result)
    if failures:
        raise LabError(
            "; ".join(f"host {site.name}: {err}" for site, err in failures),
            hint="The other hosts' pairs are up. Fix the cause, `lab down --hosts NAME`"
            " and `lab up --hosts NAME` there",
        )
    ctx.out.print("verified: pinning as planned, RAM backing as declared. Next: lab run WORKLOAD")
    return 0


def _print_result(ctx: Context, result: Any) -> None:
    from rich.table import Table

    from lab.core.inventory import LOCAL

    state = result.state
    where = f" on {state.host}" if state.host != LOCAL else ""
    table = Table(
        "guest",
        "variant",
        "address",
        "vCPUs on",
        "kernel",
        "guest THP",
        "ready after",
        title=f"lab up{where}: {state.accelerator}",
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
