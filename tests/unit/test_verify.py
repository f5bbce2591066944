"""Verification checks on real captured QEMU mappings and libvirt pinning answers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from lab.core.errors import UsageError
from lab.core.hostexec import RecordingHost, Result
from lab.domainxml.boot import DiskBoot
from lab.guests.bringup import verify_variants
from lab.guests.cpuplan import plan_cpus
from lab.guests.ssh import GuestAddress, GuestShell
from lab.guests.twins import build_twins
from lab.guests.variant import RunningGuest, Variant
from lab.guests.variants import load_variants
from lab.guests.verify import (
    check_backing,
    check_guest_thp,
    check_live_domain,
    check_pinning,
    check_pool_drop,
    check_preallocated,
    hugetlb_mappings,
)
from tests.unit.helpers import FIXTURES, settings, topology

NUMA_MAPS = (FIXTURES / "captures_lead/qemu-shp1g-numa_maps-hugetlb.txt").read_text()
# A THP guest's numa_maps: anonymous memory only (shape of a real line, no "huge").
THP_LINE = "7f1c40000000 default anon=262144 dirty=262144 active=0 N0=262144 kernelpagesize_kB=4\n"


def test_real_shp1g_mapping_is_one_1g_page() -> None:
    (mapping,) = hugetlb_mappings(NUMA_MAPS)
    assert mapping.page_kib == 1048576
    assert mapping.pages == 1
    assert mapping.path.startswith("/dev/hugepages1G/libvirt/qemu/9-lab-shp1g/")


def test_backing_as_declared_passes_and_mismatches_are_named() -> None:
    shp = hugetlb_mappings(NUMA_MAPS)
    assert check_backing("lab-shp1g", 1048576, 1048576, shp) == []
    assert check_backing("lab-thp", None, 1048576, hugetlb_mappings(THP_LINE)) == []
    (problem,) = check_backing("lab-thp", None, 1048576, shp)
    assert "declared without huge pages" in problem
    (problem,) = check_backing("lab-shp2m", 2048, 1048576, shp)
    assert "declared 2048 KiB huge pages" in problem
    (problem,) = check_backing("lab-shp1g", 1048576, 2 * 1048576, shp)
    assert "only 1048576 KiB of 2097152 KiB" in problem


def test_pinning_read_back_from_libvirt() -> None:
    # vcpuPinInfo / emulatorPinInfo answers on a 2-CPU host, as in the captured
    # `virsh vcpupin` (vCPU 0 -> CPU 1) and `virsh emulatorpin` (0-1).
    assert check_pinning("lab-shp1g", (1,), (0, 1), [(False, True)], (True, True)) == []
    problems = check_pinning("lab-shp1g", (1,), (0,), [(True, True)], (True, True))
    assert problems == [
        "lab-shp1g: vCPU 0 may run on host CPUs 0-1, planned 1",
        "lab-shp1g: emulator threads on 0-1, planned 0",
    ]
    assert (
        "2 vCPUs running, 1 planned"
        in check_pinning("g", (1,), (0,), [(False, True), (True, False)], (True, False))[0]
    )


def test_pool_drop() -> None:
    assert check_pool_drop(1048576, 1, 2, 1) == []
    assert check_pool_drop(1048576, 1, 2, 2) == [
        "host free 1048576 KiB pages went 2 -> 2; the guests should have taken 1"
    ]


# -- the live domain, read back with the model that wrote it --------------------------------

LIVE = Path(__file__).parent.parent / "fixtures" / "captures"


def live_twins() -> dict[str, Any]:
    """The twins as `lab up --pair thp,shp1g --vcpus 1 --memory 1G --reserve-host-cpus 0`
    declares them on this 2-CPU host, where the captures were taken."""
    variants = load_variants()
    plan = plan_cpus(topology(1, 2), 2, 1, reserve_host_cpus=0)
    twins = build_twins([variants["thp"], variants["shp1g"]], settings(1, 1024**2), plan)
    return {guest.name: guest for guest in twins}


@pytest.mark.parametrize("name", ["lab-thp", "lab-shp1g"])
def test_a_running_guest_as_libvirt_holds_it_is_as_declared(name: str) -> None:
    live = (LIVE / f"libvirt-live-{name}.xml").read_text()
    assert check_live_domain(name, live, live_twins()[name].spec) == []


def test_a_live_domain_that_lost_its_huge_pages_or_its_pinning_is_named() -> None:
    live = (LIVE / "libvirt-live-lab-shp1g.xml").read_text()
    domain = etree.fromstring(live.encode())
    domain.remove(domain.find("memoryBacking"))
    domain.find("cputune/vcpupin").set("cpuset", "0-1")
    problems = check_live_domain(
        "lab-shp1g", etree.tostring(domain).decode(), live_twins()["lab-shp1g"].spec
    )
    assert [p.split(" with ")[1].split(" ")[0:2] for p in problems] == [
        ["memory", "backing"],
        ["CPU", "pinning"],
    ]
    assert "None, declared MemoryBacking(hugepages=HugePages(page_kib=1048576" in problems[0]


# -- a variant's own check, through the guest's shell and its host's files ------------------


class FakeShell(GuestShell):
    """A guest that answers commands from a table and remembers what it ran."""

    def __init__(self, name: str, answers: dict[tuple[str, ...], str]) -> None:
        self.address = GuestAddress(name, "198.18.0.9", "", "lab", Path("/dev/null"))
        self.answers = answers
        self.ran: list[tuple[str, ...]] = []
        self.closed = False

    def run(self, argv, *, check=True, timeout=None, sudo=False) -> Result:  # type: ignore[no-untyped-def]
        self.ran.append(tuple(argv))
        return Result(tuple(argv), 0, self.answers[tuple(argv)], "")

    def close(self) -> None:
        self.closed = True


class QuietKernel(Variant):
    """Checks in the guest that its kernel was booted quiet, and names its QEMU's pid."""

    name = "quiet"

    def verify(self, guest: RunningGuest) -> list[str]:
        cmdline = guest.shell.run(["cat", "/proc/cmdline"]).stdout
        pid = guest.read_host(f"/run/libvirt/qemu/{guest.name}.pid").strip()
        return [] if "quiet" in cmdline.split() else [f"{guest.name} (QEMU {pid}): not quiet"]


