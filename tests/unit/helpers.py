"""Topologies and settings for unit tests of the domain model and planner, and a small real
store of twins for the tests of the commands that read one."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lab.domainxml.boot import KernelBoot
from lab.guests.twins import GuestSettings
from lab.host.topology import Cell, HostCPU, Topology
from lab.store import IterationRecord, MetricInfo, Store

FIXTURES = Path(__file__).parent.parent / "fixtures"


def topology(nodes: int, cores_per_node: int, threads: int = 1) -> Topology:
    """A host with ``nodes`` NUMA nodes; sibling CPU ids numbered like Linux does (i, i+N)."""
    total_cores = nodes * cores_per_node
    cells = []
    for node in range(nodes):
        cpus = []
        for core in range(cores_per_node):
            first = node * cores_per_node + core
            siblings = tuple(first + t * total_cores for t in range(threads))
            cpus.extend(
                HostCPU(id=cpu, node=node, socket=node, core=core, siblings=siblings)
                for cpu in siblings
            )
        cells.append(
            Cell(id=node, memory_kib=16 * 1024**2, cpus=tuple(sorted(cpus, key=lambda c: c.id)))
        )
    return Topology(arch="x86_64", cpu_features=frozenset(), cells=tuple(cells))


def settings(vcpus: int = 1, memory_kib: int = 1024**2, accelerator: str = "qemu") -> GuestSettings:
    return GuestSettings(
        vcpus=vcpus,
        memory_kib=memory_kib,
        accelerator=accelerator,
        boot=KernelBoot("/images/vmlinuz", "/images/initrd.img", "root=/dev/vda console=ttyS0"),
        network="lab",
        state_dir=Path("/var/lib/lab"),
        cpu_mode=None if accelerator == "qemu" else "host-passthrough",
    )


def ar1(rng: np.random.Generator, r: float, shape: tuple[int, int]) -> np.ndarray:
    """Rows of a stationary AR(1) series with unit innovations and lag-1 correlation r."""
    e = rng.normal(size=shape)
    x = np.empty(shape)
    x[:, 0] = e[:, 0] / math.sqrt(1 - r * r)
    for t in range(1, shape[1]):
        x[:, t] = r * x[:, t - 1] + e[:, t]
    return x


TWINS = (("thp", 10.0), ("shp1g", 10.5))


def twins_store(
    path: Path, iterations: int = 50, bases: tuple[tuple[str, float], ...] = TWINS,
    scale: float = 1.0,
) -> Path:  # fmt: skip
    """A real store: study "s", run "s/w" of workload "w" measuring "t" (s, lower is
    better), and a guest lab-VARIANT per (variant, base) with ``iterations`` samples, the
    i-th (base + (i mod 7) / 10) × ``scale``."""
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, None, iterations,
                               [MetricInfo("t", "s", "lower")])  # fmt: skip
        for variant, base in bases:
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, metrics={"t": (base + i % 7 / 10) * scale})
                for i in range(1, iterations + 1)
            ])  # fmt: skip
    return path
