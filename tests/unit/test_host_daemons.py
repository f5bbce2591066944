"""Daemons without an init system: found by pid file or name, started once, stopped by pid."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from lab.core.clock import ManualClock
from lab.core.errors import LabError
from lab.core.hostexec import RecordingHost, Result
from lab.host.daemons import (
    LIBVIRTD,
    Daemon,
    ensure_running,
    find_pid,
    has_systemd,
    is_running,
    restart,
    stop,
)


def add_process(proc: Path, pid: int, comm: str) -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "comm").write_text(comm + "\n")


class ProcessHost(RecordingHost):
    """Starting a daemon's argv makes its process appear; kill -TERM makes it go."""

    def __init__(self, proc: Path, daemon: Daemon, pid: int = 4242) -> None:
        super().__init__()
        self.proc = proc
        self.daemon = daemon
        self.pid = pid

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        input: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        hint: str | None = None,
    ) -> Result:
        result = super().run(argv, check=check, input=input, timeout=timeout, env=env, hint=hint)
        if tuple(argv) == self.daemon.argv:
            add_process(self.proc, self.pid, self.daemon.comm)
            if self.daemon.pidfile:
                Path(self.daemon.pidfile).write_text(f"{self.pid}\n")
        elif argv[:2] == ["kill", "-TERM"]:
            import shutil

            shutil.rmtree(self.proc / str(argv[2]))
        return result


@pytest.fixture
def proc(tmp_path: Path) -> Path:
    root = tmp_path / "proc"
    add_process(root, 1, "init")
    add_process(root, 77, "bash")
    return root


def daemon_in(tmp_path: Path, **overrides: object) -> Daemon:
    fields: dict[str, object] = {
        "name": "toyd",
        "argv": ("toyd", "-d"),
        "comm": "toyd",
        "unit": "toyd",
        "pidfile": str(tmp_path / "toyd.pid"),
        "socket": None,
    }
    fields.update(overrides)
    return Daemon(**fields)  # type: ignore[arg-type]


def test_systemd_is_detected_by_its_runtime_directory(tmp_path: Path) -> None:
    assert not has_systemd(tmp_path)
    (tmp_path / "run/systemd/system").mkdir(parents=True)
    assert has_systemd(tmp_path)


def test_find_pid_by_pid_file_then_by_name(tmp_path: Path, proc: Path) -> None:
    toyd = daemon_in(tmp_path)
    assert find_pid(toyd, proc) is None
    add_process(proc, 500, "toyd")
    assert find_pid(toyd, proc) == 500  # by name
    add_process(proc, 600, "toyd")
    Path(toyd.pidfile or "").write_text("600\n")
    assert find_pid(toyd, proc) == 600  # the pid file wins


def test_a_stale_pid_file_of_another_process_is_ignored(tmp_path: Path, proc: Path) -> None:
    toyd = daemon_in(tmp_path, by_name=False)
    Path(toyd.pidfile or "").write_text("77\n")  # pid 77 is bash now
    assert find_pid(toyd, proc) is None


def test_running_needs_a_listening_socket(tmp_path: Path, proc: Path) -> None:
    import socket
    import tempfile

    sock = Path(tempfile.mkdtemp(dir="/tmp")) / "toyd.sock"  # AF_UNIX paths: 107 bytes at most
    toyd = daemon_in(tmp_path, socket=str(sock))
    add_process(proc, 500, "toyd")
    assert not is_running(toyd, proc)
    sock.write_text("")  # a stale socket file left by the process before a restart
    assert not is_running(toyd, proc)
    sock.unlink()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(sock))
        server.listen()
        assert is_running(toyd, proc)
    sock.unlink()
    sock.parent.rmdir()


def test_ensure_running_starts_once(tmp_path: Path, proc: Path) -> None:
    toyd = daemon_in(tmp_path)
    host = ProcessHost(proc, toyd)
    assert ensure_running(host, toyd, systemd=False, clock=ManualClock(), proc_root=proc) == 4242
    assert host.commands == [("toyd", "-d")]
    assert ensure_running(host, toyd, systemd=False, clock=ManualClock(), proc_root=proc) is None
    assert host.commands == [("toyd", "-d")]


def test_ensure_running_through_systemd(tmp_path: Path, proc: Path) -> None:
    toyd = daemon_in(tmp_path)
    host = ProcessHost(proc, daemon_in(tmp_path, argv=("systemctl", "start", "toyd")))
    assert ensure_running(host, toyd, systemd=True, clock=ManualClock(), proc_root=proc) is None
    assert host.commands == [("systemctl", "start", "toyd")]


def test_a_daemon_that_never_comes_up_times_out(tmp_path: Path, proc: Path) -> None:
    toyd = daemon_in(tmp_path)
    host = RecordingHost()  # runs nothing: the process never appears
    with pytest.raises(LabError, match="timed out after 20 s waiting for toyd to start"):
        ensure_running(host, toyd, systemd=False, clock=ManualClock(), proc_root=proc)


def test_stop_signals_only_the_recorded_daemon(tmp_path: Path, proc: Path) -> None:
    toyd = daemon_in(tmp_path)
    host = ProcessHost(proc, toyd)
    stop(host, toyd, 77, systemd=False, clock=ManualClock(), proc_root=proc)  # 77 is bash
    assert host.commands == []
    add_process(proc, 500, "toyd")
    stop(host, toyd, 500, systemd=False, clock=ManualClock(), proc_root=proc)
    assert host.commands == [("kill", "-TERM", "500")]
    assert not (proc / "500").exists()


def test_restart_stops_then_starts(tmp_path: Path, proc: Path) -> None:
    toyd = daemon_in(tmp_path)
    add_process(proc, 500, "toyd")
    host = ProcessHost(proc, toyd, pid=501)
    assert restart(host, toyd, systemd=False, clock=ManualClock(), proc_root=proc) == 501
    assert host.commands == [("kill", "-TERM", "500"), ("toyd", "-d")]


def test_libvirtd_is_started_as_environment_md_says() -> None:
    assert LIBVIRTD.argv == ("libvirtd", "-d")
    assert LIBVIRTD.fix(systemd=False) == "libvirtd -d"
    assert LIBVIRTD.fix(systemd=True) == "systemctl start libvirtd"
