"""One command at a time: started in its own session, timed, reaped, stopped or timed out.

Every command's environment carries LAB_RUN_KEY and LAB_RUN_DIR, and an iteration's commands
(the clean command and the timed one) LAB_ITERATION too, which the setup command's lack:
that is how a restarted runner finds what a killed runner left running, the processes an
iteration's command started included, without touching a daemon its setup started
(:meth:`Children.end_orphans`). Nothing is written per command for it: under emulation one
more system call after each command cost a tenth of a millisecond and more.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import NamedTuple

from lab.inguest.runfiles import RunFiles

TAIL_CHARS = 2000
# Python ignores these; a command must get them back, as subprocess's restore_signals does
RESTORED = (signal.SIGPIPE, signal.SIGXFSZ)
KILL_GRACE_S = 5.0
ITERATION = "LAB_ITERATION"  # in the environment of an iteration's commands


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def environment(pid: int) -> set[str]:
    """The ``NAME=value`` entries process ``pid`` was started with (empty if it is gone or
    not ours to read)."""
    try:
        return set(Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0"))
    except OSError:
        return set()


def processes() -> list[int]:
    """The pids of /proc, this process's left out."""
    me = os.getpid()
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) != me]


class Child(NamedTuple):
    """One command's outcome; ``error`` is None only for exit status 0 within the timeout.

    A named tuple, made by C: a frozen dataclass's ``__init__`` runs one
    ``object.__setattr__`` per field after every command."""

    started: float
    ended: float | None = None
    wall: float | None = None
    user: float | None = None
    sys: float | None = None
    exit_status: int | None = None
    error: str | None = None
    stopped: bool = False


class Scratch:
    """KEY.out and KEY.err, opened once per start and emptied for each command.

    Opening these files per attempt cost more than the attempt itself under emulation. The
    runner opens them only once it holds the lock, so a second ``start`` truncates nothing.
    """

    def __init__(self, files: RunFiles) -> None:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        self.out, self.err = (
            os.open(files.path(suffix), flags, 0o644) for suffix in ("out", "err")
        )
        # the commands' stdin, opened once (subprocess.DEVNULL opens and closes it each time)
        self.devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        self.dirty = True  # the files may hold an earlier start's output: empty them first
        self.sizes = (0, 0)

    def empty_output(self) -> None:
        if not self.dirty:  # the last command wrote nothing: nothing to empty
            return
        for fd in (self.out, self.err):
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)  # the command writes from here, through the same file
        self.dirty = False

    def wrote(self) -> None:
        """After a command: note whether it wrote anything (a command that writes nothing,
        like `null`'s, then costs no truncation before the next one, nor reads of its tail)."""
        self.sizes = (os.fstat(self.out).st_size, os.fstat(self.err).st_size)
        self.dirty = any(self.sizes)

    @staticmethod
    def read(fd: int, last: int | None = None) -> str:
        """The file's text, or its last ``last`` bytes."""
        size = os.fstat(fd).st_size
        start = 0 if last is None else max(0, size - last)
        return os.pread(fd, size - start, start).decode(errors="replace")

    def tail(self) -> str:
        """The last TAIL_CHARS characters of the last command's stdout, then its stderr."""
        if not self.dirty:
            return ""
        parts = [self.read(fd, 4 * TAIL_CHARS) for fd in (self.out, self.err)]
        return "".join(parts)[-TAIL_CHARS:]


