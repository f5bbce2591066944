"""`lab diff`: twins differ only by the variant's delta and their identity."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lab.core.errors import ConfigError
from lab.domainxml.domain import DomainSpec
from lab.domainxml.numatune import NUMATune
from lab.guests.cpuplan import plan_cpus
from lab.guests.diff import Change, variant_delta_paths, within
from lab.guests.fairness import pair_changes
from lab.guests.twins import base_spec, build_twins
from lab.guests.variant import Variant
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
    a, b = twins("thp", "shp2m")
    b = replace(b, spec=replace(b.spec, memory_kib=b.spec.memory_kib * 2))
    unexplained = {c.path for c in pair_changes(a, b) if c.kind == "unexplained"}
    assert unexplained == {"/domain/memory/text()", "/domain/currentMemory/text()"}


# -- every field a variant changes is explained, because the variant declares it ----------


class PreferredNode(Variant):
    """A NUMA-policy variant: guest memory preferably, not strictly, from its node."""

    name = "numa-preferred"
    changes = (NUMATune.XPATH,)

    def apply(self, base: DomainSpec) -> DomainSpec:
        assert base.numatune is not None
        return replace(base, numatune=replace(base.numatune, mode="preferred"))


class Undeclared(PreferredNode):
    name = "numa-undeclared"
    changes = ()


def pair_of(a: Variant, b: Variant) -> list[Change]:
    plan = plan_cpus(topology(1, 2), 2, 1, reserve_host_cpus=0)
    return pair_changes(*build_twins([a, b], settings(1), plan))


def test_a_numa_policy_variant_is_explained_by_what_it_declares() -> None:
    thp = load_variants()["thp"]
    variant = {c.path: c for c in pair_of(thp, PreferredNode()) if c.kind != "identity"}
    assert variant == {
        "/domain/numatune/memory/@mode": Change(
            "/domain/numatune/memory/@mode", "strict", "preferred", "variant", "numa-preferred"
        )
    }
    # the same change undeclared is what lab diff is there to catch
    (change,) = [c for c in pair_of(thp, Undeclared()) if c.kind != "identity"]
    assert (change.path, change.kind, change.by) == (
        "/domain/numatune/memory/@mode",
        "unexplained",
        None,
    )


def test_a_part_both_variants_declare_is_explained_by_both() -> None:
    a, b = twins("thp", "shp1g")
    page = next(c for c in pair_changes(a, b) if c.path.endswith("page/@size"))
    assert page.by == "shp1g, thp"


def test_a_variant_declaring_the_whole_domain_is_refused() -> None:
    class Everything(PreferredNode):
        name = "everything"
        changes = ("/domain",)

    with pytest.raises(ConfigError, match="everything declares it changes '/domain'"):
        pair_of(load_variants()["thp"], Everything())


@pytest.mark.parametrize("name", sorted(load_variants()))
def test_every_shipped_variant_changes_only_what_it_declares(name: str) -> None:
    variant = load_variants()[name]
    plan = plan_cpus(topology(1, 2), 1, 1, reserve_host_cpus=0)
    base = base_spec("lab-x", settings(1), plan.guests[0], plan)
    changed = variant_delta_paths(base.to_xml(), variant.apply(base).to_xml())
    assert variant.changes
    assert {p for p in changed if not any(within(p, part) for part in variant.changes)} == set()


def test_within_is_an_element_and_what_it_holds() -> None:
    assert within("/domain/os/cmdline/text()", "/domain/os/cmdline")
    assert within("/domain/devices/disk[2]/source/@file", "/domain/devices/disk")
    assert within("/domain/memoryBacking", "/domain/memoryBacking")
    assert not within("/domain/memoryBackingX", "/domain/memoryBacking")
    assert not within("/domain/os/kernel/text()", "/domain/os/cmdline")
