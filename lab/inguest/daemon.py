"""Detaching from the SSH session, and the run key's lock that says whether a runner runs.

``start`` detaches (double fork, setsid, stdin from /dev/null, output to KEY.log) so that a
dropped SSH session or a restarted controller does not stop the run, and returns once the
detached runner holds its lock: an flock on KEY.pid, held for the runner's life.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from lab.inguest.runfiles import RunFiles

READY_TIMEOUT_S = 30.0


def log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{stamp} runner[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def emit(**values: Any) -> None:
    """The one JSON object a runner command prints on stdout."""
    print(json.dumps(values), flush=True)


def lock_state(files: RunFiles) -> tuple[bool, int | None]:
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


def take_lock(files: RunFiles) -> bool:
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


def _read_before(fd: int, deadline: float) -> bytes:
    """What ``fd`` has to read, waiting until ``deadline``; b"" at its end or at the deadline."""
    left = deadline - time.monotonic()
    return os.read(fd, 64) if left > 0 and select.select([fd], [], [], left)[0] else b""


def detach(files: RunFiles, body: Callable[[], int]) -> NoReturn:
    """Double fork into a new session; the parent exits once the grandchild holds the lock.

    The parent ends with ``os._exit``, without the interpreter's teardown: under emulation
    that took 80-120 ms of the guest's one CPU, beside the runner's first iterations (under
    ``sync``, beside the one iteration the start is for)."""
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
            _exit_now(1)
        emit(started=word == "ok", running=True, pid=int(pid), run_key=files.key,
             journal=str(files.path("journal")), log=str(files.path("log")))  # fmt: skip
        _exit_now(0)
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
        _exit_now(code)


def _exit_now(code: int) -> NoReturn:
    """Flush what was printed and end the process, without the interpreter's teardown."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
