"""A line channel to a process that stays up: a stepped runner (``lab.inguest.stepper``).

The controller sends a line, the process answers with lines; both sides stay up for the whole
run, so a step costs one line each way instead of a process started per step. Two kinds:
:class:`SSHChannel` over an SSH session in a guest, and :class:`ProcessChannel` over a local
process's pipes (the unit tests, and ``bench/`` runs against local processes). Both can be
waited on with :func:`wait_any` (``select``), so the controller sleeps until an answer comes.

A channel that dies (its process ended, its connection lost) says so with :attr:`closed`
once every line it had is read; writing to it raises :class:`ChannelClosed`.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
from collections.abc import Sequence
from typing import Any, Protocol

from lab.core.errors import GuestError

CHUNK = 65536


class ChannelClosed(GuestError):
    """The process at the other end is gone (its connection may still be up)."""


class Channel(Protocol):
    closed: bool

    def send_line(self, line: str) -> None: ...
    def lines(self) -> list[str]: ...
    def fileno(self) -> int: ...
    def close(self) -> None: ...


class _Lines:
    """Whole lines out of the chunks a channel receives."""

    def __init__(self) -> None:
        self.buffer = b""
        self.closed = False

    def take(self, chunk: bytes) -> list[str]:
        if not chunk:
            self.closed = True
            chunk = b"\n" if self.buffer else b""  # a last line without its newline
        self.buffer += chunk
        *whole, self.buffer = self.buffer.split(b"\n")
        return [line.decode(errors="replace") for line in whole if line.strip()]


class SSHChannel(_Lines):
    """An SSH session running one command, its stdin and stdout the channel (paramiko's
    ``Channel``, whose ``fileno`` becomes readable when data or its end arrives)."""

    def __init__(self, chan: Any, where: str) -> None:
        super().__init__()
        self.chan, self.where = chan, where

    def send_line(self, line: str) -> None:
        try:
            self.chan.sendall((line + "\n").encode())
        except (OSError, EOFError) as err:
            self.closed = True
            raise ChannelClosed(f"{self.where}: the runner's channel closed ({err})") from None

    def lines(self) -> list[str]:
        """The whole lines received so far (never waits)."""
        found: list[str] = []
        while not self.closed and (self.chan.recv_ready() or self.chan.eof_received):
            try:
                chunk = self.chan.recv(CHUNK)
            except OSError:
                chunk = b""
            found += self.take(chunk)
        if not self.closed and self.chan.closed:
            found += self.take(b"")
        return found

    def fileno(self) -> int:
        return int(self.chan.fileno())

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(Exception):  # its connection may be gone already
            self.chan.close()


class ProcessChannel(_Lines):
    """A local process's stdin and stdout as the channel."""

    def __init__(self, argv: Sequence[str], cwd: str | None = None) -> None:
        super().__init__()
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        os.set_blocking(self.stdout.fileno(), False)

    def send_line(self, line: str) -> None:
        try:
            self.stdin.write((line + "\n").encode())
            self.stdin.flush()
        except OSError as err:
            self.closed = True
            raise ChannelClosed(f"the runner's channel closed ({err})") from None

    def lines(self) -> list[str]:
        found: list[str] = []
        while not self.closed:
            try:
                chunk = os.read(self.stdout.fileno(), CHUNK)
            except BlockingIOError:
                break
            found += self.take(chunk)
        return found

    def fileno(self) -> int:
        return self.stdout.fileno()

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.stdin.close()
        self.stdout.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wait_any(channels: Sequence[Channel], timeout: float) -> None:
    """Return once one of ``channels`` has something to read, or after ``timeout`` s."""
    if channels:
        select.select([c.fileno() for c in channels], [], [], timeout)
