"""What backed each twin's memory, from the QEMU process's smaps (captured here from the
shp1g twin's QEMU: its RAM on a 1 GiB hugetlbfs page) and the live domain XML."""

from __future__ import annotations

import gzip
from pathlib import Path

from lab.host.environment import NOT_AVAILABLE
from lab.host.qemuproc import qemu_memory
from lab.run.backing import (
    ANON_HUGE,
    DEFAULT_DECLARED,
    HUGETLB,
    HUGETLB_DECLARED,
    aged_note,
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


def summed(smaps: str, field: str) -> int:
    """The reference: ``field`` summed over every mapping, line by line, leaving none out."""
    prefix = field + ":"
    return sum(int(line.split()[1]) for line in smaps.splitlines() if line.startswith(prefix))


def test_smaps_fields_are_summed_over_the_mappings() -> None:
    fields = qemu_memory(SMAPS)
    assert fields["Shared_Hugetlb"] == 1048576
    assert fields["AnonHugePages"] == summed(SMAPS, "AnonHugePages")


def test_the_shp1g_twins_ram_is_in_hugetlb_as_declared() -> None:
    read = host({"/run/libvirt/qemu/lab-shp1g.pid": "4242\n", "/proc/4242/smaps": SMAPS})
    facts = backing_facts(read, "lab-shp1g", SHP_XML)
    assert facts[HUGETLB] == "1048576" and facts["memory_backing_declared"] == HUGETLB_DECLARED
    assert facts["memory_kib"] == "1048576"
    said = describe("lab-shp1g", facts)
    assert said is not None and said.startswith("lab-shp1g: 100 % of its 1,048,576 KiB of RAM")
    assert problem("lab-shp1g", "shp1g", facts) is None


def test_a_variant_that_did_not_take_effect_is_named() -> None:
    no_hugetlb = SMAPS.replace("Shared_Hugetlb:  1048576 kB", "Shared_Hugetlb:        0 kB")
    read = host({"/run/libvirt/qemu/g.pid": "7", "/proc/7/smaps": no_hugetlb})
    wrong = problem("g", "shp1g", backing_facts(read, "g", SHP_XML))
    assert wrong is not None and "did not take effect" in wrong
    plain = "Rss:  1000 kB\nAnonHugePages:  0 kB\n"
    read = host({"/run/libvirt/qemu/t.pid": "8", "/proc/8/smaps": plain})
    facts = backing_facts(read, "t", THP_XML)
    assert facts["memory_backing_declared"] == DEFAULT_DECLARED
    wrong = problem("t", "thp", facts)
    assert wrong is not None and "4 KiB pages" in wrong
    read = host({"/run/libvirt/qemu/t.pid": "8", "/proc/8/smaps": plain.replace(
        "AnonHugePages:  0", "AnonHugePages:  2048")})  # fmt: skip
    assert problem("t", "thp", backing_facts(read, "t", THP_XML)) is None


def test_a_thp_twin_without_huge_pages_on_an_aged_host_is_the_age_not_a_failed_variant() -> None:
    # seen in the real age study: at index 0.999 the thp twin had AnonHugePages 0, and compare
    # warned it was "not a THP twin (check the host's THP mode)"
    plain = "Rss:  1000 kB\nAnonHugePages:  0 kB\n"
    facts = backing_facts(host({"/run/libvirt/qemu/t.pid": "8", "/proc/8/smaps": plain}), "t",
                          THP_XML)  # fmt: skip
    aged = {"host_aged": "1.0", "thp_unusable_index": "0.999"}
    assert problem("t", "thp", facts, aged) is None
    note = aged_note("t", "thp", facts, aged)
    assert note is not None and "held at level 1.0 by `lab host age`, index 0.999" in note
    fresh = {"host_aged": "no", "thp_unusable_index": "0.05"}
    assert "4 KiB pages" in (problem("t", "thp", facts, fresh) or "")
    assert aged_note("t", "thp", facts, fresh) is None
    shp = SMAPS.replace("Shared_Hugetlb:  1048576 kB", "Shared_Hugetlb:        0 kB")
    facts = backing_facts(host({"/run/libvirt/qemu/g.pid": "7", "/proc/7/smaps": shp}), "g",
                          SHP_XML)  # fmt: skip
    assert "did not take effect" in (problem("g", "shp1g", facts, aged) or "")  # age or not


def test_a_guest_whose_process_cannot_be_read_says_so_and_no_more() -> None:
    facts = backing_facts(host({}), "gone", None)
    assert facts[ANON_HUGE] == facts[HUGETLB] == facts["memory_kib"] == NOT_AVAILABLE
    assert describe("gone", facts) is None and problem("gone", "thp", facts) is None


# -- under emulation: TCG's translation buffer is QEMU's, not the guest's RAM ---------------


def full_smaps(name: str) -> str:
    """A guest's whole /proc/PID/smaps, captured from its QEMU under TCG on this host."""
    return gzip.open(CAPTURES / f"qemu-7.2-smaps-{name}-tcg.txt.gz", "rt").read()


def test_tcg_s_translation_buffer_is_not_counted_as_the_guest_s_huge_pages() -> None:
    smaps = full_smaps("lab-thp")
    # the capture's two 1 GiB anonymous mappings: the guest's RAM (rw-p, 225,280 KiB of it
    # in THP) and TCG's code buffer (rwxp, 468,992 KiB in THP)
    assert "7f80c8000000-7f8107fff000 rwxp 00000000 00:00 0" in smaps
    counted = qemu_memory(smaps)
    assert summed(smaps, "AnonHugePages") - counted["AnonHugePages"] == 468_992
    assert counted["AnonHugePages"] == 225_280 + 2_048  # the RAM and one more (QEMU's heap)
    read = host({"/run/libvirt/qemu/lab-thp.pid": "18798\n", "/proc/18798/smaps": smaps})
    said = describe("lab-thp", backing_facts(read, "lab-thp", THP_XML))
    assert said is not None and "22 % of its 1,048,576 KiB of RAM" in said  # not 66 %


def test_the_hugetlb_twin_keeps_its_hugetlb_pages_and_loses_only_tcg_s_buffer() -> None:
    smaps = full_smaps("lab-shp1g")
    counted = qemu_memory(smaps)
    assert counted["Private_Hugetlb"] == 1_048_576  # its RAM, on a 1 GiB page
    assert summed(smaps, "AnonHugePages") == 473_088 and counted["AnonHugePages"] == 2_048


def test_split_wx_s_writable_view_of_the_buffer_is_left_out_too() -> None:
    text = (
        "7f0000000000-7f0040000000 rw-s 00000000 00:01 1234 /memfd:tcg-jit (deleted)\n"
        "Rss:  4096 kB\nAnonHugePages:  0 kB\n"
        "7f0040000000-7f0080000000 r-xs 00000000 00:01 1234 /memfd:tcg-jit (deleted)\n"
        "Rss:  4096 kB\n"
        "7f1000000000-7f1040000000 rw-p 00000000 00:00 0 \n"
        "Rss:  1000 kB\nAnonHugePages:  512 kB\n"
        "7f2000000000-7f2000001000 r-xp 00000000 fe:00 99 /usr/bin/qemu-system-x86_64\n"
        "Rss:  4 kB\n"
    )
    assert qemu_memory(text) == {"Rss": 1004, "AnonHugePages": 512, "Shared_Hugetlb": 0,
                                 "Private_Hugetlb": 0}  # fmt: skip
