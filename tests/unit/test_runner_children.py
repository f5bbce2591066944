"""One command at a time (lab.inguest.child.Children), run in this process: what a command
leaves behind, stops and timeouts through the signal handlers, and a restart's orphans."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from lab.inguest import child as child_module
from lab.inguest.child import Children, processes
from lab.inguest.runfiles import RunFiles

pytestmark = pytest.mark.usefixtures("runner_signals")


@pytest.fixture
def children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Children:
    monkeypatch.chdir(tmp_path)  # the runner moves to its commands' folder; this puts it back
    made = Children(RunFiles(tmp_path, "c"))
    made.open_scratch()
    made.install_signals()  # restored by the runner_signals fixture
    return made


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_commands_leave_no_descriptor_and_no_timer_behind(
    children: Children, tmp_path: Path
) -> None:
    children.run(["true"], tmp_path, dict(os.environ), None)  # the first opens what stays
    before = open_fds()
    for _ in range(5):
        child = children.run(["sh", "-c", "echo out; exit 3"], tmp_path, dict(os.environ), 60)
        assert (child.exit_status, child.error) == (3, "sh exited with status 3")
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no alarm after it
    assert open_fds() == before


def test_a_stop_asked_before_the_command_starts_ends_it_at_once(
    children: Children, tmp_path: Path
) -> None:
    """The signal came while no command ran: its handler had nothing to end."""
    os.kill(os.getpid(), signal.SIGTERM)
    assert children.stop_requested
    child = children.run(["sleep", "30"], tmp_path, dict(os.environ), None)
    assert child.stopped and child.error == "stopped: the runner was asked to stop"
    assert child.exit_status == -signal.SIGTERM
    assert child.wall is not None and child.wall < 5


def test_a_stop_ends_the_running_command(children: Children, tmp_path: Path) -> None:
    asked = time.time()
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    child = children.run(["sleep", "30"], tmp_path, dict(os.environ), None)
    assert child.stopped and child.exit_status == -signal.SIGTERM
    # Ended by the stop, not before it (nor at its own end). Not "wall >= 0.3": on a loaded
    # machine the command may start after the timer did, and the stop then comes sooner.
    assert child.ended is not None and child.ended - asked >= 0.3
    assert child.wall is not None and child.wall < 5


def test_a_command_past_its_timeout_is_terminated_then_killed(
    children: Children, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = children.run(["sleep", "30"], tmp_path, dict(os.environ), 0.3)
    assert slow.error == "timed out after 0.3 s and was killed"
    assert slow.exit_status == -signal.SIGTERM
    assert slow.wall is not None and 0.3 <= slow.wall < 5
    monkeypatch.setattr(child_module, "KILL_GRACE_S", 0.3)
    deaf = ["sh", "-c", "trap '' TERM; sleep 30"]  # the sleep ignores SIGTERM too
    stubborn = children.run(deaf, tmp_path, dict(os.environ), 0.3)
    assert stubborn.error == "timed out after 0.3 s and was killed"
    assert stubborn.exit_status == -signal.SIGKILL
    assert stubborn.wall is not None and 0.6 <= stubborn.wall < 5
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_command_needs_the_signal_handlers(tmp_path: Path) -> None:
    bare = Children(RunFiles(tmp_path, "c"))
    bare.open_scratch()
    with pytest.raises(RuntimeError, match="install_signals"):
        bare.run(["true"], tmp_path, dict(os.environ), None)


def test_a_restart_ends_what_an_iteration_left_running_and_nothing_else(
    children: Children, tmp_path: Path
) -> None:
    """Only processes with this run's marks and an iteration: not a daemon its setup
    command started, not another run's command."""

    def sleeper(**env: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["sleep", "30"], env={**os.environ, **env}, start_new_session=True)

    marks = children.mark
    other = {**marks, "LAB_RUN_KEY": "another-run"}
    left = sleeper(**marks, LAB_ITERATION="4", LAB_ATTEMPT="1")
    daemon, stranger = sleeper(**marks), sleeper(**other, LAB_ITERATION="4")
    said: list[str] = []
    try:
        assert {left.pid, daemon.pid, stranger.pid} <= set(processes())
        assert os.getpid() not in processes()
        children.end_orphans(said.append, lambda: [left.pid, daemon.pid, stranger.pid])
        assert left.wait(timeout=5) == -signal.SIGKILL
        assert daemon.poll() is None and stranger.poll() is None
        assert said == [f"ending process group {left.pid}, left running by a killed runner"]
    finally:
        for proc in (left, daemon, stranger):
            proc.kill()
            proc.wait()


def test_a_group_left_running_is_ended_once(children: Children) -> None:
    """A shell and the command it started share a group: one signal, one line for both."""
    env = {**os.environ, **children.mark, "LAB_ITERATION": "2", "LAB_ATTEMPT": "1"}
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & wait"], env=env, start_new_session=True)
    said: list[str] = []
    try:
        deadline = time.monotonic() + 5
        while len([p for p in processes() if group_of(p) == shell.pid]) < 2:
            assert time.monotonic() < deadline, "the shell did not start its command"
            time.sleep(0.01)
        children.end_orphans(said.append)  # every process of this machine looked at
        assert shell.wait(timeout=5) == -signal.SIGKILL
        assert said == [f"ending process group {shell.pid}, left running by a killed runner"]
    finally:
        shell.kill()
        shell.wait()


def group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:  # gone meanwhile
        return None
