"""``<os>``: direct kernel boot (the lab's own image) or boot from the disk (imported images)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from lxml import etree


@dataclass(frozen=True)
class KernelBoot:
    """Boot a kernel and initrd from host files; no bootloader inside the image."""

    CMDLINE_XPATH: ClassVar[str] = "/domain/os/cmdline"

    kernel: str
    initrd: str
    cmdline: str

    def with_args(self, *args: str) -> KernelBoot:
        """This boot with ``args`` added to the kernel command line, each one word; an
        argument already there is not repeated."""
        words = self.cmdline.split()
        for arg in args:
            if not arg or any(c.isspace() for c in arg):
                raise ValueError(f"a kernel argument is one word, not {arg!r}")
            if arg not in words:
                words.append(arg)
        return replace(self, cmdline=" ".join(words))

    def to_xml(self) -> etree._Element:
        root = _os_element()
        etree.SubElement(root, "kernel").text = self.kernel
        etree.SubElement(root, "initrd").text = self.initrd
        etree.SubElement(root, "cmdline").text = self.cmdline
        return root


@dataclass(frozen=True)
class DiskBoot:
    """Boot the first disk's own bootloader (a user's imported cloud image)."""

    def to_xml(self) -> etree._Element:
        root = _os_element()
        etree.SubElement(root, "boot").set("dev", "hd")
        return root


Boot = KernelBoot | DiskBoot


def _os_element() -> etree._Element:
    root = etree.Element("os")
    ostype = etree.SubElement(root, "type")
    ostype.set("arch", "x86_64")
    ostype.text = "hvm"
    return root
