"""Factors and cells (issue 41): levels compose into a variant that changes exactly the
parts of the domain its levels declare, and a cell libvirt cannot express or that changes a
part twice is refused with its reason."""

from __future__ import annotations

import pytest
from lxml import etree

from lab.core.errors import UsageError
from lab.domainxml.domain import DomainSpec
from lab.guests.cpuplan import plan_cpus
from lab.guests.factors import FACTORS, Cell, Factor, Level, looks_like_cell, parse_cell
from lab.guests.twins import base_spec as twin_base
from lab.guests.variants import find_variant, get_variant, load_variants
from lab.host.hugepages import HugePageNeed
from tests.unit.helpers import settings, topology


def base_spec() -> DomainSpec:
    """The common base of a guest of 1 vCPU and 1 GiB on this 2-CPU host."""
    plan = plan_cpus(topology(1, 2), 2, 1, reserve_host_cpus=0)
    return twin_base("lab-x", settings(1, 1024**2), plan.guests[0], plan)


def _backing(spec: DomainSpec) -> tuple[int | None, str | None]:
    backing = spec.memory_backing
    if backing is None:
        return None, None
    return (None if backing.hugepages is None else backing.hugepages.page_kib), backing.allocation


@pytest.mark.parametrize(
    ("name", "backing"),
    [
        ("page-thp", (None, None)),
        ("page-thp.prealloc-on", (None, "immediate")),
        ("page-thp.prealloc-off", (None, "ondemand")),
        ("page-1g", (1048576, None)),
        ("page-1g.prealloc-on", (1048576, "immediate")),
        ("prealloc-on.page-2m", (2048, "immediate")),
    ],
)
def test_levels_compose_into_the_backing_they_declare(
    name: str, backing: tuple[int | None, str | None]
) -> None:
    cell = parse_cell(name)
    assert cell.name == name
    assert _backing(cell.apply(base_spec())) == backing


def test_a_cell_is_the_variant_it_spells_in_xml() -> None:
    # page-thp.prealloc-on builds the domain the thp-prealloc plug-in builds, shp1g's likewise
    variants = load_variants()
    pairs = (
        ("page-thp.prealloc-on", "thp-prealloc"),
        ("page-1g", "shp1g"),
        ("page-thp.guest-thp-never", "guest-thp-never"),
    )
    for cell, variant in pairs:
        mine = etree.tostring(parse_cell(cell).apply(base_spec()).to_xml())
        theirs = etree.tostring(variants[variant].apply(base_spec()).to_xml())
        assert mine == theirs


def test_one_gib_pages_on_demand_are_refused_with_libvirts_reason() -> None:
    cell = parse_cell("page-1g.prealloc-off")
    with pytest.raises(UsageError, match="hugepages are not allowed with memory allocation"):
        cell.apply(base_spec())


def test_a_level_of_the_guest_kernel_changes_its_command_line() -> None:
    cell = parse_cell("page-2m.guest-thp-never")
    spec = cell.apply(base_spec())
    assert "transparent_hugepage=never" in etree.tostring(spec.to_xml()).decode()
    assert cell.guest_facts == ("thp_enabled",)
    assert cell.factor_levels == {"page": "2m", "guest-thp": "never"}


def test_huge_page_levels_need_their_pages() -> None:
    spec = base_spec()  # 1 GiB of RAM
    assert parse_cell("page-2m.prealloc-on").needs(spec, 0) == [HugePageNeed(2048, 512, 0)]
    assert parse_cell("page-thp").needs(spec, 0) == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("page-1g.page-2m", "gives factor 'page' two levels"),
        ("page-4k", "factor 'page' has no level '4k'. Its levels: thp, 2m, 1g"),
        ("page-1g.bogus-1", "'bogus-1' of 'page-1g.bogus-1' names no factor's level"),
    ],
)
def test_a_misspelt_cell_says_what_is_wrong(name: str, message: str) -> None:
    assert looks_like_cell(name)
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(".", r"\.")):
        get_variant(name, load_variants())


def test_two_levels_that_change_one_part_are_refused() -> None:
    other = Factor("backing", "another page size", {})
    twice = Level("backing", "x", "", lambda s: s, FACTORS["page"].levels["1g"].changes)
    other.levels["x"] = twice
    with pytest.raises(UsageError, match="page-1g and backing-x both change /domain/memoryBacking"):
        Cell([FACTORS["page"].levels["1g"], twice])


def test_a_plug_in_keeps_its_name_and_other_names_are_not_cells() -> None:
    variants = load_variants()
    assert get_variant("guest-thp-never", variants) is variants["guest-thp-never"]
    assert not looks_like_cell("shp1g") and not looks_like_cell("pagey-1g")


def test_a_stored_guest_of_a_cell_is_found_as_its_variant() -> None:
    # lab diff --live and the twins' environment read what a guest's variant declares from
    # its stored name: a cell's declared nothing, and its delta showed as unexplained
    variants = load_variants()
    found = find_variant("page-thp.guest-thp-never", variants)
    assert found is not None and found.changes == ("/domain/memoryBacking", "/domain/os/cmdline")
    assert found.guest_facts == ("thp_enabled",)
    assert find_variant("shp1g", variants) is variants["shp1g"]
    assert find_variant("page-4k", variants) is None and find_variant("gone", variants) is None
