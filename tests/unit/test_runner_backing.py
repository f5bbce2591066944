"""The guest's THP counters cost one reading per iteration: the runner (run in this process)
reads /proc/vmstat through descriptors it keeps open, once per attempt, carrying the
reading after one attempt over as the reading before the next unless something ran
between them (a clean command, or a failed attempt that read nothing after)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from lab.inguest import backing
from lab.inguest.backing import ProcFiles
from lab.inguest.runfiles import RunFiles
from lab.inguest.runner import BACKING_EVERY_S, Runner
from lab.inguest.spec import parse_spec
from lab.parsers import tools

pytestmark = pytest.mark.usefixtures("runner_signals")


CAPTURES = Path(__file__).parents[1] / "fixtures" / "captures"
VMSTAT = (CAPTURES / "guest-proc-vmstat-thp-tcg.txt").read_text()


class CountedProc:
    """The captured /proc files, with the THP fault counter going up by 5 at every read of
    /proc/vmstat; counts the reads of each file."""

    def __init__(self) -> None:
        self.reads: dict[str, int] = {}

    def __call__(self, path: str) -> str:
        self.reads[path] = self.reads.get(path, 0) + 1
        faults = 5 * self.reads[path]
        return VMSTAT.replace("thp_fault_alloc 1\n", f"thp_fault_alloc {faults}\n")


class Clock:
    """The runner's monotonic clock, ``step`` seconds on at every look: 1 s stands for
    iterations longer than BACKING_EVERY_S, 0 for iterations that take no time at all."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 1000.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: float = 1.0, **spec: Any
) -> tuple[CountedProc, list[float | None]]:
    """Serve 3 iterations; the reads made and each attempt's thp_fault_alloc difference
    (None: not read around)."""
    monkeypatch.chdir(tmp_path)
    data = {"workload": "test", "argv": ["true"], "end_iteration": 3, "backing": True, **spec}
    runner = Runner(
        RunFiles(tmp_path, "b"), parse_spec(data, tools.PARSERS), lambda m: None, Clock(step)
    )
    runner.proc = proc = CountedProc()  # type: ignore[assignment]
    runner.children.install_signals()  # restored by the runner_signals fixture
    assert runner.serve() == 0
    records = [json.loads(line) for line in (tmp_path / "b.journal").read_text().splitlines()]
    faults = [
        r["metrics"].get("backing.guest_thp_fault_alloc") for r in records if "event" not in r
    ]
    return proc, faults


def test_one_reading_per_iteration_when_iterations_are_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc, faults = serve(tmp_path, monkeypatch)
    assert proc.reads == {"/proc/vmstat": 4}  # one before the first
    # each attempt's difference is one step of the fake's counter, never none or two
    assert faults == [5.0, 5.0, 5.0]


def test_short_iterations_are_read_around_once_per_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attempts that start within BACKING_EVERY_S of the last one read around are not read."""
    proc, faults = serve(tmp_path, monkeypatch, step=0.0)
    assert proc.reads == {"/proc/vmstat": 2}
    assert faults == [5.0, None, None]
    # a long enough pause and the next one is read around again, with a reading of its own
    (tmp_path / "paused").mkdir()
    proc, faults = serve(tmp_path / "paused", monkeypatch, step=BACKING_EVERY_S / 3)
    assert faults[0] == 5.0 and None in faults[1:] and 5.0 in faults[1:], faults


def test_a_clean_command_between_attempts_is_not_counted_in_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc, faults = serve(tmp_path, monkeypatch, clean_argv=["true"])
    assert proc.reads == {"/proc/vmstat": 6}  # read again after each clean
    assert faults == [5.0, 5.0, 5.0]  # the step the clean command's reading took is not in it


def test_proc_files_are_read_anew_through_one_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("a" * 70_000)  # longer than one read
    read = ProcFiles()
    assert read(str(path)) == "a" * 70_000
    fd = read.fds[str(path)]
    path.write_text("thp_fault_alloc 7\n")  # the same file, new contents
    assert read(str(path)) == "thp_fault_alloc 7\n" and read.fds[str(path)] == fd
    assert os.get_inheritable(fd) is False  # a timed command does not inherit it
    found = backing.parse_vmstat(read("/proc/vmstat"))  # and this machine's real one
    assert set(found) <= {*backing.VMSTAT, backing.ANON_THPS}
    read.close()
    assert read.fds == {}
