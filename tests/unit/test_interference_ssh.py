"""A guest that refuses us keeps no connection open: each retry closes what it opened.

Seen on the real pair: a run whose guests were replaced (new host keys) opened one more SSH
connection every ~10 s, 52 when it was stopped. Here a real SSH server (paramiko's, in a
thread, on a local port) presents a host key other than the one pinned, as a replaced guest
does, and the connections this process holds to it are counted in /proc/net/tcp.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fabric
import paramiko
import pytest

from lab.core.errors import GuestError
from lab.guests.ssh import UNACKED_S, GuestAddress, GuestShell

ESTABLISHED = "01"


HOST_KEY = paramiko.RSAKey.generate(1024)  # the local server's


class RefusingServer(paramiko.ServerInterface):
    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        return paramiko.AUTH_FAILED


class WelcomingServer(RefusingServer):
    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        return paramiko.AUTH_SUCCESSFUL


@pytest.fixture
def sshd() -> Iterator[int]:
    """A local SSH server with the host key HOST_KEY, refusing every login; its port."""
    yield from serve(RefusingServer)


@pytest.fixture
def welcoming_sshd() -> Iterator[int]:
    """The same, letting any key log in."""
    yield from serve(WelcomingServer)


def serve(kind: type[paramiko.ServerInterface]) -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    key = HOST_KEY
    served: list[paramiko.Transport] = []

    def serve() -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            transport = paramiko.Transport(sock)
            transport.add_server_key(key)
            served.append(transport)
            with contextlib.suppress(Exception):
                transport.start_server(server=kind())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    listener.close()
    for transport in served:
        transport.close()


def connections_to(port: int) -> int:
    """Established TCP connections whose far end is ``port`` on this machine."""
    count = 0
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        with contextlib.suppress(FileNotFoundError):
            for line in table.read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[3] == ESTABLISHED:
                    count += 1
    return count


def settled(count: Callable[[], int], within: float = 5.0) -> int:
    """``count()`` once it is 0, or after ``within`` s: a socket just closed may still be
    on its way out when the retry returns."""
    deadline = time.monotonic() + within
    while (value := count()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def test_retries_against_a_guest_with_another_host_key_leave_no_connection_open(
    sshd: int, tmp_path: Path
) -> None:
    other = paramiko.RSAKey.generate(1024)  # what the lab recorded: not the server's key
    address = GuestAddress(
        "lab-thp", f"127.0.0.1:{sshd}", f"ssh-rsa {other.get_base64()}", "lab",
        tmp_path / "no-key",
    )  # fmt: skip
    shell = GuestShell(address, connect_timeout=5)
    threads = threading.active_count()
    for _ in range(8):
        with pytest.raises(GuestError, match="lab-thp: reading /j failed"):
            shell.read_bytes("/j", 0, 10)
    assert settled(lambda: connections_to(sshd)) == 0  # 8 before: one per retry
    assert threading.active_count() <= threads + 1  # nor their threads
    shell.close()


def test_a_connection_gives_up_on_data_a_vanished_guest_never_acknowledges(
    welcoming_sshd: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = welcoming_sshd
    client = paramiko.RSAKey.generate(1024)
    client.write_private_key_file(str(tmp_path / "id_rsa"))
    address = GuestAddress(
        "lab-thp", f"127.0.0.1:{port}", f"ssh-rsa {HOST_KEY.get_base64()}", "lab",
        tmp_path / "id_rsa",
    )  # fmt: skip
    # The key is pinned under the address ("IP:PORT" here), and paramiko looks it up as
    # "[IP]:PORT" off port 22: pin it there too.
    real_open = fabric.Connection.open

    def open_pinned(conn: fabric.Connection) -> Any:
        conn.client.get_host_keys().add(f"[127.0.0.1]:{port}", "ssh-rsa", HOST_KEY)
        return real_open(conn)

    monkeypatch.setattr(fabric.Connection, "open", open_pinned)
    shell = GuestShell(address, connect_timeout=5)
    shell.connect()
    sock = shell._conn.transport.sock
    # The kernel's default is 0: unacknowledged data is retransmitted for ~15 minutes.
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == UNACKED_S * 1000
    shell.close()
