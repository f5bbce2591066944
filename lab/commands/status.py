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
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.core.errors import LabError
    from lab.guests.sites import sites_up

    up = sites_up(ctx)
    if not up:
        ctx.out.print("no lab is up. Start one: lab up --pair thp,shp1g")
        return 0
    for site, state in up:
        try:
            conn = site.ctx.libvirt
        except LabError as err:
            ctx.warn(f"host {site.name}: {err.message}")
            conn = None
        _table(ctx, state, conn)
    return 0


def _table(ctx: Context, state: Any, conn: Any) -> None:
    import libvirt
    from rich.table import Table

    table = Table(
        "guest",
        "variant",
        "state",
        "address",
        "vCPUs on",
        "emulator on",
        "verified",
        title=f"host {state.host} · accelerator {state.accelerator} · image {state.image}"
        f" · network {state.network}",
    )
    for guest in state.guests:
        if conn is None:
            running = "unreachable"
        else:
            try:
                running = "running" if conn.lookupByName(guest.name).isActive() else "shut off"
            except libvirt.libvirtError:
                running = "missing"
        table.add_row(
            guest.name,
            guest.variant,
            running,
            guest.ip or "-",
            ",".join(map(str, guest.vcpu_cpus)),
            ",".join(map(str, state.emulator_cpus)),
            "yes" if state.ready else "no",
        )
    ctx.out.print(table)
