"""The /proc readers of lab.host.telemetry on text captured from a host (tests/fixtures/host),
each expected figure computed here another way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.core.hostexec import RecordingHost
from lab.host.telemetry import (
    HostTelemetry,
    parse_buddyinfo,
    parse_vmstat,
    per_cpu_pages,
    smaps_kib,
    thp_counters,
    unusable_index,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "host"
BUDDYINFO = (FIXTURES / "host-proc-buddyinfo.txt").read_text()
VMSTAT = (FIXTURES / "host-proc-vmstat.txt").read_text()
ZONEINFO = (FIXTURES / "host-proc-zoneinfo.txt").read_text()
ROLLUP = (FIXTURES / "host-proc-pid-smaps_rollup-thp.txt").read_text()


def reference_index(text: str, order: int) -> float:
    """Gorman's Fu(order) by regular expressions and powers, summed over every zone."""
    total = usable = 0
    for counts in re.findall(r"zone\s+\w+((?:\s+\d+)+)", text):
        for i, k in enumerate(int(c) for c in counts.split()):
            total += k * 2**i
            usable += k * 2**i if i >= order else 0
    return 1 - usable / total


def test_buddyinfo_of_this_host_gives_the_index_computed_independently() -> None:
    zones = parse_buddyinfo(BUDDYINFO)
    assert [z.zone for z in zones] == ["DMA", "DMA32", "Normal"]
    assert all(len(z.blocks) == 11 for z in zones)  # orders 0..10 (MAX_PAGE_ORDER 10)
    for order in (0, 4, 9, 10):
        assert unusable_index(BUDDYINFO, order) == pytest.approx(reference_index(BUDDYINFO, order))
    assert unusable_index(BUDDYINFO, 0) == 0.0  # every free page serves an order-0 request


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # 512 free single pages and one free 2 MiB block: half the free memory is unusable
        ("Node 0, zone   Normal " + " ".join(["512"] + ["0"] * 8 + ["1", "0"]), 0.5),
        # only scattered pages in two zones of two nodes
        (
            "Node 0, zone DMA32 3 1 0 0 0 0 0 0 0 0 0\nNode 1, zone Normal 0 0 0 0 0 0 0 0 1 0 0",
            1.0,
        ),
        # only 4 MiB blocks
        ("Node 0, zone Normal 0 0 0 0 0 0 0 0 0 0 7", 0.0),
        ("", 0.0),  # nothing free
    ],
)
def test_index_on_hand_made_tables(text: str, expected: float) -> None:
    assert unusable_index(text) == pytest.approx(expected)


def test_vmstat_counters_of_this_host() -> None:
    expected = {
        name: int(value)
        for name, value in re.findall(r"^(\w+) (-?\d+)$", VMSTAT, flags=re.MULTILINE)
    }
    assert parse_vmstat(VMSTAT) == expected
    thp = thp_counters(VMSTAT)
    assert thp.fault_alloc == expected["thp_fault_alloc"]
    assert thp.fault_fallback == expected["thp_fault_fallback"]
    assert set(thp.compact) == {k for k in expected if k.startswith("compact_")}
    assert "compact_stall" in thp.compact and "thp_fault_alloc" not in thp.compact
    reset = VMSTAT.replace(f"thp_fault_alloc {thp.fault_alloc}\n", "thp_fault_alloc 0\n")
    later = thp_counters(reset)
    assert later.since(thp).fault_alloc == -thp.fault_alloc


def test_anon_huge_pages_of_a_process_with_64_mib_of_thp() -> None:
    # captured from a process that faulted 64 MiB with MADV_HUGEPAGE: 32 huge pages
    assert smaps_kib(ROLLUP) == 64 * 1024
    assert smaps_kib(ROLLUP, "Rss") == int(re.search(r"Rss:\s+(\d+) kB", ROLLUP)[1])  # type: ignore[index]
    # smaps (one block per mapping): the sum
    assert smaps_kib("AnonHugePages:  2048 kB\nRss: 9 kB\nAnonHugePages:  4096 kB\n") == 6144


def test_host_telemetry_reads_each_file_through_the_host() -> None:
    host = RecordingHost(
        files={
            "/proc/buddyinfo": BUDDYINFO,
            "/proc/vmstat": VMSTAT,
            "/proc/4242/smaps_rollup": ROLLUP,
        }
    )
    telemetry = HostTelemetry(host)
    assert telemetry.unusable_index() == pytest.approx(reference_index(BUDDYINFO, 9))
    space = telemetry.free_space()
    assert space.free_bytes == sum(
        int(k) * 4096 * 2**i
        for counts in re.findall(r"zone\s+\w+((?:\s+\d+)+)", BUDDYINFO)
        for i, k in enumerate(counts.split())
    )
    assert telemetry.thp_counters() == thp_counters(VMSTAT)
    assert telemetry.anon_huge_kib(4242) == 65536


def test_per_cpu_pages_of_this_host() -> None:
    # two CPUs, three zones: one pageset per zone and CPU
    counts = [int(n) for n in re.findall(r"^\s+count:\s+(\d+)$", ZONEINFO, flags=re.MULTILINE)]
    floors = [int(n) for n in re.findall(r"^\s+high_min:\s+(\d+)$", ZONEINFO, re.MULTILINE)]
    assert len(counts) == len(floors) == 6
    pcp = per_cpu_pages(ZONEINFO)
    assert (pcp.count, pcp.high_min) == (sum(counts), sum(floors))
    assert pcp.count > 0
    # "nr_free_pages" and the like are not a pageset's count
    assert per_cpu_pages("  nr_free_pages 5\n    count: 3\n    high_min: 8\n").count == 3
