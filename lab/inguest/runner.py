#!/usr/bin/env python3
"""The lab's in-guest runner: runs a workload's iterations and journals every attempt.

Standard library only (Python 3.11). The controller copies this file into the guest with
``lab/parsers/tools.py`` beside it as ``tools.py``, writes SPEC.json, and runs::

    python3 runner.py start  --dir DIR --run-key KEY --spec SPEC.json
    python3 runner.py status --dir DIR --run-key KEY
    python3 runner.py stop   --dir DIR --run-key KEY

Each prints one JSON object on stdout. ``start`` detaches (double fork, setsid, stdin from
/dev/null, output to DIR/KEY.log) so that a dropped SSH session or a restarted controller
does not stop the run, and returns once the detached runner holds its lock. Files in DIR:
KEY.journal; KEY.pid (the pid, and an flock held while the runner lives: that, not the pid,
says whether it runs); KEY.log; KEY.out, KEY.err and KEY.child (the current command's
output, and the pid and boot id of the last command started; the command's environment
carries LAB_RUN_KEY and LAB_RUN_DIR, which is how a restarted runner tells it, if it still
runs, from a process that reused its pid).

Journal (read by lab/run/journal.py): one JSON line per attempt at an iteration, appended with
one write; plus event lines. Just before an attempt's timed command starts the runner writes
``{"event": "begin", "iteration": i, "attempt": a}``. Every line is fsynced before the runner
does anything else, except a result line followed at once by the next begin line: one fsync
then covers both (a workload with a clean step fsyncs the result line first). On start it
resumes: a command a SIGKILLed runner left running is ended; a ``begin`` without a result
line means the runner or the guest died during that attempt, so it is first recorded as a
failed attempt ("interrupted"); iterations with an ok
line are skipped; any other iteration of the range runs with attempt number max(attempt_base,
last recorded attempt of that iteration + 1). A failed attempt is recorded, never dropped,
and not repeated within one start: the controller decides about repeats.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib.util
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

JOURNAL_VERSION = 1
TAIL_CHARS = 2000
KILL_GRACE_S = 5.0
READY_TIMEOUT_S = 30.0
PARSERS_FILE = "tools.py"
TIMINGS = ("wall_s", "user_s", "sys_s")  # the runner's own measurements, usable as metrics
TERMINAL_EVENTS = ("done", "gave_up", "stopped")
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class SpecError(Exception):
    """SPEC.json or the command line is not valid; the message names the field."""


@dataclass(frozen=True)
class Spec:
    """SPEC.json, validated. Commands are argument lists and never go through a shell."""

    workload: str
    argv: list[str]
    end_iteration: int
    start_iteration: int = 1
    attempt_base: int = 1
    clean_argv: list[str] | None = None  # untimed, before each attempt, in cwd
    setup_argv: list[str] | None = None  # untimed, once per start, in DIR
    cwd: str | None = None  # relative to DIR; DIR if absent
    env: dict[str, str] = field(default_factory=dict)  # added to the inherited environment
    parser: str = "none"  # a key of tools.PARSERS
    parse_from: str = "stdout"  # or "stderr"
    metrics_from: dict[str, str] = field(default_factory=dict)  # source key -> metric name
    timeout_s: float | None = None  # per command, clean and timed
    max_consecutive_failures: int | None = None


def _is_int(low: int) -> Callable[[object], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _is_argv(v: object) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(a, str) for a in v)


def _is_str(v: object) -> bool:
    return isinstance(v, str) and bool(v)


def _is_map(v: object) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())


def _is_seconds(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and v > 0


_CHECKS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "workload": ("a non-empty string", _is_str),
    "argv": ("a non-empty list of strings", _is_argv),
    "end_iteration": ("an integer >= 0", _is_int(0)),
    "start_iteration": ("an integer >= 0", _is_int(0)),
    "attempt_base": ("an integer >= 1", _is_int(1)),
    "clean_argv": ("a non-empty list of strings", _is_argv),
    "setup_argv": ("a non-empty list of strings", _is_argv),
    "cwd": ("a non-empty string", _is_str),
    "env": ("an object of strings", _is_map),
    "parser": ("a non-empty string", _is_str),
    "parse_from": ("'stdout' or 'stderr'", lambda v: v in ("stdout", "stderr")),
    "metrics_from": ("an object of strings", _is_map),
    "timeout_s": ("a positive number of seconds", _is_seconds),
    "max_consecutive_failures": ("an integer >= 1", _is_int(1)),
}


def parse_spec(data: object, parser_names: list[str]) -> Spec:
    """Validate a loaded SPEC.json; every error names the field."""
    if not isinstance(data, dict):
        raise SpecError("the spec must be a JSON object")
    unknown = sorted(set(data) - set(_CHECKS))
    if unknown:
        raise SpecError(f"unknown spec field(s) {unknown}; known: {sorted(_CHECKS)}")
    for name in ("workload", "argv", "end_iteration"):
        if data.get(name) is None:
            raise SpecError(f"spec field {name!r} is missing")
    values = {name: value for name, value in data.items() if value is not None}
    for name, value in values.items():
        want, check = _CHECKS[name]
        if not check(value):
            raise SpecError(f"spec field {name!r} must be {want}, not {value!r:.100}")
    spec = Spec(**values)
    if spec.parser not in parser_names:
        raise SpecError(f"unknown parser {spec.parser!r}; known: {sorted(parser_names)}")
    if spec.end_iteration < spec.start_iteration:
        raise SpecError(f"end_iteration {spec.end_iteration} < start_iteration")
    return spec


def load_parsers() -> ModuleType:
    """lab/parsers/tools.py: beside this file in a guest, or in the source tree on a host."""
    here = Path(__file__).resolve().parent
    for path in (here / PARSERS_FILE, here.parent / "lab" / "parsers" / "tools.py"):
        spec = importlib.util.spec_from_file_location("lab_runner_tools", path)
        if path.is_file() and spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            return module
    raise SpecError(f"no {PARSERS_FILE} beside {here}: copy lab/parsers/tools.py there")


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def environment(pid: int) -> set[str]:
    """The ``NAME=value`` entries process ``pid`` was started with (empty if it is gone)."""
    try:
        return set(Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0"))
    except OSError:
        return set()


def log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{stamp} runner[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Files:
    dir: Path
    key: str

    def path(self, suffix: str) -> Path:
        return self.dir / f"{self.key}.{suffix}"


class Journal:
    """Append-only, one write and one fsync per line; a partial last line is cut on open."""

    def __init__(self, path: Path) -> None:
        created = not path.exists()
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        if created:  # make the new directory entry durable too
            dirfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(dirfd)
            os.close(dirfd)
        data = path.read_bytes()
        complete = data.rfind(b"\n") + 1
        if complete != len(data):  # cut short by a crash; that attempt has a begin line
            log(f"cutting a partial last line of {len(data) - complete} bytes from {path}")
            os.ftruncate(self.fd, complete)
            os.fsync(self.fd)
        self.records: list[dict[str, Any]] = []
        for number, line in enumerate(data[:complete].decode(errors="replace").split("\n"), 1):
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if isinstance(record, dict) and record.get("v") == JOURNAL_VERSION:
                self.records.append(record)
            elif line.strip():
                log(f"ignoring line {number} of {path}: not a version {JOURNAL_VERSION} record")

    def append(self, record: dict[str, Any], sync: bool = True) -> None:
        """Write one line; ``sync=False`` leaves its fsync to the next line's (the caller
        writes one before anything else happens)."""
        line = json.dumps({"v": JOURNAL_VERSION, **record}, separators=(",", ":")) + "\n"
        data = line.encode()
        while data:
            data = data[os.write(self.fd, data) :]
        if sync:
            os.fsync(self.fd)

    def event(self, name: str, **values: Any) -> None:
        self.append({"event": name, "time": time.time(), **values})


@dataclass
class History:
    """What the journal says already happened, for resuming."""

    ok: set[int] = field(default_factory=set)
    last_attempt: dict[int, int] = field(default_factory=dict)
    open_begins: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, records: list[dict[str, Any]]) -> History:
        history = cls()
        begins: dict[tuple[int, int], dict[str, Any]] = {}
        results: set[tuple[int, int]] = set()
        for record in records:
            iteration, attempt = record.get("iteration"), record.get("attempt")
            if not (isinstance(iteration, int) and isinstance(attempt, int)):
                continue
            key = (iteration, attempt)
            history.last_attempt[iteration] = max(history.last_attempt.get(iteration, 0), attempt)
            if record.get("event") == "begin":
                begins[key] = record
            elif "event" not in record:
                results.add(key)
                if record.get("ok") is True:
                    history.ok.add(iteration)
        history.open_begins = [rec for key, rec in begins.items() if key not in results]
        return history

    def next_attempt(self, iteration: int, base: int) -> int:
        return max(base, self.last_attempt.get(iteration, 0) + 1)


class Scratch:
    """KEY.out, KEY.err and KEY.child, opened once per run and emptied for each command.

    Opening three files per attempt cost more than the attempt itself under emulation. The
    runner opens them only once it holds the lock, so a second ``start`` truncates nothing.
    """

    def __init__(self, files: Files) -> None:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        self.out, self.err, self.child = (
            os.open(files.path(suffix), flags, 0o644) for suffix in ("out", "err", "child")
        )

    def empty_output(self) -> None:
        for fd in (self.out, self.err):
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)  # the command writes from here, through the same file

    @staticmethod
    def read(fd: int, last: int | None = None) -> str:
        """The file's text, or its last ``last`` bytes."""
        size = os.fstat(fd).st_size
        start = 0 if last is None else max(0, size - last)
        return os.pread(fd, size - start, start).decode(errors="replace")

    def name_child(self, pid: int, boot: str) -> None:
        """Write KEY.child in place: the same width every time, so nothing is truncated."""
        os.pwrite(self.child, f"{pid:>10} {boot:36.36}\n".encode(), 0)


