"""``lab status``: the lab's guests, their state, address, variant, pinning, readiness."""

from __future__ import annotations

import argparse
from typing import Any

from lab.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "status",
        help="show the lab's guests",
        description="Show each guest's libvirt state, address, variant, pinned CPUs and whether"
        " `lab up` verified it.",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from pathlib import Path

    import libvirt
    from rich.table import Table

    from lab.labstate import load_state

    state = load_state(Path(ctx.config.state_dir))
    if state is None:
        ctx.out.print("no lab is up. Start one: lab up --pair thp,shp1g")
        return 0
    table = Table(
        "guest",
        "variant",
        "state",
        "address",
        "vCPUs on",
        "emulator on",
        "verified",
        title=f"accelerator {state.accelerator} · image {state.image} · network {state.network}",
    )
    for guest in state.guests:
        try:
            running = "running" if ctx.libvirt.lookupByName(guest.name).isActive() else "shut off"
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
    return 0
