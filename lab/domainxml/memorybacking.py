"""``<memoryBacking>``: how guest RAM is backed on the host (huge pages or not)."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree


@dataclass(frozen=True)
class HugePages:
    """Back all guest RAM with huge pages of one size.

    ``nodeset`` names *guest* NUMA nodes the page size applies to; None means all.
    """

    page_kib: int
    nodeset: str | None = None


@dataclass(frozen=True)
class MemoryBacking:
    hugepages: HugePages | None = None

    def to_xml(self) -> etree._Element:
        root = etree.Element("memoryBacking")
        if self.hugepages is not None:
            pages = etree.SubElement(root, "hugepages")
            page = etree.SubElement(pages, "page")
            page.set("size", str(self.hugepages.page_kib))
            page.set("unit", "KiB")
            if self.hugepages.nodeset is not None:
                page.set("nodeset", self.hugepages.nodeset)
        return root

    @classmethod
    def from_domain(cls, domain: etree._Element) -> MemoryBacking | None:
        """Read ``<memoryBacking>`` from a parsed domain; None when absent."""
        node = domain.find("memoryBacking")
        if node is None:
            return None
        pages = node.find("hugepages")
        if pages is None:
            return cls()
        page = pages.find("page")
        if page is None:
            # <hugepages/> alone means the host's default huge page size; libvirt
            # expands it when the domain starts, so report it as unknown (0).
            return cls(HugePages(page_kib=0))
        return cls(
            HugePages(
                page_kib=_to_kib(int(page.get("size", "0")), page.get("unit", "KiB")),
                nodeset=page.get("nodeset"),
            )
        )


_UNIT_KIB = {"k": 1, "kib": 1, "m": 1024, "mib": 1024, "g": 1024**2, "gib": 1024**2}


def _to_kib(value: int, unit: str) -> int:
    return value * _UNIT_KIB[unit.lower()]
