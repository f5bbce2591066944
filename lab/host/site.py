"""A host as the lab reaches it: its context (libvirt at its URI, its commands run there),
where this machine keeps its record, and the facts read off it (huge page pools, whether
KVM can run), here through the kernel's files and elsewhere over the host's SSH.

``lab host prepare --hosts`` works with this; bring-up, runs and teardown work with
:class:`lab.guests.sites.Site`, which adds where the host's guests get their files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from lab.core.context import Context
from lab.core.inventory import HostEntry
from lab.host.accel import KVM_MODULES, AccelFacts, kvm_usable, read_accel_facts
from lab.host.facts import Pool, read_hugepage_pools
from lab.host.remote import RemoteHost

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


@dataclass
class HostSite:
    entry: HostEntry
    ctx: Context  # libvirt at the host's URI; host commands run on that host
    state_dir: Path  # on this machine: where the record of its guests is kept

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

    def accel_facts(self) -> AccelFacts:
        if not self.remote:
            return read_accel_facts()
        return remote_accel_facts(self.ctx)

    def hugepage_pools(self) -> list[Pool]:
        if not self.remote:
            return read_hugepage_pools(SYSFS)
        return parse_pool_listing(self.ctx.host.run(["sh", "-c", POOLS_SCRIPT]).stdout)

    def free_pages(self, page_kib: int) -> int:
        return sum(
            p.free for p in self.hugepage_pools() if p.node is None and p.page_kib == page_kib
        )


def host_context(ctx: Context, entry: HostEntry) -> tuple[Context, Path]:
    """The context that acts on ``entry`` (this one for this machine), and where this
    machine keeps that host's record."""
    state_dir = Path(ctx.config.state_dir)
    if entry.ssh is None:
        return ctx, state_dir
    there = replace(
        ctx,
        config=replace(ctx.config, libvirt_uri=entry.uri),
        host=RemoteHost(entry.name, entry.ssh, ctx.host),
    )
    return there, state_dir / "hosts" / entry.name


def host_site(ctx: Context, entry: HostEntry) -> HostSite:
    there, state_dir = host_context(ctx, entry)
    return HostSite(entry, there, state_dir)


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
        usable = kvm_usable(int(mode_text, 8), group)
    return AccelFacts(cpuinfo, modules, exists, usable)
