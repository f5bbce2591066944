"""What a guest cannot do: leave the lab network, log in by password, own host files."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import Pair

pytestmark = pytest.mark.integration

LAB_SUBNET = ipaddress.ip_network("198.18.0.0/24")
NFS_EXPORT = Path("/var/lib/lab/nfs")


def host_addresses_outside_the_lab() -> list[str]:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        address = ipaddress.ip_interface(line.split()[3]).ip
        if address not in LAB_SUBNET and not address.is_loopback:
            found.append(str(address))
    return found


@pytest.fixture
def listener() -> Iterator[tuple[str, int, list[str]]]:
    """A TCP service on the host's own (non-bridge) address, recording who connects."""
    addresses = host_addresses_outside_the_lab()
    if not addresses:
        pytest.skip("this host has no address outside the lab network")
    server = socket.create_server((addresses[0], 0))
    server.settimeout(0.5)
    seen: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            seen.append(peer[0])
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield addresses[0], server.getsockname()[1], seen
    stop.set()
    thread.join()
    server.close()


def test_the_lab_network_has_no_forward(pair: Pair) -> None:
    xml = subprocess.run(
        ["virsh", "-c", "qemu:///system", "net-dumpxml", "lab"], capture_output=True, text=True
    ).stdout
    assert "<network" in xml and "<forward" not in xml


def test_a_guest_cannot_reach_a_host_service_beyond_the_lab_bridge(
    pair: Pair, listener: tuple[str, int, list[str]]
) -> None:
    address, port, seen = listener
    probe = (
        "import socket, sys\n"
        "try:\n"
        "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()\n"
        "    print('connected')\n"
        "except OSError as err:\n"
        "    print('refused', err)\n"
    )
    out = pair.lab("ssh", "thp", "python3", "-c", probe, address, str(port)).stdout
    assert out.startswith("refused"), out
    assert seen == []
    # The guest has no route out of the lab network at all.
    routes = pair.lab("ssh", "thp", "ip", "-4", "route").stdout
    assert "default" not in routes


def test_password_login_is_off_in_the_guests(pair: Pair) -> None:
    for name in ("thp", "shp1g"):
        out = pair.lab("ssh", name, "sudo", "sshd", "-T").stdout.lower()
        assert "passwordauthentication no" in out
        assert "permitrootlogin no" in out


def test_guest_root_cannot_own_files_on_the_nfs_export(pair: Pair) -> None:
    script = (
        "set -e; sudo mkdir -p /mnt/lab-check;"
        " mountpoint -q /mnt/lab-check || sudo mount -t nfs4 198.18.0.1:/lab /mnt/lab-check;"
        " sudo touch /mnt/lab-check/written-by-guest-root || echo denied;"
        " touch /mnt/lab-check/written-by-guest-user 2>/dev/null || echo user-denied;"
        " sudo umount /mnt/lab-check"
    )
    mode = NFS_EXPORT.stat().st_mode & 0o7777
    NFS_EXPORT.chmod(0o1777)  # the guest's user must be able to write (lab host prepare does this)
    try:
        out = pair.lab("ssh", "thp", "sh", "-c", script).stdout
        by_root = NFS_EXPORT / "written-by-guest-root"
        if by_root.exists():
            assert by_root.stat().st_uid != 0, "guest root became host root"
            assert by_root.stat().st_uid == 65534
        else:
            assert "denied" in out
        by_user = NFS_EXPORT / "written-by-guest-user"
        assert by_user.exists() and by_user.stat().st_uid == 1000
    finally:
        for leftover in NFS_EXPORT.glob("written-by-guest-*"):
            leftover.unlink()
        NFS_EXPORT.chmod(mode)
