"""The guest's own THP counters around an iteration (lab.inguest.backing), read from
/proc/vmstat captured in lab-thp under TCG; its /proc/meminfo, captured at the same moment,
is the reference for the guest's huge pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.inguest import backing

CAPTURES = Path(__file__).parents[1] / "fixtures" / "captures"
VMSTAT = (CAPTURES / "guest-proc-vmstat-thp-tcg.txt").read_text()
MEMINFO = (CAPTURES / "guest-proc-meminfo-thp-tcg.txt").read_text()


def test_the_captured_vmstat_gives_the_four_thp_counters_and_the_huge_page_count() -> None:
    found = backing.parse_vmstat(VMSTAT)
    assert found == {"thp_fault_alloc": 1, "thp_fault_fallback": 0, "thp_collapse_alloc": 3,
                     "thp_split_page": 0, "nr_anon_transparent_hugepages": 1}  # fmt: skip
    # thp_fault_fallback_charge shares a prefix with a counter; it is not that counter
    assert "thp_fault_fallback_charge" in VMSTAT


def test_the_guest_s_huge_pages_are_what_its_meminfo_said() -> None:
    """vmstat's count of anonymous huge pages times their size is meminfo's AnonHugePages."""
    meminfo_kib = int(re.search(r"^AnonHugePages:\s+(\d+) kB$", MEMINFO, re.M)[1])  # type: ignore[index]
    found = backing.metrics({}, backing.parse_vmstat(VMSTAT), huge_kib=2048)
    assert found == {"backing.guest_anon_huge_kib": float(meminfo_kib)} and meminfo_kib == 2048
    assert backing.metrics({}, backing.parse_vmstat(VMSTAT), huge_kib=None) == {}


def test_the_thp_size_is_read_in_kib_and_absent_without_thp() -> None:
    assert backing.thp_kib({backing.THP_SIZE: "2097152\n"}.__getitem__) == 2048

    def unreadable(path: str) -> str:
        raise FileNotFoundError(path)

    assert backing.thp_kib(unreadable) is None


def test_keys_in_another_order_are_still_found() -> None:
    text = "thp_split_page 4\nthp_fault_alloc 9\nnr_anon_transparent_hugepages 2\n"
    assert backing.parse_vmstat(text) == {
        "thp_split_page": 4, "thp_fault_alloc": 9, "nr_anon_transparent_hugepages": 2
    }  # fmt: skip


def test_an_iterations_metrics_are_the_counters_differences_and_the_huge_pages_after() -> None:
    before = backing.parse_vmstat(VMSTAT)
    after_text = VMSTAT.replace("thp_fault_alloc 1\n", "thp_fault_alloc 41\n")
    found, now = backing.measure(before, {"/proc/vmstat": after_text}.__getitem__, 2048)
    assert found == {
        "backing.guest_thp_fault_alloc": 40.0, "backing.guest_thp_fault_fallback": 0.0,
        "backing.guest_thp_collapse_alloc": 0.0, "backing.guest_thp_split_page": 0.0,
        "backing.guest_anon_huge_kib": 2048.0,
    }  # fmt: skip
    assert set(found) == set(backing.METRICS)
    assert now["thp_fault_alloc"] == 41  # the next attempt's reading before


def test_a_kernel_without_thp_gives_no_metrics_rather_than_zeros() -> None:
    def unreadable(path: str) -> str:
        raise FileNotFoundError(path)

    assert backing.counters(unreadable) == {}
    assert backing.measure({}, unreadable, 2048) == ({}, {})
    no_thp = {"/proc/vmstat": "nr_free_pages 1\n"}
    assert backing.measure({}, no_thp.__getitem__, None) == ({}, {})


@pytest.mark.parametrize("line", ["thp_fault_alloc", "thp_fault_alloc x", "thp_fault_alloc -1"])
def test_a_damaged_counter_line_is_left_out(line: str) -> None:
    assert "thp_fault_alloc" not in backing.parse_vmstat(line + "\n")
