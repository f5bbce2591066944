"""``<memoryBacking>``: how guest RAM is backed on the host (huge pages or not), and when
it is allocated (all of it as QEMU starts, or as the guest first touches it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lxml import etree


@dataclass(frozen=True)
class HugePages:
    """Back all guest RAM with huge pages of one size.

    ``nodeset`` names *guest* NUMA nodes the page size applies to; None means all.
    """

    page_kib: int
    nodeset: str | None = None


ALLOCATION_MODES = ("immediate", "ondemand")


@dataclass(frozen=True)
class MemoryBacking:
    """``allocation``: 'immediate' preallocates all guest RAM when QEMU starts, 'ondemand'
    faults it in as the guest touches it; None leaves libvirt's default (which
    preallocates hugetlb-backed RAM and faults the rest in)."""

    XPATH: ClassVar[str] = "/domain/memoryBacking"
    ALLOCATION_XPATH: ClassVar[str] = "/domain/memoryBacking/allocation"

    hugepages: HugePages | None = None
    allocation: str | None = None

    def __post_init__(self) -> None:
        if self.allocation is not None and self.allocation not in ALLOCATION_MODES:
            raise ValueError(
                f"allocation must be one of {ALLOCATION_MODES}, not {self.allocation!r}"
            )

    def to_xml(self) -> etree._Element:
        root = etree.Element("memoryBacking")
        if self.hugepages is not None:
            pages = etree.SubElement(root, "hugepages")
            page = etree.SubElement(pages, "page")
            page.set("size", str(self.hugepages.page_kib))
            page.set("unit", "KiB")
            if self.hugepages.nodeset is not None:
                page.set("nodeset", self.hugepages.nodeset)
        if self.allocation is not None:
            etree.SubElement(root, "allocation").set("mode", self.allocation)
        return root

    @classmethod
    def from_domain(cls, domain: etree._Element) -> MemoryBacking | None:
        """Read ``<memoryBacking>`` from a parsed domain; None when absent."""
        node = domain.find("memoryBacking")
        if node is None:
            return None
        allocation = node.find("allocation")
        mode = allocation.get("mode") if allocation is not None else None
        pages = node.find("hugepages")
        if pages is None:
            return cls(allocation=mode)
        page = pages.find("page")
        if page is None:
            # <hugepages/> alone means the host's default huge page size; libvirt
            # expands it when the domain starts, so report it as unknown (0).
            return cls(HugePages(page_kib=0), allocation=mode)
        return cls(
            HugePages(
                page_kib=_to_kib(int(page.get("size", "0")), page.get("unit", "KiB")),
                nodeset=page.get("nodeset"),
            ),
            allocation=mode,
        )


_UNIT_KIB = {"k": 1, "kib": 1, "m": 1024, "mib": 1024, "g": 1024**2, "gib": 1024**2}


def _to_kib(value: int, unit: str) -> int:
    return value * _UNIT_KIB[unit.lower()]
