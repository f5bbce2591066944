"""The lab's NFS export: build trees live on the host, guests mount them over the lab network.

The host's kernel server (nfsd) is used where the kernel has it; elsewhere (containers,
these CI machines) NFS-Ganesha serves from user space. Either way the export is
``<state_dir>/nfs``, NFSv4 only, to the lab subnet only, with root squashed. The export
directory is world-writable and sticky so the guests' build user (uid 1000) can write.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from lab.core.clock import Clock
from lab.core.errors import LabError
from lab.core.hostexec import Host
from lab.host.daemons import Daemon
from lab.host.facts import parse_proc_filesystems

KERNEL = "kernel"
GANESHA = "ganesha"
NFS_PORT = 2049
PSEUDO = "/lab"
EXPORT_ID = 77
EXPORTS_FILE = "/etc/exports.d/lab.exports"

GANESHA_TEMPLATE = """\
# Written by `lab host prepare`; removed by `lab host release`.
NFS_CORE_PARAM {{
    Protocols = 4;
    Bind_addr = {host_ip};
    NFS_Port = {port};
    Enable_UDP = false;
    Enable_NLM = false;
    Enable_RQUOTA = false;
}}

NFSV4 {{
    # Nothing to reclaim after a restart of a lab server: serve at once.
    Graceless = true;
    # Owners as bare uids: the guests' users (lab = 1000) have no names on the host, and
    # name mapping would show them as nobody and refuse their writes.
    Only_Numeric_Owners = true;
    RecoveryRoot = "{recovery_dir}";
}}

EXPORT {{
    Export_Id = {export_id};
    Path = "{export_dir}";
    Pseudo = "{pseudo}";
    Protocols = 4;
    Transports = TCP;
    SecType = sys;
    Squash = root_squash;
    Anonymous_uid = 65534;
    Anonymous_gid = 65534;
    # Nobody but the lab subnet: the default is no access at all.
    Access_Type = None;
    FSAL {{
        Name = VFS;
    }}
    CLIENT {{
        Clients = {subnet};
        Access_Type = RW;
    }}
}}
"""


@dataclass(frozen=True)
class NfsExport:
    """What a guest needs to mount the lab's export."""

    server: str  # "kernel" or "ganesha"
    host_ip: str
    export_dir: Path
    remote_path: str  # the path a client mounts

    @property
    def source(self) -> str:
        """``mount -t nfs4 -o vers=4.1 SOURCE /mnt``."""
        return f"{self.host_ip}:{self.remote_path}"


@dataclass(frozen=True)
class GaneshaFiles:
    directory: Path

    @property
    def config(self) -> Path:
        return self.directory / "ganesha.conf"

    @property
    def log(self) -> Path:
        return self.directory / "ganesha.log"

    @property
    def pidfile(self) -> Path:
        return self.directory / "ganesha.pid"

    @property
    def recovery(self) -> Path:
        return self.directory / "recovery"

    def daemon(self) -> Daemon:
        return Daemon(
            name="ganesha.nfsd",
            argv=(
                "ganesha.nfsd",
                "-f",
                str(self.config),
                "-L",
                str(self.log),
                "-p",
                str(self.pidfile),
            ),
            comm="ganesha.nfsd",
            unit="nfs-ganesha",
            pidfile=str(self.pidfile),
            # Only the server started with this configuration is the lab's.
            by_name=False,
        )


def choose_server(proc_filesystems: str) -> str:
    """``kernel`` when the running kernel has the nfsd file system, else ``ganesha``."""
    return KERNEL if "nfsd" in parse_proc_filesystems(proc_filesystems) else GANESHA


def server_fix(server: str) -> str:
    return (
        "apt-get install nfs-kernel-server"
        if server == KERNEL
        else "apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind"
    )


def server_program(server: str) -> str:
    return "exportfs" if server == KERNEL else "ganesha.nfsd"


def ganesha_config(
    host_ip: str,
    subnet: str,
    export_dir: Path,
    recovery_dir: Path,
    pseudo: str = PSEUDO,
    export_id: int = EXPORT_ID,
    port: int = NFS_PORT,
) -> str:
    return GANESHA_TEMPLATE.format(
        host_ip=host_ip,
        subnet=subnet,
        export_dir=export_dir,
        recovery_dir=recovery_dir,
        pseudo=pseudo,
        export_id=export_id,
        port=port,
    )


def kernel_exports_line(export_dir: Path, subnet: str, export_id: int = EXPORT_ID) -> str:
    return (
        f"{export_dir} {subnet}(rw,sync,no_subtree_check,root_squash,fsid={export_id})"
        "  # lab: removed by `lab host release`\n"
    )


def export_for(server: str, host_ip: str, export_dir: Path) -> NfsExport:
    remote = PSEUDO if server == GANESHA else str(export_dir)
    return NfsExport(server=server, host_ip=host_ip, export_dir=export_dir, remote_path=remote)


def make_export_dir(host: Host, export_dir: Path) -> bool:
    """Create the export directory, world-writable and sticky. True when it was created."""
    created = not export_dir.is_dir()
    host.run(["mkdir", "-p", str(export_dir)])
    host.run(["chmod", "1777", str(export_dir)])
    return created


def start_kernel_export(host: Host, export_dir: Path, subnet: str, *, systemd: bool) -> None:
    """Export through the kernel server: an exports.d file, then ``exportfs -ra``."""
    host.run(["mkdir", "-p", str(Path(EXPORTS_FILE).parent)])
    host.write_text(EXPORTS_FILE, kernel_exports_line(export_dir, subnet))
    if systemd:
        host.run(["systemctl", "start", "nfs-server"])
    else:
        host.run(["rpc.nfsd", "8"])
        host.run(["rpc.mountd"])
    host.run(["exportfs", "-ra"])


def stop_kernel_export(host: Host) -> None:
    host.run(["rm", "-f", EXPORTS_FILE])
    host.run(["exportfs", "-ra"], check=False)


def is_serving(host_ip: str, port: int = NFS_PORT, timeout: float = 1.0) -> bool:
    """True when something accepts TCP connections on the NFS port at ``host_ip``.

    ``host_ip`` must be one of this host's own addresses (the lab bridge's): the probe
    binds to it first, so it never sends a packet off the host when the bridge is gone.
    """
    try:
        with socket.create_connection(
            (host_ip, port), timeout=timeout, source_address=(host_ip, 0)
        ):
            return True
    except OSError:
        return False


def wait_until_serving(
    host_ip: str, timeout: float = 30.0, clock: Clock | None = None, port: int = NFS_PORT
) -> None:
    """Wait for the server to accept connections.

    Ganesha runs with ``Graceless = true``, so it serves as soon as it listens. A kernel
    server (or a Ganesha without that option) refuses opens for its grace period (90 s
    by default for nfsd, the time was ~10 s for Ganesha on these machines): clients then
    retry on their own, so a mount just takes longer.
    """
    clock = clock or Clock()
    deadline = clock.monotonic() + timeout
    while not is_serving(host_ip, port):
        if clock.monotonic() >= deadline:
            raise LabError(
                f"the NFS server does not answer on {host_ip}:{port} after {timeout:.0f} s",
                hint="See its log (STATE_DIR/ganesha/ganesha.log), then run: lab host prepare",
            )
        clock.sleep(0.5)
