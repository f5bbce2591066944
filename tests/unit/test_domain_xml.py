"""Every generated domain is valid libvirt XML and survives a define on the test driver."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

import libvirt
import pytest
from lxml import etree

from lab.domainxml.boot import KernelBoot
from lab.domainxml.cputune import CPUTune
from lab.domainxml.memorybacking import HugePages, MemoryBacking
from lab.domainxml.numatune import NUMATune
from lab.guests.cpuplan import plan_cpus
from lab.guests.twins import build_twins
from lab.guests.variants import load_variants
from tests.unit.helpers import settings, topology

SCHEMA = Path("/usr/share/libvirt/schemas/domain.rng")
VARIANTS = sorted(load_variants())
SIZES = [(1, 1024**2), (2, 2 * 1024**2), (4, 3 * 1024**2 + 512 * 1024)]


@pytest.fixture(scope="module")
def relaxng() -> etree.RelaxNG:
    if not SCHEMA.exists():
        pytest.skip("libvirt's RelaxNG schemas are not installed (apt-get install libvirt-daemon)")
    return etree.RelaxNG(etree.parse(str(SCHEMA)))


def make_guest(variant: str, vcpus: int, memory_kib: int, accelerator: str = "qemu"):
    variants = load_variants()
    plan = plan_cpus(topology(1, 2 * vcpus + 1), 1, vcpus, reserve_host_cpus=1)
    (guest,) = build_twins([variants[variant]], settings(vcpus, memory_kib, accelerator), plan)
    return guest


@pytest.mark.parametrize(
    ("variant", "size", "accel"), list(itertools.product(VARIANTS, SIZES, ["qemu", "kvm"]))
)
def test_generated_domain_is_valid_against_libvirt_schema(relaxng, variant, size, accel) -> None:
    vcpus, memory = size
    xml = make_guest(variant, vcpus, memory, accel).spec.to_xml()
    assert relaxng.validate(xml), relaxng.error_log


@pytest.mark.parametrize(("variant", "size"), list(itertools.product(VARIANTS, SIZES)))
def test_test_driver_round_trip_keeps_hugepages_and_pinning(variant, size) -> None:
    vcpus, memory = size
    guest = make_guest(variant, vcpus, memory)
    spec = guest.spec
    conn = libvirt.open("test:///default")
    name = f"{spec.name}-{uuid.uuid4().hex[:8]}"
    xml = (
        etree.tostring(spec.to_xml())
        .decode()
        .replace(f"<name>{spec.name}</name>", f"<name>{name}</name>")
    )
    dom = conn.defineXMLFlags(xml, libvirt.VIR_DOMAIN_DEFINE_VALIDATE)
    try:
        back = etree.fromstring(dom.XMLDesc(0).encode())
        assert MemoryBacking.from_domain(back) == spec.memory_backing
        tune = CPUTune.from_domain(back)
        assert tune is not None and spec.cputune is not None
        assert tune.vcpupins == spec.cputune.vcpupins
        assert len(tune.vcpupins) == vcpus
        assert tune.emulatorpin == spec.cputune.emulatorpin
        assert NUMATune.from_domain(back) == spec.numatune
        if variant.startswith("shp"):
            page = back.find("memoryBacking/hugepages/page")
            assert page is not None
            expected_kib = {"shp1g": 1048576, "shp2m": 2048}[variant]
            assert int(page.get("size")) == expected_kib and page.get("unit") == "KiB"
        elif spec.memory_backing is None:
            assert back.find("memoryBacking") is None
        else:  # thp-prealloc
            assert back.find("memoryBacking/allocation").get("mode") == "immediate"
        assert back.find("os/cmdline").text == spec.boot.cmdline
        dom.create()
        assert dom.isActive()
        dom.destroy()
    finally:
        dom.undefine()
        conn.close()


def test_thp_has_no_memory_backing_and_shp1g_asks_one_page_per_gib() -> None:
    thp = make_guest("thp", 1, 1024**2)
    shp = make_guest("shp1g", 1, 3 * 1024**2 + 1)
    assert thp.spec.to_xml().find("memoryBacking") is None
    assert thp.needs == ()
    assert [(n.page_kib, n.count, n.node) for n in shp.needs] == [(1048576, 4, 0)]
    shp2m = make_guest("shp2m", 1, 1024**2)
    assert [(n.page_kib, n.count) for n in shp2m.needs] == [(2048, 512)]


def test_disk_bypasses_host_cache_and_console_is_logged() -> None:
    xml = make_guest("thp", 1, 1024**2).spec.to_xml()
    assert xml.find("devices/disk[@device='disk']/driver").get("cache") == "none"
    assert xml.find("devices/disk[@device='cdrom']/readonly") is not None
    assert xml.find("devices/serial/log").get("file").endswith("/lab-thp/console.log")
    assert xml.find("devices/interface/source").get("network") == "lab"
    assert xml.find("devices/interface/model").get("type") == "virtio"
    assert xml.get("type") == "qemu"
    assert xml.find("os/kernel").text == "/images/vmlinuz"


# -- the element models a variant changes ----------------------------------------------------


def test_memory_allocation_round_trips_and_is_valid(relaxng: etree.RelaxNG) -> None:
    from dataclasses import replace

    for backing in (
        MemoryBacking(allocation="immediate"),
        MemoryBacking(HugePages(page_kib=2048), allocation="ondemand"),
    ):
        spec = replace(make_guest("thp", 1, 1024**2).spec, memory_backing=backing)
        xml = spec.to_xml()
        assert relaxng.validate(xml), relaxng.error_log
        assert xml.find("memoryBacking/allocation").get("mode") == backing.allocation
        assert MemoryBacking.from_domain(xml) == backing
    with pytest.raises(ValueError, match="allocation must be one of"):
        MemoryBacking(allocation="eager")


def test_kernel_arguments_are_added_once_each_as_one_word() -> None:
    boot = KernelBoot("/k", "/i", "root=/dev/vda rw  console=ttyS0")
    more = boot.with_args("transparent_hugepage=never", "console=ttyS0")
    assert more.cmdline == "root=/dev/vda rw console=ttyS0 transparent_hugepage=never"
    assert more.with_args("transparent_hugepage=never") == more
    assert boot.cmdline == "root=/dev/vda rw  console=ttyS0"  # a new value, the old one kept
    with pytest.raises(ValueError, match="one word"):
        boot.with_args("quiet splash")