class Children:
    """Runs the run's commands one at a time; SIGTERM or SIGINT asks it to stop them.

    It waits for a command in a blocking ``wait4``; its signal handlers end the command
    (SIGTERM to its process group, SIGKILL after KILL_GRACE_S) and the wait resumes until
    the command is gone. A timeout is an interval timer whose SIGALRM does the same. Under
    emulation a pidfd polled with the signals' wake-up pipe cost 0.4 ms of the runner's time
    per command; the timer costs nothing measurable.
    """

    def __init__(self, files: RunFiles) -> None:
        self.files = files
        self.stop_requested = False
        self.signals_installed = False
        self.running: int | None = None  # the command being waited for
        self.ending: str | None = None  # why it is being ended: "stopped" or "timeout"
        # The command, and whatever it starts, carries the run's name in its environment:
        # that is how a restarted runner knows a process left by a killed one.
        self.mark = {"LAB_RUN_KEY": files.key, "LAB_RUN_DIR": str(files.dir)}
        self.scratch: Scratch  # opened by open_scratch(), once the lock is held
        self.actions: list[tuple[int, int, int]] = []  # the commands' stdin, stdout, stderr
        self.found: dict[tuple[str, str | None], str] = {}  # (program, PATH) -> its path
        self.cwd: Path | None = None  # the folder the runner moved to for its commands

    def open_scratch(self) -> None:
        scratch = self.scratch = Scratch(self.files)
        self.actions = [(os.POSIX_SPAWN_DUP2, fd, target) for fd, target in
                        ((scratch.devnull, 0), (scratch.out, 1), (scratch.err, 2))]  # fmt: skip

    def install_signals(self) -> None:
        """The handlers that stop and time out commands: needed before :meth:`run`."""
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.signals_installed = True

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested = True
        self._end("stopped")

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        if self.ending is None:
            self._end("timeout")
        elif self.running is not None:  # the grace is over
            signal_group(self.running, signal.SIGKILL)

    def _end(self, reason: str) -> None:
        """Ask the running command to end (SIGTERM to its group); SIGKILL after the grace."""
        if self.running is None or self.ending is not None:
            return
        self.ending = reason
        signal_group(self.running, signal.SIGTERM)
        signal.setitimer(signal.ITIMER_REAL, KILL_GRACE_S)

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float | None) -> Child:
        """Run ``argv`` in a new session with output to KEY.out/KEY.err; time and reap it.

        Started with posix_spawn, in the command's folder (the runner moves there: spawn
        takes no folder of its own), which under emulation costs a third of the system
        calls of subprocess.Popen. Every descriptor the runner holds is close-on-exec, so the
        command gets only its stdin, stdout and stderr.
        """
        if not self.signals_installed:
            raise RuntimeError("Children.install_signals() must run before a command")
        scratch = self.scratch
        scratch.empty_output()
        started, t0 = time.time(), time.monotonic()
        try:
            if cwd != self.cwd:
                os.chdir(cwd)
                self.cwd = cwd
            pid = os.posix_spawn(
                self.resolve(argv[0], env) or argv[0], argv, {**env, **self.mark},
                file_actions=self.actions, setsid=True, setsigdef=RESTORED,
            )  # fmt: skip
        except OSError as exc:
            return Child(started, error=f"cannot start {argv[0]!r} in {cwd}: {exc}")
        self.running, self.ending = pid, None
        if timeout is not None:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        if self.stop_requested:  # asked before the command started: the handler had none
            self._end("stopped")
        _, status, usage = os.wait4(pid, 0)  # resumed after each signal's handler
        wall, ended = time.monotonic() - t0, time.time()
        self.running, reason = None, self.ending
        if timeout is not None or reason is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)  # no alarm between commands
        code = os.waitstatus_to_exitcode(status)
        scratch.wrote()
        if reason is not None:
            signal_group(pid, signal.SIGKILL)  # what is left of a killed command
        if reason == "stopped":
            error: str | None = "stopped: the runner was asked to stop"
        elif reason == "timeout":
            error = f"timed out after {timeout:g} s and was killed"
        elif code < 0:
            error = f"{argv[0]} was killed by {signal.Signals(-code).name}"
        else:
            error = f"{argv[0]} exited with status {code}" if code else None
        times = (wall, usage.ru_utime, usage.ru_stime)
        return Child(started, ended, *times, code, error, stopped=reason == "stopped")

    def resolve(self, program: str, env: dict[str, str]) -> str | None:
        """``program`` looked up in the command's PATH once per start, not at every attempt
        (subprocess would search every folder of PATH each time); as given if not found,
        so that starting it fails as it would have. A path (with a "/") is left to
        subprocess, which reads it relative to the command's own folder."""
        if "/" in program:
            return None
        key = (program, env.get("PATH"))
        if key not in self.found:
            self.found[key] = shutil.which(program, path=env.get("PATH")) or program
        return self.found[key]

    def end_orphans(
        self, log: Callable[[str], None], find: Callable[[], list[int]] = processes
    ) -> None:
        """A runner killed by SIGKILL leaves its command running (in its own session): end
        it, or it would run beside its own repetition. Its processes are those whose
        environment carries this run's marks and an iteration (the setup command's daemons
        have none, and a reused pid has other marks or none)."""
        marks = {f"{name}={value}" for name, value in self.mark.items()}
        ended: set[int] = set()  # the groups signalled: their other processes went with them
        for pid in find():
            entries = environment(pid)
            if not marks <= entries or not any(e.startswith(ITERATION + "=") for e in entries):
                continue
            with contextlib.suppress(OSError):
                group = os.getpgid(pid)
                if group == os.getpgrp():  # not in a session of its own: this process only
                    log(f"ending process {pid}, left running by a killed runner")
                    os.kill(pid, signal.SIGKILL)
                elif group not in ended:
                    ended.add(group)
                    log(f"ending process group {group}, left running by a killed runner")
                    signal_group(group, signal.SIGKILL)


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
