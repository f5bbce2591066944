"""``lab status``'s action: each host with a lab up, and the libvirt state of its guests.

A host whose libvirt cannot be reached is still listed, its guests "unreachable", with why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.core.context import Context
from lab.core.errors import LabError
from lab.guests.sites import sites_up


@dataclass(frozen=True)
class GuestStatus:
    name: str
    variant: str
    state: str  # running, shut off, missing (libvirt knows no such domain) or unreachable
    address: str | None
    vcpu_cpus: tuple[int, ...]


@dataclass(frozen=True)
class HostStatus:
    host: str
    accelerator: str
    image: str
    network: str
    emulator_cpus: tuple[int, ...]
    verified: bool  # `lab up` verified the pair
    guests: tuple[GuestStatus, ...]
    error: LabError | None = None  # why libvirt could not be asked there


def lab_status(ctx: Context) -> list[HostStatus]:
    """Every host of the inventory with a lab up, in the inventory's order."""
    hosts = []
    for site, state in sites_up(ctx):
        error = None
        try:
            conn = site.ctx.libvirt
        except LabError as err:
            error, conn = err, None
        guests = tuple(
            GuestStatus(
                g.name, g.variant, _state_of(conn, g.name), g.ip or None, tuple(g.vcpu_cpus)
            )
            for g in state.guests
        )
        hosts.append(
            HostStatus(
                state.host, state.accelerator, state.image, state.network,
                tuple(state.emulator_cpus), bool(state.ready), guests, error,
            )
        )  # fmt: skip
    return hosts


def _state_of(conn: Any, name: str) -> str:
    import libvirt  # deferred: the host extra (lab.core.context says so when it is missing)

    if conn is None:
        return "unreachable"
    try:
        return "running" if conn.lookupByName(name).isActive() else "shut off"
    except libvirt.libvirtError:
        return "missing"
