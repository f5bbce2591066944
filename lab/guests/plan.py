"""From user request to twin guests: variants, host topology, accelerator, CPU plan.

Gathers the host facts through the context (libvirt capabilities, /proc, /sys) and
hands them to the pure builders in :mod:`lab.guests.twins` and :mod:`lab.guests.cpuplan`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lab.core.context import Context
from lab.core.errors import LabError, UsageError
from lab.core.units import parse_size_kib
from lab.domainxml.boot import Boot, KernelBoot
from lab.guests.cpuplan import CPUPlan, plan_cpus
from lab.guests.twins import GUEST_PREFIX, Guest, GuestSettings, build_twins
from lab.guests.variants import get_variant, variants_for
from lab.host.accel import AccelChoice, AccelFacts, choose_accelerator, read_accel_facts
from lab.host.topology import Cell, HostCPU, Topology, parse_capabilities

# Serial console for logs and `lab console`; no need to probe absent hardware.
DEFAULT_CMDLINE = "root=/dev/vda rw console=ttyS0 quiet"


@dataclass(frozen=True)
class TwinRequest:
    variants: list[str]
    vcpus: int
    memory: str
    reserve_host_cpus: int


@dataclass(frozen=True)
class Twins:
    guests: list[Guest]
    plan: CPUPlan
    accel: AccelChoice
    topology: Topology


def host_topology(ctx: Context) -> Topology:
    """The host's topology from libvirt; without libvirtd, a flat one from os.cpu_count()."""
    try:
        return parse_capabilities(ctx.libvirt.getCapabilities())
    except ModuleNotFoundError:
        # the analysis install (no host extra): `lab xml` only writes XML, and plans as here
        reason = "libvirt-python is not installed (pip install './[host]' adds it)"
    except LabError as err:
        reason = err.message
    ctx.note(f"{reason}; planning on a single NUMA node of {os.cpu_count()} CPUs")
    cpus = tuple(
        HostCPU(id=i, node=0, socket=0, core=i, siblings=(i,)) for i in range(os.cpu_count() or 1)
    )
    return Topology(arch="x86_64", cpu_features=frozenset(), cells=(Cell(0, 0, cpus),))


def default_boot(ctx: Context) -> Boot:
    """Kernel boot from the configured image; its manifest knows the exact files."""
    image_dir = Path(ctx.config.image_dir) / ctx.config.image
    return KernelBoot(
        kernel=str(image_dir / "vmlinuz"),
        initrd=str(image_dir / "initrd.img"),
        cmdline=DEFAULT_CMDLINE,
    )


def plan_twins(
    ctx: Context,
    request: TwinRequest,
    boot: Boot | None = None,
    topology: Topology | None = None,
    accel_facts: AccelFacts | None = None,
    prefix: str = GUEST_PREFIX,
) -> Twins:
    """The twins for ``request`` on the host of ``ctx``; ``accel_facts`` read off another
    host (default: this machine's)."""
    variants = variants_for(ctx.config)
    chosen = [get_variant(name, variants) for name in request.variants]
    if request.vcpus < 1:
        raise UsageError(f"--vcpus must be 1 or more, not {request.vcpus}")
    topology = topology or host_topology(ctx)
    accel = choose_accelerator(accel_facts or read_accel_facts(), ctx.config.accelerator)
    plan = plan_cpus(topology, len(chosen), request.vcpus, request.reserve_host_cpus)
    settings = GuestSettings(
        vcpus=request.vcpus,
        memory_kib=parse_size_kib(request.memory),
        accelerator=accel.accelerator,
        # On KVM the host's own CPU; under TCG qemu64, or all QEMU emulates when asked.
        cpu_mode=tcg_cpu_mode(ctx.config.tcg_cpu) if accel.is_tcg else "host-passthrough",
        boot=boot or default_boot(ctx),
        network=ctx.config.network,
        state_dir=Path(ctx.config.state_dir),
        prefix=prefix,
    )
    return Twins(build_twins(chosen, settings, plan), plan, accel, topology)


def tcg_cpu_mode(setting: str) -> str | None:
    """The ``<cpu mode=...>`` for a TCG guest: None leaves QEMU's default model."""
    return "maximum" if setting == "maximum" else None


def request_from(args: object, ctx: Context, variants: list[str]) -> TwinRequest:
    vcpus = getattr(args, "vcpus", None)
    memory = getattr(args, "memory", None)
    reserve = getattr(args, "reserve_host_cpus", None)
    return TwinRequest(
        variants=variants,
        vcpus=vcpus if vcpus is not None else ctx.config.vcpus,
        memory=memory if memory is not None else ctx.config.memory,
        reserve_host_cpus=reserve if reserve is not None else ctx.config.reserve_host_cpus,
    )
