"""``<numatune>``: which host NUMA node(s) guest memory comes from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lxml import etree


@dataclass(frozen=True)
class NUMATune:
    XPATH: ClassVar[str] = "/domain/numatune"

    nodeset: str
    mode: str = "strict"

    def to_xml(self) -> etree._Element:
        root = etree.Element("numatune")
        memory = etree.SubElement(root, "memory")
        memory.set("mode", self.mode)
        memory.set("nodeset", self.nodeset)
        return root

    @classmethod
    def from_domain(cls, domain: etree._Element) -> NUMATune | None:
        memory = domain.find("numatune/memory")
        if memory is None:
            return None
        return cls(nodeset=memory.get("nodeset", ""), mode=memory.get("mode", "strict"))
