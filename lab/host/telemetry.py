"""What the kernel says about huge pages: the supply of free 2 MiB blocks, THP faults, and a
process's transparent huge pages, read from /proc.

Pure parsers take the text of a /proc file; :class:`HostTelemetry` reads each file once
through the lab's :class:`~lab.core.hostexec.Host`, so it works on fakes and remote hosts.

The unusable free space index (Gorman and Whitcroft, "The what, the why and the where to of
anti-fragmentation", OLS 2006) at order ``j`` is the share of free memory that cannot serve
an allocation of ``2**j`` pages: ``Fu(j) = (TotalFree - sum_{i>=j} 2**i * k_i) / TotalFree``
with ``k_i`` the free blocks of order ``i`` in /proc/buddyinfo. The lab sums every zone of
every node (DMA, DMA32, Normal, Movable): a THP fault that finds no order-9 block in Normal
falls back to DMA32, so its free 2 MiB blocks are part of THP's supply. Order 9 is a 2 MiB
block with 4 KiB pages (x86-64).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.core.hostexec import Host

THP_ORDER = 9  # 2 MiB of 4 KiB pages
PAGE_BYTES = 4096


@dataclass(frozen=True)
class ZoneFree:
    """One line of /proc/buddyinfo: a zone's count of free blocks at each order."""

    node: int
    zone: str
    blocks: tuple[int, ...]  # blocks[i]: free blocks of 2**i pages

    @property
    def free_pages(self) -> int:
        return sum(count << order for order, count in enumerate(self.blocks))

    def free_pages_from(self, order: int) -> int:
        """Free pages in blocks of ``order`` or larger: what can serve such an allocation."""
        return sum(count << i for i, count in enumerate(self.blocks) if i >= order)


@dataclass(frozen=True)
class FreeSpace:
    """Free memory as the buddy allocator holds it, summed over zones."""

    free_pages: int
    usable_pages: int  # in blocks of the order asked for, or larger
    order: int

    @property
    def unusable_index(self) -> float:
        """Fu(order): 0 when every free page can serve the order, 1 when none can."""
        if self.free_pages == 0:
            return 0.0  # nothing free: nothing unusable either (the kernel's convention)
        return (self.free_pages - self.usable_pages) / self.free_pages

    @property
    def free_bytes(self) -> int:
        return self.free_pages * PAGE_BYTES

    @property
    def unusable_bytes(self) -> int:
        return (self.free_pages - self.usable_pages) * PAGE_BYTES


def parse_buddyinfo(text: str) -> list[ZoneFree]:
    """``Node 0, zone   Normal  5851 24873 ...`` lines into :class:`ZoneFree` records."""
    zones = []
    for line in text.splitlines():
        head, sep, counts = line.partition("zone")
        if not sep or not head.startswith("Node"):
            continue
        node = int(head.removeprefix("Node").strip().rstrip(","))
        name, *numbers = counts.split()
        zones.append(ZoneFree(node, name, tuple(int(n) for n in numbers)))
    return zones


def free_space(zones: list[ZoneFree], order: int = THP_ORDER) -> FreeSpace:
    return FreeSpace(
        sum(z.free_pages for z in zones), sum(z.free_pages_from(order) for z in zones), order
    )


def unusable_index(buddyinfo: str, order: int = THP_ORDER) -> float:
    """The unusable free space index at ``order`` over every zone of ``buddyinfo``'s text."""
    return free_space(parse_buddyinfo(buddyinfo), order).unusable_index


@dataclass(frozen=True)
class PerCpuPages:
    """Free pages the per-CPU lists hold (/proc/zoneinfo's pagesets), summed over zones and
    CPUs. /proc/buddyinfo does not count them: pages just freed wait there, up to
    ``high`` (auto-tuned, up to ~1 GiB a CPU on a 24 GB host) and drain to the buddy lists
    at most ``batch << 5`` pages a second a CPU."""

    count: int
    high_min: int


def per_cpu_pages(zoneinfo: str) -> PerCpuPages:
    count = high_min = 0
    for line in zoneinfo.splitlines():
        name, _, value = line.strip().partition(":")
        if name == "count":
            count += int(value)
        elif name == "high_min":
            high_min += int(value)
    return PerCpuPages(count, high_min)


def parse_vmstat(text: str) -> dict[str, int]:
    counters = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name and value.strip().lstrip("-").isdigit():
            counters[name] = int(value)
    return counters


@dataclass(frozen=True)
class ThpCounters:
    """/proc/vmstat's THP fault counters and every compact_* counter (cumulative since boot;
    a run's figures are the difference of two readings)."""

    fault_alloc: int
    fault_fallback: int
    compact: dict[str, int]

    def since(self, before: ThpCounters) -> ThpCounters:
        return ThpCounters(
            self.fault_alloc - before.fault_alloc,
            self.fault_fallback - before.fault_fallback,
            {k: v - before.compact.get(k, 0) for k, v in self.compact.items()},
        )


def thp_counters(vmstat: str) -> ThpCounters:
    counters = parse_vmstat(vmstat)
    return ThpCounters(
        counters.get("thp_fault_alloc", 0),
        counters.get("thp_fault_fallback", 0),
        {k: v for k, v in counters.items() if k.startswith("compact_")},
    )


def smaps_kib(text: str, field: str = "AnonHugePages") -> int:
    """``field`` summed over the ``Field:  N kB`` lines of smaps or smaps_rollup text."""
    total = 0
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name == field:
            total += int(value.split()[0])
    return total


@dataclass(frozen=True)
class HostTelemetry:
    """The readers above over one host's /proc, one read of a file each."""

    host: Host
    proc: Path = Path("/proc")

    def free_space(self, order: int = THP_ORDER) -> FreeSpace:
        return free_space(parse_buddyinfo(self.host.read_text(self.proc / "buddyinfo")), order)

    def unusable_index(self, order: int = THP_ORDER) -> float:
        return self.free_space(order).unusable_index

    def per_cpu_pages(self) -> PerCpuPages:
        return per_cpu_pages(self.host.read_text(self.proc / "zoneinfo"))

    def thp_counters(self) -> ThpCounters:
        return thp_counters(self.host.read_text(self.proc / "vmstat"))

    def anon_huge_kib(self, pid: int) -> int:
        """A process's (a QEMU's) anonymous memory mapped by transparent huge pages, KiB."""
        return smaps_kib(self.host.read_text(self.proc / str(pid) / "smaps_rollup"))
