"""Building the twins: one common base spec per guest, then each guest's variant delta.

Only the guest's identity (name, file paths, MAC) and its CPU placement enter the base
per guest; everything else is shared, which is what ``lab diff`` shows and tests assert.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from lab.core.errors import UsageError
from lab.domainxml.boot import Boot
from lab.domainxml.cputune import CPUTune
from lab.domainxml.devices import Disk, NetworkInterface, SeedCDROM, SerialConsole
from lab.domainxml.domain import DomainSpec
from lab.domainxml.numatune import NUMATune
from lab.guests.cpuplan import CPUPlan, Placement
from lab.guests.variant import Variant
from lab.host.hugepages import HugePageNeed

GUEST_PREFIX = "lab-"


@dataclass(frozen=True)
class GuestSettings:
    """What both twins share."""

    vcpus: int
    memory_kib: int
    accelerator: str
    boot: Boot
    network: str
    state_dir: Path
    cpu_mode: str | None = "host-passthrough"
    prefix: str = GUEST_PREFIX  # lab-HOST- on hosts other than this one (lab.core.inventory)


@dataclass(frozen=True)
class Guest:
    name: str
    variant: Variant
    spec: DomainSpec
    placement: Placement
    needs: tuple[HugePageNeed, ...]

    @property
    def directory(self) -> Path:
        return Path(self.spec.disk.path).parent


def guest_names(variant_names: list[str], prefix: str = GUEST_PREFIX) -> list[str]:
    """``lab-thp``, ``lab-shp1g``; a repeated variant (an A/A test) gets ``-a``, ``-b``."""
    names = []
    for i, variant in enumerate(variant_names):
        suffix = f"-{chr(ord('a') + i)}" if variant_names.count(variant) > 1 else ""
        names.append(f"{prefix}{variant}{suffix}")
    return names


def mac_for(name: str) -> str:
    """A stable, locally administered MAC in QEMU's 52:54:00 range, derived from the name."""
    digest = hashlib.sha256(name.encode()).digest()
    return "52:54:00:" + ":".join(f"{b:02x}" for b in digest[:3])


def base_spec(
    name: str, settings: GuestSettings, placement: Placement, plan: CPUPlan
) -> DomainSpec:
    """The common base of every lab guest; per guest only name, paths, MAC and CPUs vary."""
    directory = settings.state_dir / "guests" / name
    return DomainSpec(
        name=name,
        memory_kib=settings.memory_kib,
        vcpus=settings.vcpus,
        accelerator=settings.accelerator,
        cpu_mode=settings.cpu_mode,
        boot=settings.boot,
        disk=Disk(path=str(directory / "disk.qcow2")),
        seed=SeedCDROM(path=str(directory / "seed.iso")),
        network=NetworkInterface(network=settings.network, mac=mac_for(name)),
        console=SerialConsole(log_path=str(directory / "console.log")),
        cputune=CPUTune(
            vcpupins=tuple((cpu,) for cpu in placement.vcpu_cpus),
            emulatorpin=plan.emulator_cpus,
        ),
        numatune=NUMATune(nodeset=str(placement.node)),
        description="lab guest",
    )


def build_twins(variants: list[Variant], settings: GuestSettings, plan: CPUPlan) -> list[Guest]:
    if len(plan.guests) != len(variants):
        raise UsageError(f"the CPU plan has {len(plan.guests)} places for {len(variants)} guests")
    guests = []
    for name, variant, placement in zip(
        guest_names([v.name for v in variants], settings.prefix), variants, plan.guests, strict=True
    ):
        spec = variant.apply(base_spec(name, settings, placement, plan))
        needs = tuple(variant.needs(spec, placement.node))
        guests.append(
            Guest(name=name, variant=variant, spec=spec, placement=placement, needs=needs)
        )
    return guests
