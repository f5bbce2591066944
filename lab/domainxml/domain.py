"""The whole ``<domain>``: the common base every lab guest shares, plus its parts.

A :class:`DomainSpec` is an immutable value. A variant changes it with
``dataclasses.replace`` (see :mod:`lab.guests.variant`), so the two twins are built from the
same base and differ only where the variant (and the guest's identity) says.
"""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from lab.domainxml.boot import Boot
from lab.domainxml.cputune import CPUTune
from lab.domainxml.devices import Disk, NetworkInterface, SeedCDROM, SerialConsole
from lab.domainxml.memorybacking import MemoryBacking
from lab.domainxml.numatune import NUMATune

ACCELERATORS = ("kvm", "qemu")


@dataclass(frozen=True)
class DomainSpec:
    """Everything the lab decides about one guest's libvirt domain."""

    name: str
    memory_kib: int
    vcpus: int
    accelerator: str  # "kvm" on real hosts, "qemu" (TCG) where KVM cannot run guests
    boot: Boot
    disk: Disk
    network: NetworkInterface
    console: SerialConsole
    seed: SeedCDROM | None = None
    cpu_mode: str | None = "host-passthrough"  # None: the hypervisor's default model
    memory_backing: MemoryBacking | None = None
    cputune: CPUTune | None = None
    numatune: NUMATune | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if self.accelerator not in ACCELERATORS:
            raise ValueError(f"accelerator must be one of {ACCELERATORS}, not {self.accelerator!r}")
        if self.vcpus < 1 or self.memory_kib < 1:
            raise ValueError("a domain needs at least one vCPU and some memory")

    def to_xml(self) -> etree._Element:
        domain = etree.Element("domain", type=self.accelerator)
        etree.SubElement(domain, "name").text = self.name
        if self.description:
            etree.SubElement(domain, "description").text = self.description
        etree.SubElement(domain, "memory", unit="KiB").text = str(self.memory_kib)
        etree.SubElement(domain, "currentMemory", unit="KiB").text = str(self.memory_kib)
        if self.memory_backing is not None:
            domain.append(self.memory_backing.to_xml())
        etree.SubElement(domain, "vcpu", placement="static").text = str(self.vcpus)
        if self.cputune is not None:
            domain.append(self.cputune.to_xml())
        if self.numatune is not None:
            domain.append(self.numatune.to_xml())
        domain.append(self.boot.to_xml())
        features = etree.SubElement(domain, "features")
        etree.SubElement(features, "acpi")
        etree.SubElement(features, "apic")
        if self.cpu_mode is not None:
            etree.SubElement(domain, "cpu", mode=self.cpu_mode)
        etree.SubElement(domain, "clock", offset="utc")
        etree.SubElement(domain, "on_poweroff").text = "destroy"
        etree.SubElement(domain, "on_reboot").text = "restart"
        etree.SubElement(domain, "on_crash").text = "destroy"
        devices = etree.SubElement(domain, "devices")
        devices.append(self.disk.to_xml())
        if self.seed is not None:
            devices.append(self.seed.to_xml())
        devices.append(self.network.to_xml())
        devices.extend(self.console.to_xml_elements())
        etree.SubElement(devices, "memballoon", model="none")
        return domain

    def to_string(self) -> str:
        return etree.tostring(self.to_xml(), pretty_print=True, encoding="unicode")
