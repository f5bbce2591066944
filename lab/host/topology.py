"""The host as libvirt describes it: NUMA cells, their CPUs, memory and huge page pools.

Parsed from ``virsh capabilities`` / ``virConnect.getCapabilities()`` text, so it is
tested on real captured output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from lab.core.units import parse_cpuset


@dataclass(frozen=True)
class HostCPU:
    id: int
    node: int
    socket: int
    core: int
    siblings: tuple[int, ...]


@dataclass(frozen=True)
class Cell:
    id: int
    memory_kib: int
    cpus: tuple[HostCPU, ...]
    pages: dict[int, int] = field(default_factory=dict)  # page size KiB -> pages in pool


@dataclass(frozen=True)
class Topology:
    arch: str
    cpu_features: frozenset[str]
    cells: tuple[Cell, ...]

    @property
    def cpus(self) -> list[HostCPU]:
        return [cpu for cell in self.cells for cpu in cell.cpus]


def parse_capabilities(xml: str) -> Topology:
    """Read the host part of libvirt's capabilities XML."""
    root = etree.fromstring(xml.encode())
    host = root.find("host")
    if host is None:
        raise ValueError("capabilities XML has no <host>")
    arch = host.findtext("cpu/arch", default="")
    features = frozenset(f.get("name", "") for f in host.findall("cpu/feature"))
    cells = []
    for cell in host.findall("topology/cells/cell"):
        cell_id = int(cell.get("id", "0"))
        cpus = tuple(
            HostCPU(
                id=int(cpu.get("id", "0")),
                node=cell_id,
                socket=int(cpu.get("socket_id", "0")),
                core=int(cpu.get("core_id", "0")),
                siblings=_cpu_list(cpu.get("siblings") or cpu.get("id") or "0"),
            )
            for cpu in cell.findall("cpus/cpu")
        )
        pages = {int(p.get("size", "0")): int(p.text or 0) for p in cell.findall("pages")}
        memory = int(cell.findtext("memory", default="0"))
        cells.append(Cell(id=cell_id, memory_kib=memory, cpus=cpus, pages=pages))
    return Topology(arch=arch, cpu_features=features, cells=tuple(cells))


def _cpu_list(text: str) -> tuple[int, ...]:
    return tuple(parse_cpuset(text))
