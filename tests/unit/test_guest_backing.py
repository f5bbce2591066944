"""The guest's own THP counters around an iteration (lab.inguest.backing), read from
/proc/vmstat and /proc/meminfo captured in lab-thp under TCG."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.inguest import backing

CAPTURES = Path(__file__).parents[1] / "fixtures" / "captures"
VMSTAT = (CAPTURES / "guest-proc-vmstat-thp-tcg.txt").read_text()
MEMINFO = (CAPTURES / "guest-proc-meminfo-thp-tcg.txt").read_text()


def test_the_captured_vmstat_gives_the_four_thp_counters_and_nothing_else() -> None:
    found = backing.parse_vmstat(VMSTAT)
    assert found == {"thp_fault_alloc": 1, "thp_fault_fallback": 0,
                     "thp_collapse_alloc": 3, "thp_split_page": 0}  # fmt: skip
    # thp_fault_fallback_charge shares a prefix with a counter; it is not that counter
    assert "thp_fault_fallback_charge" in VMSTAT


def test_anon_huge_pages_from_the_captured_meminfo() -> None:
    assert backing.parse_anon_huge_kib(MEMINFO) == 2048
    assert backing.parse_anon_huge_kib("MemTotal: 1 kB\n") is None


def test_an_iterations_metrics_are_the_counters_differences_and_the_huge_pages_after() -> None:
    before = backing.parse_vmstat(VMSTAT)
    after_text = VMSTAT.replace("thp_fault_alloc 1\n", "thp_fault_alloc 41\n")
    files = {"/proc/vmstat": after_text, "/proc/meminfo": MEMINFO}
    found = backing.after(before, files.__getitem__)
    assert found == {
        "backing.guest_thp_fault_alloc": 40.0, "backing.guest_thp_fault_fallback": 0.0,
        "backing.guest_thp_collapse_alloc": 0.0, "backing.guest_thp_split_page": 0.0,
        "backing.guest_anon_huge_kib": 2048.0,
    }  # fmt: skip
    assert set(found) == set(backing.METRICS)


def test_a_kernel_without_thp_gives_no_metrics_rather_than_zeros() -> None:
    def unreadable(path: str) -> str:
        raise FileNotFoundError(path)

    assert backing.counters(unreadable) == {}
    assert backing.after({}, unreadable) == {}
    no_thp = {"/proc/vmstat": "nr_free_pages 1\n", "/proc/meminfo": "MemTotal: 1 kB\n"}
    assert backing.after({}, no_thp.__getitem__) == {}


@pytest.mark.parametrize("line", ["thp_fault_alloc", "thp_fault_alloc x", "thp_fault_alloc -1"])
def test_a_damaged_counter_line_is_left_out(line: str) -> None:
    assert "thp_fault_alloc" not in backing.parse_vmstat(line + "\n")
