"""When the runner writes and fsyncs its journal (the rule in lab/inguest/journalfile.py).

The runner is run in this process, with ``os.fsync`` and ``os.posix_spawn`` watched: at
each fsync of the journal the test notes how many lines the file holds, and at each command
start how many lines are written and how many are covered by an fsync.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lab.inguest import child, journalfile
from lab.inguest.journalfile import GROUP_S
from lab.inguest.runfiles import RunFiles
from lab.inguest.runner import Runner
from lab.inguest.spec import parse_spec
from lab.parsers import tools

pytestmark = pytest.mark.usefixtures("runner_signals")


def run_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Callable[[], float], **spec: Any
) -> list[str]:
    """Serve a run of ``spec``; return the trace: "fsync N" and "spawn N/M" (N lines synced,
    M written, at the moment a command started)."""
    monkeypatch.chdir(tmp_path)  # the runner moves to its commands' folder: restored after
    files = RunFiles(tmp_path, "fsync")
    journal = files.path("journal")
    trace: list[str] = []
    synced = 0

    def lines() -> int:
        return journal.read_bytes().count(b"\n") if journal.exists() else 0

    def fsync(fd: int) -> None:
        nonlocal synced
        real_fsync(fd)
        if os.path.realpath(f"/proc/self/fd/{fd}") == str(journal):
            synced = lines()
            trace.append(f"fsync {synced}")

    def spawn(*args: Any, **kwargs: Any) -> int:
        trace.append(f"spawn {synced}/{lines()}")
        return real_spawn(*args, **kwargs)

    real_fsync, real_spawn = os.fsync, os.posix_spawn
    monkeypatch.setattr(journalfile.os, "fsync", fsync)
    monkeypatch.setattr(child.os, "posix_spawn", spawn)
    data = {"workload": "test", "argv": ["true"], "end_iteration": 4, **spec}
    runner = Runner(files, parse_spec(data, tools.PARSERS), lambda message: None, clock)
    runner.children.install_signals()  # restored by the runner_signals fixture
    assert runner.serve() == 0
    return trace


def spawns(trace: list[str]) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in (t[6:].split("/") for t in trace if t[:5] == "spawn")]


def test_quick_attempts_share_fsyncs_and_every_line_is_written_before_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = run_in_process(tmp_path, monkeypatch, clock=lambda: 0.0)  # all within one group
    # written: synced, start, synced, then per attempt its begin (before its command) and
    # its result
    assert [written for _, written in spawns(trace)] == [4, 6, 8, 10]
    # fsyncs: on open, after start, after done; none per attempt
    assert trace.count("fsync 0") == 1 and [t for t in trace if t[:5] == "fsync"][1:] == [
        "fsync 2",
        "fsync 12",  # synced, start, synced, 4 x (begin, result), done
    ]


def test_attempts_a_group_apart_have_their_begin_on_disk_before_their_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = itertools.count()
    trace = run_in_process(tmp_path, monkeypatch, clock=lambda: next(ticks) * GROUP_S)
    assert len(spawns(trace)) == 4
    # on disk: everything but the synced line that says so
    assert all(written == synced + 1 for synced, written in spawns(trace)), trace


def test_a_clean_step_is_untimed_and_changes_nothing_of_the_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = itertools.count()
    clock = lambda: next(ticks) * GROUP_S  # noqa: E731
    trace = run_in_process(tmp_path, monkeypatch, clock=clock, clean_argv=["true"])
    timed = spawns(trace)[1::2]  # clean and timed command per attempt
    assert len(spawns(trace)) == 8
    assert all(written == synced + 1 for synced, written in timed), trace


def test_a_result_goes_out_with_the_next_begin_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = str(tmp_path / "fsync.journal")
    lines_per_write: list[int] = []
    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        if os.path.realpath(f"/proc/self/fd/{fd}") == journal:
            lines_per_write.append(data.count(b"\n"))
        return real_write(fd, data)

    monkeypatch.setattr(journalfile.os, "write", write)
    run_in_process(tmp_path, monkeypatch, clock=lambda: 0.0)
    # synced, start, synced, the first begin; then each result with the next begin, the last
    # one with done; and the synced line that follows done's fsync
    assert lines_per_write == [1, 1, 1, 1, 2, 2, 2, 2, 1]


def test_a_result_is_written_before_the_next_clean_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = run_in_process(tmp_path, monkeypatch, clock=lambda: 0.0, clean_argv=["true"])
    clean = [written for _, written in spawns(trace)[0::2]]
    assert clean == [3, 5, 7, 9]  # synced, start, synced; then each attempt's begin and result
