"""Counting perf events on a set of threads from this process, window by window
(``perf_event_open(2)``): what ``lab.run.counters`` counts each iteration with.

``perf stat`` cannot do this cheaply: one ``perf stat`` per iteration cost a process start
(and its wait until it counts) per guest and iteration, and one for the whole run, enabled and
disabled through ``--control``, prints its counts only at its end (perf 6.1 here, measured:
the interval printer does not run at a disable). The kernel's interface is the one perf
itself uses: a counter per event and thread, opened once (disabled), then per window a reset
and an enable before it and a disable and a ``read(2)`` after it, each a system call. The
events are those of :mod:`lab.host.perf`, named as perf names them; the values are what
``perf stat`` prints (task-clock in milliseconds, counts scaled by the time enabled over the
time running when the PMU multiplexed them).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import os
import platform
import struct
from collections.abc import Callable, Sequence

from lab.host.perf import Reading

# perf_event_attr.type and .config of each event (linux/perf_event.h)
HARDWARE, SOFTWARE, HW_CACHE = 0, 1, 3
DTLB, ITLB = 3, 4  # PERF_COUNT_HW_CACHE_*
READ, WRITE = 0, 1  # PERF_COUNT_HW_CACHE_OP_*
MISS = 1  # PERF_COUNT_HW_CACHE_RESULT_MISS
EVENTS: dict[str, tuple[int, int]] = {
    "task-clock": (SOFTWARE, 1),
    "page-faults": (SOFTWARE, 2),
    "context-switches": (SOFTWARE, 3),
    "cpu-migrations": (SOFTWARE, 4),
    "cycles": (HARDWARE, 0),
    "instructions": (HARDWARE, 1),
    "dTLB-load-misses": (HW_CACHE, DTLB | READ << 8 | MISS << 16),
    "dTLB-store-misses": (HW_CACHE, DTLB | WRITE << 8 | MISS << 16),
    "iTLB-load-misses": (HW_CACHE, ITLB | READ << 8 | MISS << 16),
}
SYSCALL = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331}
ENABLE, DISABLE, RESET = 0x2400, 0x2401, 0x2403  # PERF_EVENT_IOC_*
READ_TIMES = 1 | 2  # PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
DISABLED = 1  # the first bit of the attribute's flags
FD_CLOEXEC = 8  # PERF_FLAG_FD_CLOEXEC
# perf_event_attr as of its first version (PERF_ATTR_SIZE_VER0): type, size, config,
# sample_period, sample_type, read_format, flags, wakeup_events, bp_type, config1
ATTR = struct.Struct("=IIQQQQQIIQ")
VALUE = struct.Struct("=QQQ")  # value, time enabled, time running

Opener = Callable[[str, int], int]  # (event, thread id) -> a counter's fd; raises OSError


def attr(event: str) -> bytes:
    kind, config = EVENTS[event]
    return ATTR.pack(kind, ATTR.size, config, 0, 0, READ_TIMES, DISABLED, 0, 0, 0)


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library, loaded once (a counter is opened per event and vCPU thread)."""
    return ctypes.CDLL(None, use_errno=True)


def open_counter(event: str, tid: int) -> int:
    """A disabled counter of ``event`` on thread ``tid`` (any CPU): its file descriptor."""
    number = SYSCALL.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, f"perf_event_open is not known on {platform.machine()}")
    data = ctypes.create_string_buffer(attr(event), ATTR.size)
    fd = int(_libc().syscall(number, data, tid, -1, -1, FD_CLOEXEC))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return fd


def _why(err: OSError) -> str:
    if err.errno in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV, errno.EINVAL):
        return "<not supported>"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "<not permitted>"
    return f"<{err.strerror}>"


class ThreadCounters:
    """``events`` counted on ``threads``, window by window (:meth:`start`, :meth:`stop`)."""

    def __init__(
        self, events: Sequence[str], threads: Sequence[int], opener: Opener = open_counter
    ) -> None:
        self.fds: dict[str, list[int]] = {}
        self.refused: dict[str, str] = {}  # event -> why it cannot be counted
        for event in events:
            fds: list[int] = []
            try:
                for tid in threads:
                    fds.append(opener(event, tid))
            except OSError as err:
                for fd in fds:
                    os.close(fd)
                self.refused[event] = _why(err)
                continue
            self.fds[event] = fds

    def start(self) -> None:
        for fds in self.fds.values():
            for fd in fds:
                fcntl.ioctl(fd, RESET, 0)
                fcntl.ioctl(fd, ENABLE, 0)

    def stop(self) -> dict[str, Reading]:
        """The counts since :meth:`start`, as ``perf stat -x,`` would give them."""
        for fds in self.fds.values():
            for fd in fds:
                fcntl.ioctl(fd, DISABLE, 0)
        readings = {e: Reading(e, None, "", why) for e, why in self.refused.items()}
        for event, fds in self.fds.items():
            total = 0.0
            for fd in fds:
                value, enabled, running = VALUE.unpack(os.read(fd, VALUE.size))
                # a thread that never ran in the window has 0 of both times: it counted 0
                total += value * enabled / running if running else value
            if event == "task-clock":  # nanoseconds; perf prints milliseconds
                readings[event] = Reading(event, total / 1e6, "msec")
            else:
                readings[event] = Reading(event, total, "")
        return readings

    def close(self) -> None:
        for fds in self.fds.values():
            for fd in fds:
                os.close(fd)
        self.fds.clear()
