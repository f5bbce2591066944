"""Proof that each guest runs as declared, from facts read off the host, libvirt and the
guest itself.

Pure functions over captured text and libvirt's answers, so each check is tested on
real captures; :mod:`lab.guests.bringup` gathers the facts (and the variants' own
``verify()`` the facts they check) and fails `lab up` on a mismatch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from lab.core.units import format_cpuset
from lab.domainxml.cputune import CPUTune
from lab.domainxml.domain import DomainSpec
from lab.domainxml.memorybacking import MemoryBacking
from lab.domainxml.numatune import NUMATune
from lab.host.facts import parse_thp_mode
from lab.host.qemuproc import qemu_memory

GUEST_THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"
THP_MODES = ("always", "madvise", "never")
_KPS = re.compile(r"kernelpagesize_kB=(\d+)")
_NODE_PAGES = re.compile(r"\bN\d+=(\d+)")


@dataclass(frozen=True)
class HugetlbMapping:
    page_kib: int
    pages: int
    path: str


def hugetlb_mappings(numa_maps: str) -> list[HugetlbMapping]:
    """The hugetlbfs-backed mappings of a process, from ``/proc/PID/numa_maps``."""
    out = []
    for line in numa_maps.splitlines():
        fields = line.split()
        if "huge" not in fields:
            continue
        size = _KPS.search(line)
        if not size:
            continue
        path = next((f[5:] for f in fields if f.startswith("file=")), "")
        pages = sum(int(n) for n in _NODE_PAGES.findall(line))
        out.append(HugetlbMapping(page_kib=int(size.group(1)), pages=pages, path=path))
    return out


def cpus_from_bools(mask: tuple[bool, ...] | list[bool]) -> tuple[int, ...]:
    return tuple(i for i, on in enumerate(mask) if on)


def check_pinning(
    name: str,
    planned_vcpus: tuple[int, ...],
    planned_emulator: tuple[int, ...],
    vcpu_pin_info: list[tuple[bool, ...]] | tuple[tuple[bool, ...], ...],
    emulator_pin_info: tuple[bool, ...] | list[bool],
) -> list[str]:
    """Problems with the pinning libvirt reports for a running guest (empty: as planned)."""
    problems = []
    if len(vcpu_pin_info) != len(planned_vcpus):
        problems.append(f"{name}: {len(vcpu_pin_info)} vCPUs running, {len(planned_vcpus)} planned")
    for vcpu, (mask, cpu) in enumerate(zip(vcpu_pin_info, planned_vcpus, strict=False)):
        actual = cpus_from_bools(mask)
        if actual != (cpu,):
            problems.append(
                f"{name}: vCPU {vcpu} may run on host CPUs {format_cpuset(actual)}, planned {cpu}"
            )
    emulator = cpus_from_bools(emulator_pin_info)
    if emulator != tuple(sorted(planned_emulator)):
        problems.append(
            f"{name}: emulator threads on {format_cpuset(emulator)},"
            f" planned {format_cpuset(planned_emulator)}"
        )
    return problems


def check_backing(
    name: str, page_kib: int | None, memory_kib: int, mappings: list[HugetlbMapping]
) -> list[str]:
    """Problems with how guest RAM is backed: huge pages of the declared size, or none."""
    if page_kib is None:
        if mappings:
            return [
                f"{name}: declared without huge pages, but QEMU maps hugetlbfs"
                f" ({', '.join(m.path for m in mappings)})"
            ]
        return []
    matching = [m for m in mappings if m.page_kib == page_kib]
    backed = sum(m.page_kib * m.pages for m in matching)
    if not matching:
        sizes = sorted({m.page_kib for m in mappings}) or "none"
        return [f"{name}: declared {page_kib} KiB huge pages, QEMU maps hugetlbfs pages of {sizes}"]
    if backed < memory_kib:
        return [f"{name}: only {backed} KiB of {memory_kib} KiB guest RAM is on huge pages"]
    return []


def check_pool_drop(page_kib: int, expected: int, free_before: int, free_after: int) -> list[str]:
    """The host's free huge pages must drop by exactly what the guests took."""
    if free_before - free_after != expected:
        return [
            f"host free {page_kib} KiB pages went {free_before} -> {free_after};"
            f" the guests should have taken {expected}"
        ]
    return []


def check_live_domain(name: str, live_xml: str, declared: DomainSpec) -> list[str]:
    """Problems where the running domain, as libvirt holds it, lost or changed what the lab
    declared: its memory backing, CPU pinning and NUMA policy, each read back from the
    live XML with the same model that wrote it."""
    domain = etree.fromstring(live_xml.encode())
    parts = (
        ("memory backing", declared.memory_backing, MemoryBacking.from_domain(domain)),
        ("CPU pinning", declared.cputune, CPUTune.from_domain(domain)),
        ("NUMA policy", declared.numatune, NUMATune.from_domain(domain)),
    )
    return [
        f"{name}: libvirt runs it with {what} {live}, declared {wanted}"
        for what, wanted, live in parts
        if live != wanted
    ]


def check_guest_thp(name: str, mode: str, enabled: str) -> list[str]:
    """Problems with the THP mode a guest's kernel runs in, from its sysfs ``enabled`` file
    (``always madvise [never]``)."""
    try:
        running = parse_thp_mode(enabled)
    except ValueError as err:
        return [f"{name}: cannot tell its kernel's THP mode: {err}"]
    if running != mode:
        said = enabled.strip()
        return [f"{name}: its kernel runs THP in mode {running!r} ({said}), declared {mode!r}"]
    return []


def check_preallocated(name: str, memory_kib: int, smaps: str) -> list[str]:
    """Problems with a guest declared preallocated: right after boot its QEMU process must
    already hold all guest RAM (``Rss``, plus hugetlb pages, which smaps counts apart; less
    TCG's translation buffer, see ``qemu_memory``), where a guest that faults its RAM in holds
    only what it touched while booting."""
    fields = qemu_memory(smaps)
    held = fields.get("Rss", 0) + fields.get("Shared_Hugetlb", 0) + fields.get("Private_Hugetlb", 0)
    if held < memory_kib:
        return [
            f"{name}: declared preallocated, but its QEMU holds {held} KiB of its"
            f" {memory_kib} KiB of RAM"
        ]
    return []
