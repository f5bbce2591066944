"""The daemons the lab needs: started through systemd where it runs, by hand where not.

On a host without an init system (containers, CI machines) nothing starts libvirtd,
virtlogd or rpcbind, so the lab does it, idempotently: a daemon whose process (found by
pid file or process name) is alive and whose socket exists is left alone.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from lab.core.clock import Clock
from lab.core.errors import LabError
from lab.core.hostexec import Host


@dataclass(frozen=True)
class Daemon:
    name: str
    argv: tuple[str, ...]  # how to start it by hand; it must daemonize itself
    comm: str  # its name in /proc/PID/comm
    unit: str  # its systemd unit
    pidfile: str | None = None
    socket: str | None = None  # exists once it accepts clients
    by_name: bool = True  # also recognise it by process name when its pid file is missing

    def fix(self, systemd: bool) -> str:
        return f"systemctl start {self.unit}" if systemd else " ".join(self.argv)


VIRTLOGD = Daemon(
    "virtlogd",
    ("virtlogd", "-d"),
    "virtlogd",
    "virtlogd",
    pidfile="/run/virtlogd.pid",
    socket="/run/libvirt/virtlogd-sock",
)
LIBVIRTD = Daemon(
    "libvirtd",
    ("libvirtd", "-d"),
    "libvirtd",
    "libvirtd",
    pidfile="/run/libvirtd.pid",
    socket="/run/libvirt/libvirt-sock",
)
# -w: warm start, keeps registrations across restarts.
RPCBIND = Daemon("rpcbind", ("rpcbind", "-w"), "rpcbind", "rpcbind", socket="/run/rpcbind.sock")

# The order they must start in: libvirtd logs guest consoles through virtlogd.
BASE_DAEMONS = (VIRTLOGD, LIBVIRTD)


def has_systemd(root: Path = Path("/"), host: Host | None = None) -> bool:
    """True when systemd is the running init (the test systemd itself uses), on ``host``
    (this machine by default)."""
    return (host or Host()).is_dir(root / "run/systemd/system")


def find_pid(daemon: Daemon, proc_root: Path = Path("/proc")) -> int | None:
    """The pid of the running ``daemon``: from its pid file, else by process name."""
    if daemon.pidfile:
        try:
            pid = int(Path(daemon.pidfile).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = 0
        if pid and _comm(proc_root, pid) == daemon.comm:
            return pid
    if not daemon.by_name:
        return None
    for entry in proc_root.iterdir():
        if entry.name.isdigit() and _comm(proc_root, int(entry.name)) == daemon.comm:
            return int(entry.name)
    return None


def alive(daemon: Daemon, pid: int | None, proc_root: Path = Path("/proc")) -> bool:
    """True when ``pid`` is a process of ``daemon`` (not gone, not reused by another)."""
    return pid is not None and _comm(proc_root, pid) == daemon.comm


def _comm(proc_root: Path, pid: int) -> str:
    try:
        return (proc_root / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def started_as_the_lab_does(daemon: Daemon, proc_root: Path = Path("/proc")) -> int | None:
    """The pid of a process whose command line is exactly ``daemon.argv``, as the lab starts
    it by hand: the same daemon, restarted since its pid was recorded."""
    wanted = "\0".join(daemon.argv) + "\0"
    for entry in proc_root.iterdir():
        if not entry.name.isdigit() or _comm(proc_root, int(entry.name)) != daemon.comm:
            continue
        try:
            if (entry / "cmdline").read_bytes().decode(errors="replace") == wanted:
                return int(entry.name)
        except OSError:
            continue
    return None


def is_running(daemon: Daemon, proc_root: Path = Path("/proc")) -> bool:
    if find_pid(daemon, proc_root) is None:
        return False
    return daemon.socket is None or socket_accepts(Path(daemon.socket))


def socket_accepts(path: Path) -> bool:
    """True when a process listens on the UNIX socket ``path`` (a stale file is not enough:
    a restarted daemon's pid appears before it listens again)."""
    if not path.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def ensure_running(
    host: Host,
    daemon: Daemon,
    *,
    systemd: bool,
    clock: Clock | None = None,
    proc_root: Path = Path("/proc"),
    timeout: float = 20.0,
) -> int | None:
    """Start ``daemon`` unless it runs. Returns the pid of a process it started, else None."""
    if is_running(daemon, proc_root):
        return None
    if systemd:
        host.run(["systemctl", "start", daemon.unit])
    else:
        host.run(list(daemon.argv), hint=f"Start it by hand to see why: {' '.join(daemon.argv)}")
    wait_until(lambda: is_running(daemon, proc_root), f"{daemon.name} to start", timeout, clock)
    return None if systemd else find_pid(daemon, proc_root)


def stop(
    host: Host,
    daemon: Daemon,
    pid: int | None,
    *,
    systemd: bool,
    clock: Clock | None = None,
    proc_root: Path = Path("/proc"),
    timeout: float = 20.0,
) -> None:
    """Stop ``daemon``: through systemd, or by signalling the pid the lab started."""
    if systemd:
        host.run(["systemctl", "stop", daemon.unit])
        return
    if pid is None or not alive(daemon, pid, proc_root):
        return  # already gone (or the pid now belongs to something else)
    host.run(["kill", "-TERM", str(pid)], check=False)
    wait_until(lambda: not alive(daemon, pid, proc_root), f"{daemon.name} to stop", timeout, clock)


def restart(
    host: Host,
    daemon: Daemon,
    *,
    systemd: bool,
    clock: Clock | None = None,
    proc_root: Path = Path("/proc"),
) -> int | None:
    """Restart ``daemon`` so it rereads its configuration; returns the new pid (no systemd)."""
    if systemd:
        host.run(["systemctl", "restart", daemon.unit])
        return None
    stop(host, daemon, find_pid(daemon, proc_root), systemd=False, clock=clock, proc_root=proc_root)
    return ensure_running(host, daemon, systemd=False, clock=clock, proc_root=proc_root)


def wait_until(
    ready: object, what: str, timeout: float, clock: Clock | None = None, interval: float = 0.2
) -> None:
    """Poll ``ready()`` until it is true; a :class:`LabError` after ``timeout`` seconds."""
    assert callable(ready)
    clock = clock or Clock()
    deadline = clock.monotonic() + timeout
    while not ready():
        if clock.monotonic() >= deadline:
            raise LabError(
                f"timed out after {timeout:.0f} s waiting for {what}",
                hint="Look at the daemon's log (syslog or its -L file), then retry",
            )
        clock.sleep(interval)
