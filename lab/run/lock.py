"""One `lab run` (or `lab demo`) per lab at a time: a lock in the lab's state directory.

The lock is ``flock(LOCK_EX | LOCK_NB)`` on ``<state_dir>/run.lock``. The kernel holds it
for the open file and drops it when the holder's process ends, however it ends (``SIGKILL``
included), so *whether* a lock is held is never guessed: a lock we cannot take has a live
holder; a lock we can take is free, whatever the file says.

The file's body is JSON naming the holder (pid, start time, the process's start time in
clock ticks from ``/proc/PID/stat``, host and command), written once the lock is taken and
emptied when it is released. It serves two purposes:

* a refused second run names the first: pid, start time and command;
* a body still there when we take the lock means the previous holder died without
  releasing it (killed, or its machine crashed): a *stale* lock, which we take over with a
  notice. The notice says why the holder is gone: its pid no longer exists, or it now
  belongs to another program (the pid was reused: the process start time in
  ``/proc/PID/stat`` differs from the recorded one).

The file is never deleted (deleting a lock file lets two processes lock two different files
of the same name). Within one process the lock is re-entrant, so ``lab demo`` holds it for
the whole demo while the `lab run` steps it calls take it again.

``lab up`` and ``lab down`` hold it too while they replace or remove the guests
(:func:`changing_guests`): a running study's guests are never taken from under it, unless
``--force`` says so, and then it is said what that breaks.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from lab.core.errors import LabError
from lab.core.units import format_timestamp

LOCK_FILE = "run.lock"
_held: dict[tuple[int, str], int] = {}  # (pid, lock path) -> depth, for re-entry


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a lab's run lock."""

    pid: int
    started: float  # epoch seconds
    start_ticks: int | None  # field 22 of /proc/PID/stat: tells a reused pid apart
    host: str
    argv: list[str]

    @classmethod
    def me(cls, argv: Sequence[str]) -> Holder:
        pid = os.getpid()
        return cls(pid, time.time(), start_ticks(pid), socket.gethostname(), list(argv))

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        """The holder a lock file's body names; None for an empty or unreadable body."""
        try:
            data = json.loads(text)
            return cls(
                pid=int(data["pid"]),
                started=float(data["started"]),
                start_ticks=None if data.get("start_ticks") is None else int(data["start_ticks"]),
                host=str(data.get("host", "")),
                argv=[str(a) for a in data.get("argv", [])],
            )
        except (ValueError, KeyError, TypeError):
            return None

    def describe(self) -> str:
        when = format_timestamp(self.started)
        where = f" on {self.host}" if self.host and self.host != socket.gethostname() else ""
        return f"pid {self.pid}{where}, started {when}, command `{shlex.join(self.argv)}`"

    def gone_because(self) -> str:
        """Why this holder cannot hold the lock any more, for the takeover notice."""
        if self.host and self.host != socket.gethostname():
            return f"it ran on {self.host}, whose lock is gone"
        ticks = start_ticks(self.pid)
        if ticks is None:
            return f"pid {self.pid} is no longer running"
        if self.start_ticks is not None and ticks != self.start_ticks:
            return f"pid {self.pid} now belongs to another program ({command_of(self.pid)})"
        return f"pid {self.pid} is still running but no longer holds the lock"


class RunLockedError(LabError):
    """Another live process holds the lab's run lock."""

    exit_code = 8

    def __init__(self, path: Path, holder: Holder | None) -> None:
        self.path = path
        self.holder = holder
        who = holder.describe() if holder else "a process that has not said who it is yet"
        stop = f"kill {holder.pid}" if holder else f"fuser {path}"
        super().__init__(
            f"another lab run is using this lab: {who}",
            hint=f"Wait for it to finish, or stop it ({stop}); an interrupted run resumes when"
            f" its command is run again. Lock: {path}",
        )


