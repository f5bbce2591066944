"""``<cputune>``: where each vCPU and the emulator threads may run on the host."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from lab.core.units import format_cpuset, parse_cpuset


@dataclass(frozen=True)
class CPUTune:
    """One host CPU set per vCPU (index = vCPU number) and one for the emulator."""

    vcpupins: tuple[tuple[int, ...], ...]
    emulatorpin: tuple[int, ...] = ()

    def to_xml(self) -> etree._Element:
        root = etree.Element("cputune")
        for vcpu, cpus in enumerate(self.vcpupins):
            pin = etree.SubElement(root, "vcpupin")
            pin.set("vcpu", str(vcpu))
            pin.set("cpuset", format_cpuset(cpus))
        if self.emulatorpin:
            etree.SubElement(root, "emulatorpin").set("cpuset", format_cpuset(self.emulatorpin))
        return root

    @classmethod
    def from_domain(cls, domain: etree._Element) -> CPUTune | None:
        node = domain.find("cputune")
        if node is None:
            return None
        pins = {
            int(pin.get("vcpu", "-1")): tuple(parse_cpuset(pin.get("cpuset", "")))
            for pin in node.findall("vcpupin")
        }
        ordered = tuple(pins[i] for i in sorted(pins))
        emulator = node.find("emulatorpin")
        emulator_cpus = (
            tuple(parse_cpuset(emulator.get("cpuset", ""))) if emulator is not None else ()
        )
        return cls(vcpupins=ordered, emulatorpin=emulator_cpus)
