"""Counters from the host: ``perf stat -x,`` parsed (captured here on a guest's vCPU thread
under TCG: software events count, hardware ones are <not supported> in this nested VM;
the hardware lines follow perf-stat(1)'s CSV format), and one counting window."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from lab.core.clock import Clock, ManualClock
from lab.host.perf import HARDWARE, SOFTWARE, derived, events_for, parse_perf_csv
from lab.run.counters import READY_S, Counting

CAPTURE = Path(__file__).parents[1] / "fixtures" / "captures" / "perf-6.1-stat-x-vcpu-tcg.csv"
# perf-stat(1), CSV FORMAT: value, unit, event, run time, percentage, metric value, metric unit
HARDWARE_LINES = (
    "1523456789,,cycles,1000000000,100.00,,\n"
    "2894512345,,instructions,1000000000,100.00,1.90,insn per cycle\n"
    "1234567,,dTLB-load-misses,1000000000,100.00,,\n"
    "<not counted>,,iTLB-load-misses,0,0.00,,\n"
)


def test_software_events_count_and_hardware_ones_are_not_supported_here() -> None:
    found = parse_perf_csv(CAPTURE.read_text())
    assert set(found) == set(SOFTWARE) | set(HARDWARE)
    clock = found["task-clock"]
    assert clock.value == pytest.approx(1.83) and clock.metric == "perf.task_clock"
    assert clock.metric_unit == "ms" and found["page-faults"].metric_unit == "count"
    assert found["context-switches"].value == 27
    assert all(found[e].value is None and found[e].note == "<not supported>" for e in HARDWARE)


def test_tlb_misses_per_1000_instructions_where_both_are_counted() -> None:
    found = parse_perf_csv(HARDWARE_LINES)
    counted = ("cycles", "instructions", "dTLB-load-misses")  # iTLB was <not counted>
    assert derived(found, counted) == {
        "perf.dTLB_load_misses_per_kinstr": pytest.approx(1000 * 1234567 / 2894512345)
    }
    assert derived(found, ("cycles", "dTLB-load-misses")) == {}  # no instructions counted
    assert derived(parse_perf_csv(CAPTURE.read_text()), SOFTWARE) == {}  # this host: no PMU


def test_hardware_lines_in_perfs_documented_format() -> None:
    found = parse_perf_csv(HARDWARE_LINES)
    assert found["instructions"].value == 2894512345 and found["cycles"].value == 1523456789
    assert found["dTLB-load-misses"].metric == "perf.dTLB_load_misses"
    assert found["iTLB-load-misses"].value is None and found["iTLB-load-misses"].note


def test_the_choice_of_events() -> None:
    assert events_for("none") == () and events_for("software") == SOFTWARE
    assert events_for("all") == SOFTWARE + HARDWARE
    with pytest.raises(ValueError, match="one of none, software, all"):
        events_for("some")


# A stand-in for perf: like perf, it sets its own SIGINT handler (so it stops on SIGINT even
# when started with SIGINT ignored, as everything `nohup ... &` starts is), then writes its
# output, which tells Counting.start() it counts, then waits for the SIGINT.
STAND_IN = """
import shutil, signal, sys, time
signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
if sys.argv[1]:
    shutil.copy(sys.argv[1], sys.argv[2])
time.sleep(30)
"""


class FakeHost:
    """perf stands in for itself: a process that writes the captured counts and waits."""

    output: Path | None = CAPTURE

    def __init__(self) -> None:
        self.argv: list[str] = []

    def spawn(self, argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
        self.argv = list(argv)
        out = argv[argv.index("-o") + 1]
        source = str(self.output) if self.output else ""
        return subprocess.Popen([sys.executable, "-c", STAND_IN, source, out])


def test_a_counting_window_starts_perf_on_the_threads_and_reads_it_when_stopped(
    tmp_path: Path,
) -> None:
    host = FakeHost()
    counting = Counting(host, SOFTWARE, [101, 102], tmp_path / "g.csv", Clock())  # type: ignore[arg-type]
    assert counting.start()  # perf wrote its first line: it counts
    assert host.argv[:4] == ["perf", "stat", "-x,", "-e"]
    assert host.argv[host.argv.index("-t") + 1] == "101,102"
    found = counting.stop()
    assert found["page-faults"].value == 0 and found["task-clock"].value == pytest.approx(1.83)
    assert counting.stop() == {}  # stopped once


def test_host_check_lists_the_events_this_host_counts() -> None:
    from lab.host.check import CheckFacts, perf_row

    here = perf_row(CheckFacts(pair=[], perf="/usr/bin/perf",
                               perf_readings=parse_perf_csv(CAPTURE.read_text())))  # fmt: skip
    assert here.state == "ok" and here.detail.startswith("counts task-clock, page-faults")
    assert (
        "dTLB-load-misses (<not supported>)" in here.detail
        and "no hardware counters" in here.detail
    )
    with_pmu = parse_perf_csv(CAPTURE.read_text() + HARDWARE_LINES)
    row = perf_row(CheckFacts(pair=[], perf="/usr/bin/perf", perf_readings=with_pmu))
    assert "instructions" in row.detail.split(";")[0] and "no hardware counters" not in row.detail
    missing = perf_row(CheckFacts(pair=[]))
    assert missing.state == "warn" and missing.fix == "apt-get install linux-perf"


class SilentHost(FakeHost):
    """A perf that starts but never writes its output (stuck, or failing slowly)."""

    output = None


def test_start_waits_for_perf_only_up_to_its_bound_and_says_it_did_not_count(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    counting = Counting(SilentHost(), SOFTWARE, [7], tmp_path / "g.csv", clock)  # type: ignore[arg-type]
    t0 = clock.monotonic()
    assert counting.start() is False
    assert READY_S <= clock.monotonic() - t0 < READY_S + 0.1
    assert counting.stop() == {}  # no output: no counts, and the perf is ended
