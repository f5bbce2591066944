"""Guest SSH, behind one object that is handed in: run argument lists, copy files.

The guest's host key is known before first contact (it was put in the seed), so the
connection uses a reject policy: a guest presenting any other key is refused.
Commands are argument lists quoted with :func:`shlex.join`, never strings glued from
user input.
"""

from __future__ import annotations

import base64
import contextlib
import io
import logging
import shlex
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.core.errors import GuestCommandError, GuestError
from lab.core.hostexec import Result
from lab.guests.channel import Channel, SSHChannel

# paramiko logs every failed connection from its own thread, with a traceback, and with no
# handler configured Python prints that on stderr. A guest that cannot be reached is the
# lab's to report (once, in one line): paramiko's records go nowhere.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

# A connection is tried every KEEPALIVE_S seconds of quiet. Through a ProxyCommand whose
# ssh died (its host dropped off) paramiko sees no end of file, only silence, so without
# this a request already sent would wait for ever; the keepalive's write fails instead.
KEEPALIVE_S = 5
# An SFTP request unanswered this long (a network that stalls without failing) gives up.
SFTP_TIMEOUT_S = 120
# Data the guest has not acknowledged for this long (a request, or a keepalive) ends the
# connection (TCP_USER_TIMEOUT). A guest destroyed mid-command sends no reset, and without
# this a command given no timeout would wait for the kernel's retransmissions: 15 minutes.
UNACKED_S = 60


@dataclass(frozen=True)
class GuestAddress:
    name: str
    ip: str
    host_public_key: str  # "ssh-ed25519 AAAA... comment"
    user: str
    key_file: Path
    proxy_command: str | None = None  # through the guest's host (ssh -W), when not local