def test_each_variant_checks_its_own_guest_through_the_shell_handed_in() -> None:
    plan = plan_cpus(topology(1, 2), 2, 1, reserve_host_cpus=0)
    guests = build_twins([load_variants()["thp"], QuietKernel()], settings(1), plan)
    shells = {
        "lab-thp": FakeShell("lab-thp", {}),
        "lab-quiet": FakeShell("lab-quiet", {("cat", "/proc/cmdline"): "root=/dev/vda ro\n"}),
    }
    host = RecordingHost(files={"/run/libvirt/qemu/lab-quiet.pid": "4242\n"})
    problems = verify_variants(guests, shells.__getitem__, host)
    assert problems == ["lab-quiet (QEMU 4242): not quiet"]
    assert shells["lab-thp"].ran == [] and shells["lab-quiet"].ran == [("cat", "/proc/cmdline")]
    assert all(shell.closed for shell in shells.values())
    shells["lab-quiet"].answers[("cat", "/proc/cmdline")] = "root=/dev/vda quiet\n"
    assert verify_variants(guests, shells.__getitem__, host) == []


# -- guest-thp-never and thp-prealloc: the change checked where it shows ---------------------

HOST_THP = (LIVE / "host-thp-enabled.txt").read_text()  # "always [madvise] never"
GUEST_NEVER = "always madvise [never]\n"  # what the kernel prints with transparent_hugepage=never
SMAPS_SHP1G = (LIVE / "qemu-shp1g-smaps-hugetlb.txt").read_text()


