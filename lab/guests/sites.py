"""A host as `lab up`, `lab run` and `lab down` work with it: one :class:`Site` per host.

A site carries the host's context (its libvirt connection and its host commands), where
its guests' files are made (a folder here, a libvirt storage pool there), how its facts
are read, and where this machine keeps the record of its guests: ``<state_dir>/lab.json``
for 'local', ``<state_dir>/hosts/NAME/lab.json`` for every other host.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core.context import Context
from lab.core.inventory import LOCAL, HostEntry, guest_prefix, inventory, select_hosts
from lab.guests.files import GuestFiles, LocalFiles
from lab.guests.labstate import GuestRecord, LabState, load_state, no_lab_up
from lab.host.site import HostSite, host_context


@dataclass
class Site(HostSite):
    """A host with where its guests get their files and the record of what is up there."""

    files: GuestFiles

    @property
    def prefix(self) -> str:
        return guest_prefix(self.name)

    def load_state(self) -> LabState | None:
        return load_state(self.state_dir)


def site_for(ctx: Context, entry: HostEntry) -> Site:
    there, state_dir = host_context(ctx, entry)
    if entry.ssh is None:
        return Site(entry, there, state_dir, LocalFiles(there.host, state_dir))
    from lab.guests.storagepool import PoolFiles  # pycdlib and lxml: only for other hosts

    return Site(entry, there, state_dir, PoolFiles(there))


def local_site(ctx: Context) -> Site:
    return site_for(ctx, inventory(ctx.config)[LOCAL])


def chosen_sites(ctx: Context, hosts: str | None) -> list[Site]:
    """``--hosts`` as sites; None means this machine (what `lab up` does by default)."""
    return [site_for(ctx, entry) for entry in select_hosts(ctx.config, hosts)]


def sites_up(ctx: Context, hosts: str | None = None) -> list[tuple[Site, LabState]]:
    """The sites among ``--hosts`` (None: every host in the inventory) with a lab up."""
    found = []
    for site in chosen_sites(ctx, "all" if hosts is None else hosts):
        state = site.load_state()
        if state is not None:
            found.append((site, state))
    return found


def require_up(ctx: Context, hosts: str | None = None) -> list[tuple[Site, LabState]]:
    """:func:`sites_up`, refusing when there is none."""
    up = sites_up(ctx, hosts)
    if not up:
        raise no_lab_up()
    return up


def guests_of(up: list[tuple[Site, LabState]]) -> list[GuestRecord]:
    """Every guest of every site in ``up``, in that order."""
    return [guest for _, state in up for guest in state.guests]
