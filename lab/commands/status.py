"""``lab status``: the lab's guests, their state, address, variant, pinning, readiness."""

from __future__ import annotations

import argparse
from typing import Any

from lab.core.context import Context


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
    from lab.core.errors import LabError
    from lab.guests.sites import sites_up

    up = sites_up(ctx)
    if not up and not args.json:
        ctx.out.print("no lab is up. Start one: lab up --pair thp,shp1g")
        return 0
    hosts = []
    for site, state in up:
        try:
            conn = site.ctx.libvirt
        except LabError as err:
            ctx.warn(f"host {site.name}: {err.message}")
            conn = None
        if args.json:
            hosts.append(_document(state, conn))
        else:
            _table(ctx, state, conn)
    if args.json:
        ctx.print_json({"hosts": hosts})
    return 0


def _state_of(conn: Any, name: str) -> str:
    import libvirt

    if conn is None:
        return "unreachable"
    try:
        return "running" if conn.lookupByName(name).isActive() else "shut off"
    except libvirt.libvirtError:
        return "missing"


def _document(state: Any, conn: Any) -> dict[str, Any]:
    return {
        "host": state.host,
        "accelerator": state.accelerator,
        "image": state.image,
        "network": state.network,
        "emulator_cpus": list(state.emulator_cpus),
        "verified": bool(state.ready),
        "guests": [
            {
                "name": g.name,
                "variant": g.variant,
                "state": _state_of(conn, g.name),
                "address": g.ip or None,
                "vcpu_cpus": list(g.vcpu_cpus),
            }
            for g in state.guests
        ],
    }


def _table(ctx: Context, state: Any, conn: Any) -> None:
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
            f"host {state.host} · accelerator {state.accelerator} · image {state.image}"
            f" · network {state.network}"
        ),
    )
    for guest in state.guests:
        table.add_row(*map(cell, (
            guest.name,
            guest.variant,
            _state_of(conn, guest.name),
            guest.ip or "-",
            ",".join(map(str, guest.vcpu_cpus)),
            ",".join(map(str, state.emulator_cpus)),
            "yes" if state.ready else "no",
        )))  # fmt: skip
    ctx.out.print(table)