@dataclass(frozen=True)
class Child:
    """One command's outcome; ``error`` is None only for exit status 0 within the timeout."""

    started: float
    ended: float | None = None
    wall: float | None = None
    user: float | None = None
    sys: float | None = None
    exit_status: int | None = None
    error: str | None = None
    stopped: bool = False


class Runner:
    """The detached process: runs setup, then the iterations, and journals them."""

    def __init__(self, files: Files, spec: Spec, parsers: ModuleType) -> None:
        self.files = files
        self.spec = spec
        self.parsers = parsers
        self.boot_id = boot_id()
        self.stop_requested = False
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.cwd = files.dir / (spec.cwd or ".")  # an absolute cwd replaces DIR
        # The command, and whatever it starts, carries the run's name in its environment:
        # that is how a restarted runner knows a process left by a killed one.
        self.mark = {"LAB_RUN_KEY": files.key, "LAB_RUN_DIR": str(files.dir)}
        self.env = {**os.environ, **spec.env, **self.mark}
        self.scratch: Scratch  # opened by serve(), once the lock is held

    def install_signals(self) -> None:
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested = True

    def tail(self) -> str:
        """The last TAIL_CHARS characters of the last command's stdout, then its stderr."""
        scratch = self.scratch
        parts = [scratch.read(fd, 4 * TAIL_CHARS) for fd in (scratch.out, scratch.err)]
        return "".join(parts)[-TAIL_CHARS:]

    def run_child(
        self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float | None
    ) -> Child:
        """Run ``argv`` in a new session with output to KEY.out/KEY.err; time and reap it."""
        scratch = self.scratch
        scratch.empty_output()
        started, t0 = time.time(), time.monotonic()
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=scratch.out,
                stderr=scratch.err, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            return Child(started, error=f"cannot start {argv[0]!r} in {cwd}: {exc}")
        scratch.name_child(proc.pid, self.boot_id)
        status, usage, reason = self._reap(proc, timeout)
        wall, ended = time.monotonic() - t0, time.time()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if reason is not None:
            self._signal_group(proc.pid, signal.SIGKILL)  # what is left of a killed command
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

    def _reap(
        self, proc: subprocess.Popen[bytes], timeout: float | None
    ) -> tuple[int, Any, str | None]:
        """Wait for ``proc`` (pidfd + the signal wake-up pipe); on stop or timeout SIGTERM
        its process group, then SIGKILL after KILL_GRACE_S. Returns (status, rusage, reason)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        reason: str | None = None
        kill_at: float | None = None
        poller = select.poll()
        poller.register(self.wake_r, select.POLLIN)
        pidfd: int | None = None
        with contextlib.suppress(OSError):  # before Linux 5.3: poll every 10 ms instead
            pidfd = os.pidfd_open(proc.pid)
            poller.register(pidfd, select.POLLIN)
        try:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    return status, usage, reason
                now = time.monotonic()
                if reason is None and (self.stop_requested or (deadline and now >= deadline)):
                    reason = "stopped" if self.stop_requested else "timeout"
                    self._signal_group(proc.pid, signal.SIGTERM)
                    kill_at = now + KILL_GRACE_S
                elif kill_at is not None and now >= kill_at:
                    self._signal_group(proc.pid, signal.SIGKILL)
                    kill_at = None
                wake = [t for t in (kill_at, None if reason else deadline) if t is not None]
                wait_ms = int((min(wake) - now) * 1000) + 1 if wake else -1
                if pidfd is None:
                    wait_ms = 10 if wait_ms < 0 else min(wait_ms, 10)
                if any(fd == self.wake_r for fd, _ in poller.poll(wait_ms)):
                    with contextlib.suppress(BlockingIOError):
                        while os.read(self.wake_r, 512):
                            pass
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def end_orphans(self) -> None:
        """A runner killed by SIGKILL leaves its command running (in its own session, as
        KEY.child says): end it, or it would run beside its own repetition."""
        with contextlib.suppress(OSError, ValueError):
            pid, boot = self.files.path("child").read_text().split()
            marks = {f"{name}={value}" for name, value in self.mark.items()}
            if boot == self.boot_id and marks <= environment(int(pid)):  # not a reused pid
                log(f"ending process group {pid}, left running by a killed runner")
                self._signal_group(int(pid), signal.SIGKILL)

    @staticmethod
    def _signal_group(pgid: int, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)

    def iteration(self, journal: Journal, iteration: int, attempt: int) -> dict[str, Any] | None:
        """Run one attempt and return its journal record; None if stopped before it began."""
        env = {**self.env, "LAB_ITERATION": str(iteration), "LAB_ATTEMPT": str(attempt)}
        if self.spec.clean_argv:
            clean = self.run_child(self.spec.clean_argv, self.cwd, env, self.spec.timeout_s)
            if clean.stopped:
                return None
            if clean.error is not None:
                error = f"clean command failed: {clean.error}"
                return self.record(iteration, attempt, Child(clean.started, clean.ended), {}, error)
        journal.event("begin", iteration=iteration, attempt=attempt, boot_id=self.boot_id)
        child = self.run_child(self.spec.argv, self.cwd, env, self.spec.timeout_s)
        if child.error is not None:
            return self.record(iteration, attempt, child, {}, child.error)
        return self.record(iteration, attempt, child, *self.metrics(child))

    def metrics(self, child: Child) -> tuple[dict[str, float], str | None]:
        """The spec's metrics from the parser's output and the runner's own timings."""
        spec = self.spec
        parsed: dict[str, float | None] = {}
        if spec.parser != "none":
            scratch = self.scratch
            source = scratch.out if spec.parse_from == "stdout" else scratch.err
            try:
                parsed.update(self.parsers.PARSERS[spec.parser](scratch.read(source)))
            except self.parsers.ParseError as err:
                return {}, f"parse error: {err}"
            except Exception as err:  # a parser bug must not end the run
                return {}, f"parser {spec.parser!r} failed: {type(err).__name__}: {err}"
        # A source is looked up in the parser's output first, then in the runner's timings.
        timings = dict(zip(TIMINGS, (child.wall, child.user, child.sys), strict=True))
        available = {**timings, **parsed}
        metrics = {name: available.get(key) for key, name in spec.metrics_from.items()}
        missing = [key for key, name in spec.metrics_from.items() if metrics[name] is None]
        if missing:
            return {}, f"no {', '.join(missing)} in the output of parser {spec.parser!r}"
        return {name: float(value) for name, value in metrics.items() if value is not None}, None

    def record(
        self, iteration: int, attempt: int, child: Child, metrics: dict[str, float],
        error: str | None, boot: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        return {
            "iteration": iteration, "attempt": attempt, "ok": error is None,
            "started": child.started, "ended": child.ended, "wall": child.wall,
            "user": child.user, "sys": child.sys, "exit_status": child.exit_status,
            "boot_id": boot or self.boot_id, "metrics": metrics, "error": error,
            "output_tail": self.tail(),
        }  # fmt: skip

    def interrupted(self, begin: dict[str, Any]) -> dict[str, Any]:
        """The failed record of an attempt that began and never ended."""
        then = str(begin.get("boot_id", "unknown"))
        why = "the runner was killed" if then == self.boot_id else "the guest restarted"
        started = begin.get("time")
        child = Child(float(started) if isinstance(started, int | float) else time.time())
        error = f"interrupted: {why} during this attempt"
        return self.record(begin["iteration"], begin["attempt"], child, {}, error, boot=then)

    def serve(self) -> int:
        """The whole run, in the detached process; returns its exit status."""
        spec, journal = self.spec, Journal(self.files.path("journal"))
        self.scratch = Scratch(self.files)
        history = History.of(journal.records)
        first, last = spec.start_iteration, spec.end_iteration
        todo = [i for i in range(first, last + 1) if i not in history.ok]
        spec_json = {f.name: getattr(spec, f.name) for f in fields(spec)}
        journal.event(
            "start", pid=os.getpid(), boot_id=self.boot_id, todo=len(todo), spec=spec_json
        )
        self.end_orphans()
        for begin in history.open_begins:
            journal.append(self.interrupted(begin))
        if todo and spec.setup_argv and not self.stop_requested:
            setup = self.run_child(spec.setup_argv, self.files.dir, self.env, None)
            journal.event("setup", ok=setup.error is None, wall=setup.wall, error=setup.error,
                          exit_status=setup.exit_status, output_tail=self.tail())  # fmt: skip
            if setup.error is not None and not setup.stopped:
                journal.event("gave_up", error=f"setup command failed: {setup.error}")
                return 1
        ok = failed = consecutive = 0
        for iteration in todo:
            attempt = history.next_attempt(iteration, spec.attempt_base)
            record = None if self.stop_requested else self.iteration(journal, iteration, attempt)
            if record is None:
                break
            # With no clean step, the next attempt's begin line follows at once and its fsync
            # makes this line durable too: one fsync per attempt instead of two.
            journal.append(record, sync=bool(spec.clean_argv))
            history.last_attempt[iteration] = attempt
            ok, failed = ok + record["ok"], failed + (not record["ok"])
            consecutive = 0 if record["ok"] else consecutive + 1
            limit = spec.max_consecutive_failures
            if limit and consecutive >= limit and not self.stop_requested:
                journal.event("gave_up", iteration=iteration, attempt=attempt,
                              consecutive_failures=consecutive, error=record["error"])  # fmt: skip
                return 1
        if self.stop_requested:
            journal.event("stopped", ok=ok, failed=failed)
            return 0
        journal.event("done", ok=ok, failed=failed, start_iteration=first, end_iteration=last)
        return 0


# -- the command line -----------------------------------------------------------------------


def lock_state(files: Files) -> tuple[bool, int | None]:
    """(running, pid): a runner runs while it holds the flock on KEY.pid."""
    try:
        fd = os.open(files.path("pid"), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False, None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False, None  # closing the fd below releases the shared lock
    except BlockingIOError:
        text = os.read(fd, 32).decode(errors="replace").strip()
        return True, int(text) if text.isdigit() else None
    finally:
        os.close(fd)


def take_lock(files: Files) -> bool:
    """Hold the run key's lock for the life of this process and write our pid in KEY.pid."""
    fd = os.open(files.path("pid"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return True  # the fd stays open on purpose


def emit(**values: Any) -> None:
    print(json.dumps(values), flush=True)


def _read_before(fd: int, deadline: float) -> bytes:
    """What ``fd`` has to read, waiting until ``deadline``; b"" at its end or at the deadline."""
    left = deadline - time.monotonic()
    return os.read(fd, 64) if left > 0 and select.select([fd], [], [], left)[0] else b""


def detach(files: Files, body: Callable[[], int]) -> int:
    """Double fork into a new session; the parent returns once the grandchild holds the lock."""
    sys.stdout.flush()
    sys.stderr.flush()
    ready_r, ready_w = os.pipe()
    if os.fork():  # the parent: wait for "ok PID" or "busy PID" from the grandchild
        os.close(ready_w)
        os.wait()
        message, deadline = b"", time.monotonic() + READY_TIMEOUT_S
        while chunk := _read_before(ready_r, deadline):
            message += chunk
        word, _, pid = message.decode().partition(" ")
        if word not in ("ok", "busy") or not pid.isdigit():
            log_path = files.path("log")
            print(f"runner: error: the runner did not start; see {log_path}", file=sys.stderr)
            return 1
        emit(started=word == "ok", running=True, pid=int(pid), run_key=files.key,
             journal=str(files.path("journal")), log=str(files.path("log")))  # fmt: skip
        return 0
    code = 70
    try:
        os.close(ready_r)
        os.setsid()
        if os.fork():
            os._exit(0)
        os.chdir("/")
        null = os.open(os.devnull, os.O_RDONLY)
        output = os.open(files.path("log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        for source, target in ((null, 0), (output, 1), (output, 2)):
            os.dup2(source, target)
        os.close(null)
        os.close(output)
        if not take_lock(files):
            os.write(ready_w, f"busy {lock_state(files)[1] or 0}".encode())
            os._exit(0)
        os.write(ready_w, f"ok {os.getpid()}".encode())
        os.close(ready_w)
        code = body()
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def cmd_start(files: Files, args: argparse.Namespace) -> int:
    parsers = load_parsers()
    try:
        data = json.loads(Path(args.spec).read_text())
    except (OSError, ValueError) as err:
        raise SpecError(f"cannot read the spec {args.spec}: {err}") from None
    runner = Runner(files, parse_spec(data, list(parsers.PARSERS)), parsers)
    running, pid = lock_state(files)
    if running:
        emit(started=False, running=True, pid=pid, run_key=files.key)
        return 0

    def body() -> int:
        log(f"run {files.key}: {runner.spec.start_iteration}..{runner.spec.end_iteration}")
        runner.install_signals()
        code = runner.serve()
        log(f"run {files.key}: finished with status {code}")
        return code

    if not args.foreground:
        return detach(files, body)
    if not take_lock(files):
        emit(started=False, running=True, pid=lock_state(files)[1], run_key=files.key)
        return 0
    return body()


def cmd_status(files: Files, args: argparse.Namespace) -> int:
    """Running or not, and the state the end of the journal shows."""
    running, pid = lock_state(files)
    state: dict[str, Any] = dict(
        run_key=files.key, running=running, pid=pid, boot_id=boot_id(), journal_bytes=0,
        last_iteration=None, last_attempt=None, last_ok=None, last_event=None, in_flight=None,
    )  # fmt: skip
    with contextlib.suppress(FileNotFoundError), open(files.path("journal"), "rb") as stream:
        state["journal_bytes"] = size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - 256 * 1024))
        data = stream.read()
        lines = data[: data.rfind(b"\n") + 1].decode(errors="replace").split("\n")
        for line in lines[1:] if size > len(data) else lines:  # the first line may be cut
            with contextlib.suppress(ValueError, AttributeError, KeyError, TypeError):
                record = json.loads(line)
                event = record.get("event")
                if event is None:
                    state.update(last_iteration=record["iteration"], in_flight=None,
                                 last_attempt=record["attempt"], last_ok=record["ok"])  # fmt: skip
                elif event == "begin":
                    state["in_flight"] = {
                        k: record.get(k) for k in ("iteration", "attempt", "time")
                    }
                else:
                    state["last_event"] = event
    if not running:
        state["in_flight"] = None
    state["finished"] = not running and state["last_event"] in TERMINAL_EVENTS
    emit(**state)
    return 0


def cmd_stop(files: Files, args: argparse.Namespace) -> int:
    """SIGTERM the runner; it records the attempt in progress as failed ("stopped")."""
    running, pid = lock_state(files)
    if not running or pid is None:
        emit(stopped=False, running=running, pid=pid, run_key=files.key)
        return 1 if running else 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while lock_state(files)[0]:
        if time.monotonic() > deadline:
            emit(stopped=False, running=True, pid=pid, run_key=files.key)
            return 1
        time.sleep(0.02)
    emit(stopped=True, running=False, pid=pid, run_key=files.key)
    return 0


COMMANDS: dict[str, Callable[[Files, argparse.Namespace], int]] = {
    "start": cmd_start,
    "status": cmd_status,
    "stop": cmd_stop,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="runner.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        command = sub.add_parser(name)
        command.add_argument("--dir", required=True, help="the run's directory in the guest")
        command.add_argument("--run-key", required=True, help="names the journal and other files")
        if name == "start":
            command.add_argument("--spec", required=True, help="the SPEC.json file")
            command.add_argument("--foreground", action="store_true", help="do not detach")
        if name == "stop":
            command.add_argument("--timeout", type=float, default=60.0, help="seconds to wait")
    args = parser.parse_args(argv)
    try:
        if not _KEY.fullmatch(args.run_key):
            raise SpecError(f"run key {args.run_key!r} must match {_KEY.pattern}")
        files = Files(Path(args.dir).resolve(), args.run_key)
        files.dir.mkdir(parents=True, exist_ok=True)
        return COMMANDS[args.command](files, args)
    except SpecError as err:
        print(f"runner: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"runner: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
