"""The devices a lab guest has: its disk, the seed CD-ROM, one NIC, a logged serial console."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree


@dataclass(frozen=True)
class Disk:
    """The guest's system disk: a qcow2 linked clone, host page cache bypassed."""

    path: str
    target: str = "vda"
    format: str = "qcow2"
    cache: str = "none"

    def to_xml(self) -> etree._Element:
        disk = etree.Element("disk", type="file", device="disk")
        etree.SubElement(disk, "driver", name="qemu", type=self.format, cache=self.cache)
        etree.SubElement(disk, "source", file=self.path)
        etree.SubElement(disk, "target", dev=self.target, bus="virtio")
        return disk


@dataclass(frozen=True)
class SeedCDROM:
    """The cloud-init NoCloud seed (ISO9660 labelled ``cidata``), read-only."""

    path: str
    target: str = "hdc"

    def to_xml(self) -> etree._Element:
        disk = etree.Element("disk", type="file", device="cdrom")
        etree.SubElement(disk, "driver", name="qemu", type="raw")
        etree.SubElement(disk, "source", file=self.path)
        etree.SubElement(disk, "target", dev=self.target, bus="ide")
        etree.SubElement(disk, "readonly")
        return disk


@dataclass(frozen=True)
class NetworkInterface:
    """One virtio NIC on a named libvirt network."""

    network: str
    mac: str

    def to_xml(self) -> etree._Element:
        nic = etree.Element("interface", type="network")
        etree.SubElement(nic, "mac", address=self.mac)
        etree.SubElement(nic, "source", network=self.network)
        etree.SubElement(nic, "model", type="virtio")
        return nic


@dataclass(frozen=True)
class SerialConsole:
    """A serial port whose output libvirt also appends to a log file on the host."""

    log_path: str

    def to_xml_elements(self) -> list[etree._Element]:
        serial = etree.Element("serial", type="pty")
        etree.SubElement(serial, "log", file=self.log_path, append="on")
        etree.SubElement(serial, "target", port="0")
        console = etree.Element("console", type="pty")
        etree.SubElement(console, "target", type="serial", port="0")
        return [serial, console]
