"""Pure parsers of what the host (and a guest) says about itself.

Each takes the text (or the root of a sysfs tree) as a parameter, so every one is tested
on files captured from real machines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from lab.core.errors import UsageError
from lab.core.units import parse_size_kib

_MEMINFO = re.compile(r"^([A-Za-z0-9_()]+):\s+(\d+)(?:\s+kB)?\s*$")
_POOL_DIR = re.compile(r"^hugepages-(\d+)kB$")


def parse_meminfo(text: str) -> dict[str, int]:
    """``/proc/meminfo`` as numbers: sizes in KiB, ``HugePages_*`` as page counts."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = _MEMINFO.match(line)
        if match:
            values[match.group(1)] = int(match.group(2))
    return values


@dataclass(frozen=True)
class Pool:
    """One huge page pool: global (``node`` None) or of one NUMA node."""

    node: int | None
    page_kib: int
    total: int
    free: int
    surplus: int

    @property
    def used(self) -> int:
        return self.total - self.free


def read_hugepage_pools(sysfs_root: Path) -> list[Pool]:
    """Every pool under ``kernel/mm/hugepages`` and ``devices/system/node/node*/hugepages``.

    ``sysfs_root`` is ``/sys`` on a real host, a fake tree in tests. Global pools come first
    (node None), then per node in node order, each sorted by page size.
    """
    pools = _read_pools(sysfs_root / "kernel/mm/hugepages", None)
    nodes = sorted(
        (int(d.name[4:]), d)
        for d in (sysfs_root / "devices/system/node").glob("node*")
        if d.name[4:].isdigit()
    )
    for node, directory in nodes:
        pools.extend(_read_pools(directory / "hugepages", node))
    return pools


def _read_pools(directory: Path, node: int | None) -> list[Pool]:
    found = []
    if not directory.is_dir():
        return []
    for pool_dir in directory.iterdir():
        match = _POOL_DIR.match(pool_dir.name)
        if not match:
            continue

        def number(name: str, pool_dir: Path = pool_dir) -> int:
            try:
                return int((pool_dir / name).read_text().strip() or 0)
            except (OSError, ValueError):
                return 0

        found.append(
            Pool(
                node=node,
                page_kib=int(match.group(1)),
                total=number("nr_hugepages"),
                free=number("free_hugepages"),
                surplus=number("surplus_hugepages"),
            )
        )
    return sorted(found, key=lambda p: p.page_kib)


def pool_sizes(pools: list[Pool]) -> list[int]:
    """Page sizes (KiB) the host supports, from the global pools."""
    return sorted({p.page_kib for p in pools if p.node is None})


def numa_nodes(pools: list[Pool]) -> list[int]:
    """The NUMA nodes that have per-node pools (empty on hosts without node directories)."""
    return sorted({p.node for p in pools if p.node is not None})


def parse_thp_mode(text: str) -> str:
    """The selected mode of a THP sysfs file: ``always [madvise] never`` -> ``madvise``."""
    match = re.search(r"\[([^\]]+)\]", text)
    if not match:
        raise ValueError(f"no [selected] mode in {text.strip()!r}")
    return match.group(1)


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    fstype: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def page_kib(self) -> int | None:
        """For hugetlbfs: the page size it serves (``pagesize=1024M`` -> 1048576)."""
        size = self.options.get("pagesize")
        return parse_size_kib(size) if size else None


def parse_mounts(text: str) -> list[Mount]:
    """``/proc/mounts`` (or ``/proc/self/mounts``) lines as :class:`Mount` records."""
    mounts = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        options = {}
        for option in parts[3].split(","):
            name, _, value = option.partition("=")
            options[name] = value
        target = parts[1].replace("\\040", " ")
        mounts.append(Mount(source=parts[0], target=target, fstype=parts[2], options=options))
    return mounts


def hugetlbfs_mounts(mounts: list[Mount]) -> dict[int, list[str]]:
    """Page size (KiB) -> the hugetlbfs mount points serving it."""
    found: dict[int, list[str]] = {}
    for mount in mounts:
        if mount.fstype == "hugetlbfs" and mount.page_kib:
            found.setdefault(mount.page_kib, []).append(mount.target)
    return found


_CONF_HUGETLBFS = re.compile(r"^\s*hugetlbfs_mount\s*=\s*(.*)$")


def parse_qemu_conf_hugetlbfs(text: str) -> list[str]:
    """The active ``hugetlbfs_mount`` of libvirt's ``qemu.conf`` (a string or a list).

    The last assignment wins, as in libvirt; commented lines are ignored.
    """
    result: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _CONF_HUGETLBFS.match(lines[i])
        i += 1
        if not match:
            continue
        value = _strip_comment(match.group(1))
        if value.startswith("["):  # a list may continue over several lines
            while "]" not in value and i < len(lines):
                value += " " + _strip_comment(lines[i])
                i += 1
        result = re.findall(r'"([^"]*)"', value)
    return result


def _strip_comment(text: str) -> str:
    out, quoted = [], False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "#" and not quoted:
            break
        out.append(char)
    return "".join(out).strip()


_COUNT = re.compile(r"[0-9]{1,9}", re.ASCII)


def parse_hugepages_option(text: str) -> list[tuple[int, int, int | None]]:
    """``1G:2,2M:0`` (``SIZE:COUNT[@NODE]``) -> [(page_kib, count, node or None)]."""
    wanted = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        size, sep, rest = item.partition(":")
        count, at, node = rest.partition("@")
        # ASCII digits only: str.isdigit() also takes '²', which int() refuses.
        if not sep or not _COUNT.fullmatch(count) or (at and not _COUNT.fullmatch(node)):
            raise UsageError(
                f"cannot read huge page request {item!r}",
                hint="Write SIZE:COUNT[@NODE], e.g. --hugepages 1G:2,2M:0",
            )
        wanted.append((parse_size_kib(size), int(count), int(node) if at else None))
    return wanted


def parse_proc_filesystems(text: str) -> set[str]:
    """File system types the running kernel knows (``/proc/filesystems``)."""
    return {line.split()[-1] for line in text.splitlines() if line.split()}
