"""Static huge page pools: whether the twins' needs fit, and reserving pages per node.

The kernel may hand out fewer pages than asked (memory too fragmented for 1 GiB pages),
so every reservation is read back; a shortfall is an error that says what was asked,
what was given and what to try next.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.core.errors import RequirementError
from lab.core.hostexec import Host
from lab.core.units import format_kib
from lab.host.facts import Pool, numa_nodes


@dataclass(frozen=True)
class HugePageNeed:
    """``count`` free huge pages of ``page_kib`` on host NUMA node ``node``."""

    page_kib: int
    count: int
    node: int

    def describe(self) -> str:
        return f"{self.count} free {format_kib(self.page_kib)}B huge page(s) on node {self.node}"


Needs = Sequence[HugePageNeed] | Mapping[str, Sequence[HugePageNeed]]


def size_text(page_kib: int) -> str:
    """``1048576`` -> ``1 GiB``, ``2048`` -> ``2 MiB``."""
    text = format_kib(page_kib)
    return f"{text[:-1]} {text[-1]}iB" if text[-1] in "KMGT" else f"{text} KiB"


def option_text(page_kib: int) -> str:
    """How ``--hugepages`` writes a page size: ``1G``, ``2M``."""
    return format_kib(page_kib)


def check_needs(needs: Needs, pools: list[Pool], host: str | None = None) -> list[str]:
    """Problems that stop guests with ``needs`` from starting, as sentences with a fix.

    ``needs`` is a list, or a mapping from the variant (or guest) that needs them to its
    list, which names it in the message: "shp1g needs 1 free 1 GiB page on node 0; 0 free.
    Run: lab host prepare --hugepages 1G:1". Needs of several guests on one node add up.
    ``host`` names another host: its command gets ``--hosts HOST``.
    """
    named: Mapping[str, Sequence[HugePageNeed]] = (
        needs if isinstance(needs, Mapping) else {"the guests": list(needs)}
    )
    wanted: dict[tuple[int, int], int] = defaultdict(int)
    who: dict[tuple[int, int], list[str]] = defaultdict(list)
    for name, items in named.items():
        for need in items:
            key = (need.node, need.page_kib)
            wanted[key] += need.count
            if name not in who[key]:
                who[key].append(name)
    nodes = numa_nodes(pools)
    problems = []
    for (node, page_kib), count in sorted(wanted.items()):
        pool = _pool_for(pools, node, page_kib, per_node=bool(nodes))
        size = size_text(page_kib)
        names = " and ".join(who[(node, page_kib)])
        verb = "need" if len(who[(node, page_kib)]) > 1 or names == "the guests" else "needs"
        if pool is None:
            problems.append(
                f"{names} {verb} {size} huge pages on node {node}; this host has no {size} pool"
                + (" (the CPU lacks pdpe1gb)" if page_kib == 1024**2 else "")
                + ". Use a variant with another page size (see `lab variants`)"
            )
            continue
        if pool.free >= count:
            continue
        total = pool.used + count
        target = f"{option_text(page_kib)}:{total}" + (f"@{node}" if len(nodes) > 1 else "")
        problems.append(
            f"{names} {verb} {count} free {size} page{'s' if count != 1 else ''} on node {node};"
            f" {pool.free} free. Run: lab host prepare --hugepages {target}"
            + (f" --hosts {host}" if host else "")
        )
    return problems


def _pool_for(pools: list[Pool], node: int, page_kib: int, per_node: bool) -> Pool | None:
    for pool in pools:
        if pool.page_kib == page_kib and (pool.node == node if per_node else pool.node is None):
            return pool
    return None


def pool_file(sysfs_root: Path, page_kib: int, node: int | None) -> Path:
    """The ``nr_hugepages`` file of one pool (global when ``node`` is None)."""
    leaf = Path(f"hugepages-{page_kib}kB") / "nr_hugepages"
    if node is None:
        return sysfs_root / "kernel/mm/hugepages" / leaf
    return sysfs_root / f"devices/system/node/node{node}/hugepages" / leaf


def read_count(host: Host, path: Path) -> int:
    return int(host.read_text(path).strip() or 0)


def reserve(
    host: Host,
    sysfs_root: Path,
    page_kib: int,
    count: int,
    node: int | None,
    proc_root: Path = Path("/proc"),
) -> int:
    """Set the pool of ``page_kib`` pages on ``node`` to ``count`` pages; returns the count
    it had before. Reads the count back; fewer than asked restores the old count and raises.
    """
    path = pool_file(sysfs_root, page_kib, node)
    if not host.exists(path):
        raise RequirementError(
            f"this host has no {size_text(page_kib)} huge page pool ({path} is missing)",
            hint="1 GiB pages need the CPU flag pdpe1gb; try another size, e.g. 2M:512",
        )
    before = read_count(host, path)
    if before == count:
        return before
    host.write_text(path, f"{count}\n")
    got = read_count(host, path)
    if got < count:
        # Compaction often frees the contiguous memory a 1 GiB page needs; try once more.
        compact = proc_root / "sys/vm/compact_memory"
        if host.exists(compact):
            host.write_text(compact, "1\n")
            host.write_text(path, f"{count}\n")
            got = read_count(host, path)
    if got < count:
        host.write_text(path, f"{before}\n")
        where = f"node {node}" if node is not None else "the host"
        raise RequirementError(
            f"asked the kernel for {count} {size_text(page_kib)} huge pages on {where} and got"
            f" {got}",
            hint="Free memory (stop other guests, `sync; echo 3 > /proc/sys/vm/drop_caches`) and"
            " retry, ask for fewer, or reserve them at boot with the kernel parameters"
            f" hugepagesz={option_text(page_kib)} hugepages={count}",
        )
    return before
