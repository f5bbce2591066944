"""``lab status``: the lab's guests, their state, address, variant, pinning, readiness."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lab.core.context import Context

if TYPE_CHECKING:
    from lab.app.status import HostStatus


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "status",
        help="show the lab's guests",
        description="Show each guest's libvirt state, address, variant, pinned CPUs and whether"
        " `lab up` verified it.",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the hosts and their guests as JSON"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.status import lab_status  # deferred: the parser is built for every command

    hosts = lab_status(ctx)
    if not hosts and not args.json:
        ctx.out.print("no lab is up. Start one: lab up --pair thp,shp1g")
        return 0
    documents = []
    for host in hosts:
        if host.error is not None:
            ctx.warn(f"host {host.host}: {host.error.message}")
        if args.json:
            documents.append(_document(host))
        else:
            _table(ctx, host)
    if args.json:
        ctx.print_json({"hosts": documents})
    return 0


def _document(host: HostStatus) -> dict[str, Any]:
    return {
        "host": host.host,
        "accelerator": host.accelerator,
        "image": host.image,
        "network": host.network,
        "emulator_cpus": list(host.emulator_cpus),
        "verified": host.verified,
        "guests": [
            {
                "name": g.name,
                "variant": g.variant,
                "state": g.state,
                "address": g.address,
                "vcpu_cpus": list(g.vcpu_cpus),
            }
            for g in host.guests
        ],
    }


def _table(ctx: Context, host: HostStatus) -> None:
    from rich.table import Table

    from lab.core.text import cell  # the lab's state file is data: never markup

    table = Table(
        "guest",
        "variant",
        "state",
        "address",
        "vCPUs on",
        "emulator on",
        "verified",
        title=cell(
            f"host {host.host} · accelerator {host.accelerator} · image {host.image}"
            f" · network {host.network}"
        ),
    )
    for guest in host.guests:
        table.add_row(*map(cell, (
            guest.name,
            guest.variant,
            guest.state,
            guest.address or "-",
            ",".join(map(str, guest.vcpu_cpus)),
            ",".join(map(str, host.emulator_cpus)),
            "yes" if host.verified else "no",
        )))  # fmt: skip
    ctx.out.print(table)