class LabInUseError(RunLockedError):
    """``lab up`` or ``lab down`` refused: a live run holds the lab and uses its guests."""

    def __init__(self, action: str, path: Path, holder: Holder | None) -> None:
        self.path, self.holder, self.action = path, holder, action
        who = holder.describe() if holder else "a process that has not said who it is yet"
        stop = f"kill {holder.pid}" if holder else f"fuser {path}"
        LabError.__init__(
            self,
            f"{action} would take the guests of a running study: {who}",
            hint=f"Wait for it to finish, or stop it ({stop}; its command resumes it later), or"
            f" pass --force to go ahead anyway (that run then stops for lack of its guests)."
            f" Lock: {path}",
        )


def start_ticks(pid: int, proc: Path = Path("/proc")) -> int | None:
    """When process ``pid`` started, in clock ticks since boot; None if there is no such pid."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces and ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def command_of(pid: int, proc: Path = Path("/proc")) -> str:
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "unknown"
    parts = [part.decode(errors="replace") for part in raw.split(b"\0") if part]
    return shlex.join(parts) if parts else "unknown"


def _read_holder(path: Path, wait: float = 1.0) -> Holder | None:
    """The live holder named in ``path``; it may not have written its body yet: wait a little."""
    deadline = time.monotonic() + wait
    while True:
        try:
            holder = Holder.parse(path.read_text())
        except OSError:
            holder = None
        if holder is not None or time.monotonic() >= deadline:
            return holder
        time.sleep(0.02)


@contextlib.contextmanager
def run_lock(
    state_dir: Path, argv: Sequence[str], note: Callable[[str], None] = lambda _m: None
) -> Iterator[Holder]:
    """Hold ``<state_dir>/run.lock`` for the block, or raise :class:`RunLockedError`.

    ``argv`` is the command shown to a second run that is refused; ``note`` receives the
    notice when a stale lock of a dead holder is taken over.
    """
    path = Path(state_dir) / LOCK_FILE
    key = (os.getpid(), str(path.resolve()))
    if key in _held:  # this process holds it already (lab demo -> lab run)
        _held[key] += 1
        try:
            yield Holder.me(argv)
        finally:
            _held[key] -= 1
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_CLOEXEC (Python's default): programs the lab starts do not inherit the lock.
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise LabError(
            f"cannot open the run lock {path}: {err.strerror or err}",
            hint="Run lab as the user that brought the lab up (root), or fix the permissions"
            " of the state directory (config: state_dir)",
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLockedError(path, _read_holder(path)) from None
        stale = Holder.parse(os.pread(fd, 65536, 0).decode(errors="replace"))
        if stale is not None and stale.pid != os.getpid():
            note(
                f"took over a stale run lock ({path}): {stale.describe()} did not release it;"
                f" {stale.gone_because()}"
            )
        me = Holder.me(argv)
        body = (json.dumps(asdict(me)) + "\n").encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, body, 0)
        os.fsync(fd)
        _held[key] = 1
        try:
            yield me
        finally:
            del _held[key]
            os.ftruncate(fd, 0)  # released cleanly: nothing stale is left behind
    finally:
        os.close(fd)  # closing the only descriptor releases the flock


@contextlib.contextmanager
def changing_guests(
    state_dir: Path,
    argv: Sequence[str],
    action: str,
    force: bool = False,
    warn: Callable[[str], None] = lambda _m: None,
) -> Iterator[None]:
    """Hold the run lock while ``action`` (``lab down``, ``lab up``) replaces or removes the
    guests, so that no run starts meanwhile; refuse with :class:`LabInUseError` while a run
    holds it. With ``force``, go ahead without it, after ``warn`` says what that breaks."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(run_lock(state_dir, argv, warn))
        except RunLockedError as err:
            if not force:
                raise LabInUseError(action, err.path, err.holder) from None
            who = err.holder.describe() if err.holder else f"the holder of {err.path}"
            warn(
                f"--force: {action} goes ahead while a run holds the lab ({who}): that run"
                " loses its guests and stops (status 4) once it has waited for them (config:"
                " guest_timeout); the iterations it stored are kept, and its command resumes it"
                " on a new pair"
            )
        yield
