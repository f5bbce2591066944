"""`lab diff`: twins differ only by the variant's delta and their identity."""

from __future__ import annotations

from lab.guests.cpuplan import plan_cpus
from lab.guests.fairness import pair_changes
from lab.guests.twins import build_twins
from lab.guests.variants import load_variants
from tests.unit.helpers import settings, topology


def twins(a: str, b: str, vcpus: int = 1):
    variants = load_variants()
    plan = plan_cpus(topology(1, 2 * vcpus), 2, vcpus, reserve_host_cpus=0)
    return build_twins([variants[a], variants[b]], settings(vcpus), plan)


def test_thp_vs_shp1g_differs_exactly_by_identity_and_memory_backing() -> None:
    a, b = twins("thp", "shp1g")
    changes = {c.path: c for c in pair_changes(a, b)}
    assert set(changes) == {
        "/domain/name/text()",
        "/domain/devices/disk[1]/source/@file",
        "/domain/devices/disk[2]/source/@file",
        "/domain/devices/interface/mac/@address",
        "/domain/devices/serial/log/@file",
        "/domain/cputune/vcpupin/@cpuset",
        "/domain/memoryBacking",
        "/domain/memoryBacking/hugepages",
        "/domain/memoryBacking/hugepages/page",
        "/domain/memoryBacking/hugepages/page/@size",
        "/domain/memoryBacking/hugepages/page/@unit",
    }
    kinds = {path: c.kind for path, c in changes.items()}
    assert kinds["/domain/memoryBacking/hugepages/page/@size"] == "variant"
    assert kinds["/domain/name/text()"] == "identity"
    assert "unexplained" not in kinds.values()
    assert changes["/domain/memoryBacking/hugepages/page/@size"].b == "1048576"
    assert changes["/domain/memoryBacking/hugepages/page/@size"].a is None


def test_aa_pair_differs_only_by_identity() -> None:
    a, b = twins("thp", "thp", vcpus=2)
    changes = pair_changes(a, b)
    assert {c.kind for c in changes} == {"identity"}
    assert (a.name, b.name) == ("lab-thp-a", "lab-thp-b")


def test_a_difference_outside_the_variant_is_unexplained() -> None:
    from dataclasses import replace

    a, b = twins("thp", "shp2m")
    b = replace(b, spec=replace(b.spec, memory_kib=b.spec.memory_kib * 2))
    unexplained = {c.path for c in pair_changes(a, b) if c.kind == "unexplained"}
    assert unexplained == {"/domain/memory/text()", "/domain/currentMemory/text()"}
