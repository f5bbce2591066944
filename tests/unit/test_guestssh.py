"""GuestShell tells a guest that refused a request from a guest that is gone.

A stand-in connection here (paramiko's surface: ``transport.is_active()``, ``put``, ``sftp``);
the real SSH path runs in every integration test.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from lab.core.errors import GuestCommandError, GuestError
from lab.guests.ssh import GuestAddress, GuestShell


class Transport:
    def __init__(self, active: bool) -> None:
        self.active = active

    def is_active(self) -> bool:
        return self.active


class Connection:
    def __init__(self, active: bool, error: BaseException | None = None, data: bytes = b""):
        self.transport = Transport(active)
        self.error, self.data, self.closed = error, data, False
        self.sftp_timeout: float | None = None

    def put(self, local: str, remote: str) -> None:
        assert self.error is not None
        raise self.error

    def run(self, command: str, **kwargs: Any) -> Any:
        """A command whose channel closed with no exit status (paramiko's -1): the line
        died if the transport did, or the command was killed by a signal if it did not."""

        class Ran:
            exited, stdout, stderr = -1, "", ""

        return Ran()

    def sftp(self) -> Any:
        connection = self

        class Channel:
            def settimeout(self, seconds: float) -> None:
                connection.sftp_timeout = seconds

        class Sftp:
            channel = Channel()

            def get_channel(self) -> Channel:
                return self.channel

            def open(self, path: str, mode: str) -> io.BytesIO:
                if connection.error is not None:
                    raise connection.error
                return io.BytesIO(connection.data)

        return Sftp()

    def close(self) -> None:
        self.closed = True


def shell_with(connection: Connection) -> GuestShell:
    shell = GuestShell(GuestAddress("lab-thp", "198.18.0.2", "ssh-ed25519 AAAA", "lab", Path("k")))
    shell._conn = connection
    return shell


def test_a_refused_copy_on_a_live_connection_is_a_command_error() -> None:
    connection = Connection(active=True, error=OSError("Failure"))  # sftp-server's ENOSPC
    with pytest.raises(GuestCommandError, match="lab-thp: copying a to /x failed: Failure"):
        shell_with(connection).put(Path("a"), "/x")
    assert connection.closed


@pytest.mark.parametrize(
    ("active", "error"),
    [(False, OSError("Socket is closed")), (True, EOFError()), (False, OSError("Failure"))],
)
def test_a_lost_connection_is_a_guest_error_only(active: bool, error: BaseException) -> None:
    with pytest.raises(GuestError) as caught:
        shell_with(Connection(active, error)).put(Path("a"), "/x")
    assert not isinstance(caught.value, GuestCommandError)


def test_read_bytes_reads_from_an_offset_and_says_none_for_a_missing_file() -> None:
    assert shell_with(Connection(True, data=b"0123456789")).read_bytes("/j", 3, 4) == b"3456"
    missing = Connection(True, error=FileNotFoundError(2, "No such file"))
    assert shell_with(missing).read_bytes("/j", 0, 10) is None


def test_closing_a_connection_that_already_broke_is_not_an_error() -> None:
    """A guest behind a host whose SSH died: paramiko's close() itself fails (broken pipe
    to the ProxyCommand); the shell must still forget the connection and say nothing."""

    class Broken:
        closed = 0

        def close(self) -> None:
            Broken.closed += 1
            raise OSError(32, "Broken pipe")

    shell = GuestShell(
        GuestAddress("lab-loop-thp", "198.18.0.9", "ssh-ed25519 AAAA", "lab", Path("/k"))
    )
    shell._conn = Broken()
    shell.close()
    assert Broken.closed == 1 and shell._conn is None
    shell.close()  # and again, with nothing open
    assert Broken.closed == 1


def test_paramikos_own_error_records_do_not_reach_stderr() -> None:
    """Its transport thread logs "Exception (client): Error reading SSH protocol banner" and a
    traceback for every failed attempt; the controller says "unreachable" once instead.
    In a fresh Python (pytest's own log capture would hide the difference here)."""
    import subprocess
    import sys

    emit = "import logging; logging.getLogger('paramiko.transport').error('banner')"
    quiet = subprocess.run(
        [sys.executable, "-c", f"import lab.guests.ssh; {emit}"], capture_output=True, text=True
    )
    loud = subprocess.run([sys.executable, "-c", emit], capture_output=True, text=True)
    assert "banner" in loud.stderr  # what Python does with no handler
    assert quiet.stderr == ""


def test_a_command_cut_off_by_a_lost_connection_is_a_guest_error() -> None:
    """The guest's host dropped off while the command ran: no exit status, transport gone.
    That is a lost guest (retried), not a command the guest failed."""
    dead = Connection(active=False)
    with pytest.raises(GuestError, match="connection was lost during `sleep 60`") as caught:
        shell_with(dead).run(["sleep", "60"], check=False)
    assert not isinstance(caught.value, GuestCommandError) and dead.closed


def test_a_command_killed_by_a_signal_on_a_live_connection_is_the_guest_s_answer() -> None:
    result = shell_with(Connection(active=True)).run(["sleep", "60"], check=False)
    assert result.returncode == -1
    with pytest.raises(GuestCommandError, match="exited -1"):
        shell_with(Connection(active=True)).run(["sleep", "60"])


def test_journal_reads_give_up_on_a_stalled_connection() -> None:
    from lab.guests.ssh import SFTP_TIMEOUT_S

    connection = Connection(True, data=b"x")
    shell_with(connection).read_bytes("/j", 0, 1)
    assert connection.sftp_timeout == SFTP_TIMEOUT_S