def rollup(rss_kib: int) -> str:
    """A QEMU process's /proc/PID/smaps_rollup, as the kernel prints it."""
    return (
        "55d4c7a00000-7ffd1a5f1000 ---p 00000000 00:00 0                          [rollup]\n"
        f"Rss:             {rss_kib} kB\nPss:             {rss_kib - 900} kB\n"
        f"Anonymous:       {rss_kib - 30000} kB\nAnonHugePages:    1042432 kB\n"
        "Shared_Hugetlb:        0 kB\nPrivate_Hugetlb:       0 kB\nSwap:                  0 kB\n"
    )


def test_guest_thp_mode_from_its_sysfs() -> None:
    assert check_guest_thp("lab-guest-thp-never", "never", GUEST_NEVER) == []
    assert check_guest_thp("lab-guest-thp-never", "never", HOST_THP) == [
        "lab-guest-thp-never: its kernel runs THP in mode 'madvise' (always [madvise] never),"
        " declared 'never'"
    ]
    (problem,) = check_guest_thp("g", "never", "")
    assert problem.startswith("g: cannot tell its kernel's THP mode")


def test_preallocated_means_qemu_holds_all_guest_ram() -> None:
    assert check_preallocated("lab-thp-prealloc", 1048576, rollup(1_112_000)) == []
    assert check_preallocated("lab-thp-prealloc", 1048576, rollup(311_000)) == [
        "lab-thp-prealloc: declared preallocated, but its QEMU holds 311000 KiB of its"
        " 1048576 KiB of RAM"
    ]
    # hugetlb pages are not in Rss; smaps counts them apart (the real shp1g capture)
    assert check_preallocated("lab-shp1g", 1048576, SMAPS_SHP1G) == []


def running(variant: str, shell: GuestShell, host: RecordingHost) -> tuple[Variant, RunningGuest]:
    guest = guest_of(variant)
    return guest.variant, RunningGuest(guest.name, guest.spec, shell, host.read_text)


def guest_of(variant: str) -> Any:
    plan = plan_cpus(topology(1, 2), 1, 1, reserve_host_cpus=0)
    (guest,) = build_twins([load_variants()[variant]], settings(1, 1024**2), plan)
    return guest


def test_guest_thp_never_boots_its_kernel_so_and_checks_it_in_the_guest() -> None:
    guest = guest_of("guest-thp-never")
    assert guest.spec.boot.cmdline.split()[-1] == "transparent_hugepage=never"
    assert guest.spec.memory_backing is None  # everything else as thp
    argv = ("cat", "/sys/kernel/mm/transparent_hugepage/enabled")
    shell = FakeShell(guest.name, {argv: GUEST_NEVER})
    variant, seen = running("guest-thp-never", shell, RecordingHost())
    assert variant.verify(seen) == [] and shell.ran == [argv]
    shell.answers[argv] = HOST_THP
    (problem,) = variant.verify(seen)
    assert "runs THP in mode 'madvise'" in problem


def test_thp_prealloc_is_checked_on_its_qemu_and_thp_is_not() -> None:
    pid = {"/run/libvirt/qemu/lab-thp-prealloc.pid": "5151\n"}
    host = RecordingHost(files={**pid, "/proc/5151/smaps": rollup(1_112_000)})
    variant, seen = running("thp-prealloc", FakeShell("lab-thp-prealloc", {}), host)
    assert variant.verify(seen) == []
    host.files["/proc/5151/smaps"] = rollup(311_000)
    (problem,) = variant.verify(seen)
    assert "holds 311000 KiB of its 1048576 KiB" in problem
    (problem,) = variant.verify(replace(seen, read_host=RecordingHost().read_text))
    assert problem.startswith("lab-thp-prealloc: cannot read its QEMU's memory")
    thp, seen = running("thp", FakeShell("lab-thp", {}), RecordingHost())
    assert thp.verify(seen) == []  # reads nothing: it would fail on an empty host


def test_a_kernel_argument_needs_the_lab_to_boot_the_kernel() -> None:
    guest = guest_of("thp")
    with pytest.raises(UsageError, match="sets the guest kernel's command line"):
        load_variants()["guest-thp-never"].apply(replace(guest.spec, boot=DiskBoot()))
