"""What backed each twin's memory, from the QEMU process's smaps (captured here from the
shp1g twin's QEMU: its RAM on a 1 GiB hugetlbfs page) and the live domain XML."""

from __future__ import annotations

from pathlib import Path

from lab.host.environment import NOT_AVAILABLE
from lab.host.qemuproc import parse_smaps
from lab.run.backing import (
    ANON_HUGE,
    DEFAULT_DECLARED,
    HUGETLB,
    HUGETLB_DECLARED,
    backing_facts,
    describe,
    problem,
)

CAPTURES = Path(__file__).parents[1] / "fixtures" / "captures"
SMAPS = (CAPTURES / "qemu-shp1g-smaps-hugetlb.txt").read_text()
SHP_XML = (CAPTURES / "libvirt-live-lab-shp1g.xml").read_text()
THP_XML = (CAPTURES / "libvirt-live-lab-thp.xml").read_text()


def host(files: dict[str, str]):  # type: ignore[no-untyped-def]
    def read(path: str) -> str:
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]

    return read


def test_smaps_fields_are_summed_over_the_mappings() -> None:
    fields = parse_smaps(SMAPS)
    assert fields["Shared_Hugetlb"] == 1048576
    assert fields["AnonHugePages"] == sum(
        int(line.split()[1]) for line in SMAPS.splitlines() if line.startswith("AnonHugePages:")
    )


def test_the_shp1g_twins_ram_is_in_hugetlb_as_declared() -> None:
    read = host({"/run/libvirt/qemu/lab-shp1g.pid": "4242\n", "/proc/4242/smaps_rollup": SMAPS})
    facts = backing_facts(read, "lab-shp1g", SHP_XML)
    assert facts[HUGETLB] == "1048576" and facts["memory_backing_declared"] == HUGETLB_DECLARED
    assert facts["memory_kib"] == "1048576"
    said = describe("lab-shp1g", facts)
    assert said is not None and said.startswith("lab-shp1g: 100 % of its 1,048,576 KiB of RAM")
    assert problem("lab-shp1g", "shp1g", facts) is None


def test_a_variant_that_did_not_take_effect_is_named() -> None:
    no_hugetlb = SMAPS.replace("Shared_Hugetlb:  1048576 kB", "Shared_Hugetlb:        0 kB")
    read = host({"/run/libvirt/qemu/g.pid": "7", "/proc/7/smaps_rollup": no_hugetlb})
    wrong = problem("g", "shp1g", backing_facts(read, "g", SHP_XML))
    assert wrong is not None and "did not take effect" in wrong
    plain = "Rss:  1000 kB\nAnonHugePages:  0 kB\n"
    read = host({"/run/libvirt/qemu/t.pid": "8", "/proc/8/smaps_rollup": plain})
    facts = backing_facts(read, "t", THP_XML)
    assert facts["memory_backing_declared"] == DEFAULT_DECLARED
    wrong = problem("t", "thp", facts)
    assert wrong is not None and "4 KiB pages" in wrong
    read = host({"/run/libvirt/qemu/t.pid": "8", "/proc/8/smaps_rollup": plain.replace(
        "AnonHugePages:  0", "AnonHugePages:  2048")})  # fmt: skip
    assert problem("t", "thp", backing_facts(read, "t", THP_XML)) is None


def test_a_guest_whose_process_cannot_be_read_says_so_and_no_more() -> None:
    facts = backing_facts(host({}), "gone", None)
    assert facts[ANON_HUGE] == facts[HUGETLB] == facts["memory_kib"] == NOT_AVAILABLE
    assert describe("gone", facts) is None and problem("gone", "thp", facts) is None
