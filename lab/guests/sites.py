"""A host as `lab up`, `lab run` and `lab down` work with it: one :class:`Site` per host.

A site carries the host's context (its libvirt connection and its host commands), where
its guests' files are made (a folder here, a libvirt storage pool there), how its facts
are read, and where this machine keeps the record of its guests: ``<state_dir>/lab.json``
for 'local', ``<state_dir>/hosts/NAME/lab.json`` for every other host.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from lab.core.context import Context
from lab.core.inventory import LOCAL, HostEntry, guest_prefix, inventory
from lab.guests.files import GuestFiles, LocalFiles
from lab.guests.labstate import GuestRecord, LabState, load_state, no_lab_up
from lab.host.accel import AccelFacts
from lab.host.facts import Pool

SYSFS = Path("/sys")
# One fixed script, no user input in it: every huge page pool of the host as PATH:VALUE.
POOLS_SCRIPT = (
    "grep -H . /sys/kernel/mm/hugepages/*/*_hugepages"
    " /sys/devices/system/node/node*/hugepages/*/*_hugepages 2>/dev/null; true"
)
_POOL_LINE = re.compile(
    r"^/sys/(?:kernel/mm|devices/system/node/node(\d+))/hugepages/hugepages-(\d+)kB/"
    r"(nr|free|surplus)_hugepages:(\d+)$"
)
KVM_MODULES = ("kvm", "kvm_intel", "kvm_amd", "kvm_pvm")


@dataclass
class Site:
    entry: HostEntry
    ctx: Context  # libvirt at the host's URI; host commands run on that host
    state_dir: Path  # on this machine: where the record of its guests is kept
    files: GuestFiles

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def remote(self) -> bool:
        return self.entry.remote

    @property
    def remote_name(self) -> str | None:
        """The host's name when it is another host (for messages and ``--hosts`` hints);
        None for this machine."""
        return self.name if self.remote else None

    @property
    def prefix(self) -> str:
        return guest_prefix(self.name)

    def load_state(self) -> LabState | None:
        return load_state(self.state_dir)

    def accel_facts(self) -> AccelFacts:
        if not self.remote:
            from lab.guests.plan import read_accel_facts

            return read_accel_facts()
        return remote_accel_facts(self.ctx)

    def hugepage_pools(self) -> list[Pool]:
        if not self.remote:
            from lab.host.facts import read_hugepage_pools

            return read_hugepage_pools(SYSFS)
        return parse_pool_listing(self.ctx.host.run(["sh", "-c", POOLS_SCRIPT]).stdout)

    def free_pages(self, page_kib: int) -> int:
        return sum(
            p.free for p in self.hugepage_pools() if p.node is None and p.page_kib == page_kib
        )


def site_for(ctx: Context, entry: HostEntry) -> Site:
    state_dir = Path(ctx.config.state_dir)
    if entry.ssh is None:
        return Site(entry, ctx, state_dir, LocalFiles(ctx.host, state_dir))
    from lab.guests.storagepool import PoolFiles
    from lab.host.remote import RemoteHost

    there = replace(
        ctx,
        config=replace(ctx.config, libvirt_uri=entry.uri),
        host=RemoteHost(entry.name, entry.ssh, ctx.host),
    )
    return Site(entry, there, state_dir / "hosts" / entry.name, PoolFiles(there))


def local_site(ctx: Context) -> Site:
    return site_for(ctx, inventory(ctx.config)[LOCAL])


def parse_pool_listing(text: str) -> list[Pool]:
    """``grep -H . .../*_hugepages`` output as pools, global ones (node None) first."""
    numbers: dict[tuple[int | None, int], dict[str, int]] = {}
    for line in text.splitlines():
        match = _POOL_LINE.match(line.strip())
        if match:
            node = int(match.group(1)) if match.group(1) is not None else None
            numbers.setdefault((node, int(match.group(2))), {})[match.group(3)] = int(
                match.group(4)
            )
    pools = [
        Pool(node, kib, got.get("nr", 0), got.get("free", 0), got.get("surplus", 0))
        for (node, kib), got in numbers.items()
    ]
    return sorted(pools, key=lambda p: (p.node is not None, p.node or 0, p.page_kib))


def remote_accel_facts(ctx: Context) -> AccelFacts:
    """What :func:`lab.host.accel.choose_accelerator` needs, read on the host over SSH."""
    host = ctx.host
    cpuinfo = host.read_text("/proc/cpuinfo")
    modules = frozenset(m for m in KVM_MODULES if host.exists(f"/sys/module/{m}"))
    stat = host.run(["stat", "-Lc", "%a %G", "/dev/kvm"], check=False)
    exists, usable = stat.ok, False
    if stat.ok:
        mode_text, _, group = stat.stdout.strip().partition(" ")
        mode = int(mode_text, 8)
        usable = mode & 0o006 == 0o006 or (mode & 0o060 == 0o060 and group == "kvm")
    return AccelFacts(cpuinfo, modules, exists, usable)


def chosen_sites(ctx: Context, hosts: str | None) -> list[Site]:
    """``--hosts`` as sites; None means this machine (what `lab up` does by default)."""
    from lab.core.inventory import select_hosts

    return [site_for(ctx, entry) for entry in select_hosts(ctx.config, hosts)]


def sites_up(ctx: Context, hosts: str | None = None) -> list[tuple[Site, LabState]]:
    """The sites among ``--hosts`` (None: every host in the inventory) with a lab up."""
    found = []
    for site in chosen_sites(ctx, "all" if hosts is None else hosts):
        state = site.load_state()
        if state is not None:
            found.append((site, state))
    return found


def add_hosts_argument(parser: object, default: str) -> None:
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    parser.add_argument(
        "--hosts",
        metavar="all|NAME,...",
        help=f"the hosts to act on: 'all', or names from lab.toml's [hosts] and 'local' for"
        f" this machine (default: {default}; see `lab config`)",
    )


def require_up(ctx: Context, hosts: str | None = None) -> list[tuple[Site, LabState]]:
    """:func:`sites_up`, refusing when there is none."""
    up = sites_up(ctx, hosts)
    if not up:
        raise no_lab_up()
    return up


def guests_of(up: list[tuple[Site, LabState]]) -> list[GuestRecord]:
    """Every guest of every site in ``up``, in that order."""
    return [guest for _, state in up for guest in state.guests]
