"""Placing twin guests on host CPUs: disjoint sets, whole cores, one NUMA node each.

The plan is a pure function of the host topology and the request, so it is tested
with tables of topologies (including the real 2-CPU capabilities captured here).
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core.errors import PlanError
from lab.host.topology import HostCPU, Topology


@dataclass(frozen=True)
class Placement:
    """Where one guest runs: host CPU for each vCPU, and its NUMA node."""

    vcpu_cpus: tuple[int, ...]
    node: int


@dataclass(frozen=True)
class CPUPlan:
    guests: tuple[Placement, ...]
    emulator_cpus: tuple[int, ...]  # shared by all guests, so the twins are treated alike
    host_cpus: tuple[int, ...]  # kept free of vCPUs


def plan_cpus(topology: Topology, guests: int, vcpus: int, reserve_host_cpus: int = 1) -> CPUPlan:
    """Give each of ``guests`` guests ``vcpus`` dedicated host CPUs.

    ``reserve_host_cpus`` CPUs (whole cores, from the first) stay for the host and the
    emulator threads. Cores are handed out whole so that hyper-thread siblings serve one
    guest; a guest takes its cores from a single NUMA node when one has room.
    """
    if guests < 1 or vcpus < 1 or reserve_host_cpus < 0:
        raise PlanError("a plan needs at least one guest with one vCPU, and a reserve of 0 or more")
    all_cpus = topology.cpus
    needed = guests * vcpus + reserve_host_cpus
    if needed > len(all_cpus):
        raise PlanError(
            f"{guests} guests x {vcpus} vCPU(s) + {reserve_host_cpus} CPU(s) kept for the host"
            f" = {needed} CPUs, but the host has {len(all_cpus)}",
            hint="Use fewer --vcpus, or --reserve-host-cpus 0 to give every CPU to the guests"
            " (the emulator threads then share the guests' CPUs)",
        )
    cores = _cores(all_cpus)
    host: list[int] = []
    while len(host) < reserve_host_cpus:
        host.extend(cores.pop(0)[1])
    placements = []
    for _ in range(guests):
        chosen = _take(cores, vcpus)
        if chosen is None:
            raise PlanError(
                f"cannot give {guests} guests {vcpus} vCPU(s) each on whole cores:"
                f" {len(all_cpus)} host CPUs, {len(host)} kept for the host",
                hint="Use an even --vcpus on a host with hyper-threads, or fewer --vcpus",
            )
        cpus = sorted(chosen)
        node = next(c.node for c in all_cpus if c.id == cpus[0])
        placements.append(Placement(vcpu_cpus=tuple(cpus[:vcpus]), node=node))
    used = {cpu for p in placements for cpu in p.vcpu_cpus}
    spare = sorted(c.id for c in all_cpus if c.id not in used)
    emulator = spare or sorted(c.id for c in all_cpus)
    return CPUPlan(guests=tuple(placements), emulator_cpus=tuple(emulator), host_cpus=tuple(host))


Core = tuple[int, list[int]]  # (NUMA node, sibling CPU ids)


def _cores(cpus: list[HostCPU]) -> list[Core]:
    """Sibling groups in host order (node, then first CPU id)."""
    seen: set[tuple[int, ...]] = set()
    cores: list[Core] = []
    for cpu in sorted(cpus, key=lambda c: (c.node, c.id)):
        group = tuple(sorted(cpu.siblings)) if cpu.siblings else (cpu.id,)
        if group not in seen:
            seen.add(group)
            cores.append((cpu.node, list(group)))
    return cores


def _take(cores: list[Core], vcpus: int) -> list[int] | None:
    """Remove and return whole cores totalling at least ``vcpus`` CPUs, one node if possible.

    Whole cores may give one CPU more than asked (an odd count on SMT); the caller pins
    the first ``vcpus`` and the spare sibling stays unused rather than shared.
    """
    nodes = sorted({node for node, _ in cores})
    for node in nodes:
        if sum(len(cpus) for n, cpus in cores if n == node) >= vcpus:
            pool = [core for core in cores if core[0] == node]
            break
    else:
        pool = list(cores)
    taken: list[int] = []
    for core in pool:
        if len(taken) >= vcpus:
            break
        cores.remove(core)
        taken.extend(core[1])
    return taken if len(taken) >= vcpus else None
