"""When the runner fsyncs its journal: never a command started with an unsynced line.

The runner is run in this process, with ``os.fsync`` and ``subprocess.Popen`` watched: at
each fsync of the journal the test notes how many lines the file holds, and at each command
start it checks that every line written so far was covered by an fsync.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.unit.test_workloads import runner_module


def run_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **spec: Any) -> list[str]:
    """Serve a run of ``spec``; return the trace: "fsync N" and "spawn N/M" (N lines synced,
    M written, at the moment a command started)."""
    runner: ModuleType = runner_module()
    files = runner.Files(tmp_path, "fsync")
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

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        trace.append(f"spawn {synced}/{lines()}")
        return real_popen(*args, **kwargs)

    real_fsync, real_popen = os.fsync, subprocess.Popen
    monkeypatch.setattr(runner.os, "fsync", fsync)
    monkeypatch.setattr(runner.subprocess, "Popen", popen)
    data = {"workload": "test", "argv": ["true"], "end_iteration": 4, **spec}
    parsers = runner.load_parsers()
    served = runner.Runner(files, runner.parse_spec(data, list(parsers.PARSERS)), parsers)
    assert served.serve() == 0
    return trace


def test_one_fsync_per_attempt_and_none_missing_when_a_command_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = run_in_process(tmp_path, monkeypatch)
    spawns = [t for t in trace if t.startswith("spawn")]
    assert len(spawns) == 4
    assert all(synced == written for synced, written in (s[6:].split("/") for s in spawns))
    # start, then per attempt its begin line (whose fsync covers the previous result), done
    assert trace.count("fsync 0") == 0
    assert len([t for t in trace if t.startswith("fsync")]) == 1 + 4 + 1
    assert trace[-1] == "fsync 10"  # start + 4 x (begin, result) + done, all synced


def test_a_clean_step_makes_the_result_line_sync_by_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = run_in_process(tmp_path, monkeypatch, clean_argv=["true"])
    spawns = [t for t in trace if t.startswith("spawn")]
    assert len(spawns) == 8  # clean and timed command per attempt
    assert all(synced == written for synced, written in (s[6:].split("/") for s in spawns))
    assert len([t for t in trace if t.startswith("fsync")]) == 1 + 4 * 2 + 1
