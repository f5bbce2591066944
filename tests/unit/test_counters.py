"""Counters from the host: ``perf stat -x,`` parsed (captured here on a guest's vCPU thread
under TCG: software events count, hardware ones are <not supported> in this nested VM;
the hardware lines follow perf-stat(1)'s CSV format), and counting windows on real threads
through perf_event_open(2)."""

from __future__ import annotations

import errno
import os
import struct
import threading
import time
from pathlib import Path

import pytest

from lab.core.clock import ManualClock
from lab.host.perf import (
    HARDWARE,
    SOFTWARE,
    counted,
    derived,
    events_for,
    parse_perf_csv,
    refused,
)
from lab.host.perfevent import attr, open_counter
from lab.run.counters import Counting, probe

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


class Spinner:
    """A thread of this process that burns CPU until told to stop (a vCPU thread's part)."""

    def __init__(self) -> None:
        self.stop, self.tid = threading.Event(), 0
        ready = threading.Event()

        def spin() -> None:
            self.tid = threading.get_native_id()
            ready.set()
            while not self.stop.is_set():
                pass

        self.thread = threading.Thread(target=spin, daemon=True)
        self.thread.start()
        ready.wait()

    def end(self) -> None:
        self.stop.set()
        self.thread.join()


def test_a_window_counts_the_threads_cpu_time_and_nothing_outside_it() -> None:
    spinner = Spinner()
    counting = Counting(os.getpid(), SOFTWARE, [spinner.tid])
    try:
        for seconds in (0.05, 0.3):
            time.sleep(0.2)  # spinning before the window: not counted
            t0 = time.perf_counter()
            counting.start()
            time.sleep(seconds)
            found = counting.stop()["task-clock"].value
            window = (time.perf_counter() - t0) * 1e3
            # one thread is on a CPU at most the whole window (on a loaded machine, part of
            # it); what it burnt in the 0.2 s before would show as more
            assert found is not None and 0 < found <= window * 1.02 + 1.0, (found, window)
        assert counting.stop() == {}  # stopped once
    finally:
        counting.close()
        spinner.end()


def test_events_the_kernel_refuses_are_said_not_supported_and_the_others_count() -> None:
    def opener(event: str, tid: int) -> int:
        if event in HARDWARE:  # as in a nested VM without a PMU
            raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
        return open_counter(event, tid)

    found = probe(SOFTWARE + HARDWARE, [threading.get_native_id()], ManualClock(), opener)
    assert counted(found, SOFTWARE + HARDWARE) == SOFTWARE
    assert refused(found, SOFTWARE + HARDWARE) == [f"{e} (<not supported>)" for e in HARDWARE]
    assert found["task-clock"].unit == "msec" and found["page-faults"].metric_unit == "count"


def test_the_attribute_is_the_kernels_first_layout() -> None:
    # linux/perf_event.h: PERF_ATTR_SIZE_VER0 is 64; type, size and config lead; the
    # dTLB load misses are PERF_TYPE_HW_CACHE (3) with DTLB (3) | OP_READ (0) << 8 |
    # RESULT_MISS (1) << 16; "disabled" is the flags' first bit
    kind, size, config, _, _, read_format, flags = struct.unpack_from(
        "=IIQQQQQ", attr("dTLB-load-misses")
    )
    assert (kind, size, config) == (3, 64, 0x10003) and len(attr("cycles")) == 64
    assert read_format == 3 and flags & 1


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