class GuestShell:
    """A connection to one guest through Fabric with a pinned host key."""

    def __init__(self, address: GuestAddress, connect_timeout: float = 10) -> None:
        self.address = address
        self.connect_timeout = connect_timeout
        self._conn: Any = None
        self._open: dict[str, Any] = {}  # remote path -> SFTP file kept open for read_bytes

    def _connection(self) -> Any:
        if self._conn is None:
            import fabric  # deferred: 0.2 s of imports, only for commands that reach a guest
            import paramiko

            config = fabric.Config(overrides={"load_ssh_configs": False})
            conn = fabric.Connection(
                self.address.ip,
                user=self.address.user,
                config=config,
                gateway=self.address.proxy_command,
                connect_timeout=int(self.connect_timeout),
                connect_kwargs={
                    "key_filename": str(self.address.key_file),
                    "look_for_keys": False,
                    "allow_agent": False,
                    "banner_timeout": self.connect_timeout,
                    "auth_timeout": self.connect_timeout,
                },
            )
            keytype, blob = self.address.host_public_key.split()[:2]
            key = paramiko.PKey.from_type_string(keytype, base64.b64decode(blob))
            conn.client.get_host_keys().add(self.address.ip, keytype, key)
            conn.client.set_missing_host_key_policy(paramiko.RejectPolicy())
            try:
                conn.open()
            except BaseException:
                # A refused host key or login leaves paramiko's transport (its socket, its
                # thread, a proxy's ssh) open: one more for every retry of a replaced guest.
                _close_client(conn)
                raise
            conn.transport.set_keepalive(KEEPALIVE_S)
            _bound_unacked(conn.transport.sock)
            self._conn = conn
        return self._conn

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        timeout: float | None = None,
        sudo: bool = False,
    ) -> Result:
        command = shlex.join(["sudo", "-n", *argv] if sudo else list(argv))
        with self._failing(
            f"SSH to {self.address.ip}",
            hint=f"See the guest's console: lab console {self.address.name}",
        ):
            res = self._connection().run(
                command, hide=True, warn=True, timeout=timeout, in_stream=False
            )
            if res.exited == -1 and not self._connected():  # no exit status: the line died
                raise ConnectionError(f"the connection was lost during `{command}`")
        result = Result(tuple(argv), res.exited, res.stdout, res.stderr)
        if check and not result.ok:
            raise GuestCommandError(
                f"{self.address.name}: `{command}` exited {res.exited}:"
                f" {(res.stderr or res.stdout).strip()[-300:]}"
            )
        return result

    def open_channel(self, argv: Sequence[str]) -> Channel:
        """Start ``argv`` in a session of its own that stays open: its stdin and stdout are
        a line channel (``lab.guests.channel``), for a process that takes many steps."""
        command = shlex.join(list(argv))
        with self._failing(f"starting `{command}` over SSH to {self.address.ip}"):
            chan = self._connection().transport.open_session(timeout=self.connect_timeout)
            chan.exec_command(command)
        return SSHChannel(chan, self.address.name)

    def put(self, local: Path, remote: str) -> None:
        with self._failing(f"copying {local} to {remote}", sftp=True):
            self._connection().put(str(local), remote)

    def put_bytes(self, data: bytes, remote: str) -> None:
        with self._failing(f"writing {remote}", sftp=True):
            self._connection().put(io.BytesIO(data), remote)

    def get_text(self, remote: str) -> str:
        buf = io.BytesIO()
        with self._failing(f"reading {remote}", sftp=True):
            self._connection().get(remote, buf)
        return buf.getvalue().decode(errors="replace")

    def read_bytes(self, remote: str, offset: int, size: int) -> bytes | None:
        """Up to ``size`` bytes of file ``remote`` from byte ``offset``; None if it does not
        exist. Over SFTP on the open connection, so no process starts in the guest: the
        controller reads journals this way every second, and under emulation starting
        a reader each time cost the guest more than the runner's own work."""
        with self._failing(f"reading {remote}", sftp=True):
            stream = self._open.get(remote)
            if stream is None:
                sftp = self._connection().sftp()
                sftp.get_channel().settimeout(SFTP_TIMEOUT_S)
                try:
                    stream = sftp.open(remote, "rb")
                except FileNotFoundError:
                    return None
                self._open[remote] = stream
            # The file stays open, so a poll is one READ request (opening and closing it
            # each second cost the guest three more round trips of emulated sshd); an
            # append-only journal is never replaced, only written to.
            stream.seek(offset)
            return bytes(stream.read(size))

    def forget(self, remote: str) -> None:
        """Close the handle :meth:`read_bytes` keeps open on ``remote``: once the file was
        renamed (a journal retired), the next read must find what is at that path now, not
        the file the handle still reads."""
        stream = self._open.pop(remote, None)
        if stream is not None:
            from paramiko.file import BufferedFile  # deferred: loaded once a file was opened

            with contextlib.suppress(Exception):
                stream.close()
            with contextlib.suppress(Exception):
                BufferedFile.close(stream)

    def connect(self) -> None:
        """Log in (key exchange and authentication) without running anything.

        Waiting for a booting guest this way costs it nothing until sshd listens (a
        refused connection is the kernel's answer), whereas a bare TCP probe would make
        sshd start, and re-execute, a child for a connection that is then dropped.
        """
        with self._failing(f"SSH to {self.address.ip}"):
            self._connection()

    @contextmanager
    def _failing(self, what: str, hint: str | None = None, sftp: bool = False) -> Iterator[None]:
        """Turn paramiko, socket and invoke errors alike into one GuestError; drop the
        connection, so the next call opens a fresh one. An SFTP request the guest refused
        (an OSError while the connection stays up: a full disk, a missing folder) is a
        GuestCommandError, like a command that failed: the guest is there."""
        try:
            yield
        except Exception as err:
            answered = sftp and isinstance(err, OSError) and self._connected()
            self.close()
            error = GuestCommandError if answered else GuestError
            raise error(f"{self.address.name}: {what} failed: {_describe(err)}", hint=hint) from err

    def _connected(self) -> bool:
        transport = getattr(self._conn, "transport", None) if self._conn is not None else None
        return bool(transport is not None and transport.is_active())

    def close(self) -> None:
        """Drop the connection. Closing one that already broke (its proxy gone, its socket
        reset) fails in paramiko; it is gone either way, so that is not an error."""
        conn, self._conn = self._conn, None
        # Their handles go with the connection. Marked closed here, without a request: an
        # SFTP file dropped open tries to close itself over the dead channel when collected,
        # which fails with a traceback on stderr (a host that dropped off showed it).
        if self._open:
            from paramiko.file import BufferedFile  # deferred: loaded once a file was opened

            for stream in self._open.values():
                with contextlib.suppress(Exception):
                    BufferedFile.close(stream)
            self._open.clear()
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


def _close_client(conn: Any) -> None:
    """Close a connection whose ``open`` failed: fabric's ``close`` does nothing then (it
    never recorded the transport), and paramiko's is the one that stops it."""
    with contextlib.suppress(Exception):
        conn.client.close()


def _bound_unacked(sock: Any) -> None:
    """Apply :data:`UNACKED_S` to a direct TCP connection (a proxy's pipe has its own ssh)."""
    if isinstance(sock, socket.socket) and hasattr(socket, "TCP_USER_TIMEOUT"):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, UNACKED_S * 1000)


def _describe(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return text.splitlines()[0][:300]
