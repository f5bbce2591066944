"""What backed the guest's own memory over one iteration, read by the runner in the guest.

The host sees which pages back the guest's RAM (``lab.run.backing``); the guest's kernel
knows whether *its* anonymous memory got transparent huge pages. Around each attempt's timed
command (outside its timing) the runner reads ``/proc/vmstat``'s THP counters, and after it
``/proc/meminfo``'s ``AnonHugePages``; an attempt that succeeded gets them as metrics:

- ``backing.guest_thp_fault_alloc`` and the other counters: how many times each happened
  during the iteration (the difference of the two readings);
- ``backing.guest_anon_huge_kib``: the guest's anonymous memory in huge pages after it.

They are evidence, not performance (their direction is "neither"). A kernel without a
counter (no THP support) gives no metric for it. Standard library only: this runs in the
guest's zipapp.

Cheap under emulation, where every system call and Python line costs ten times more: the
files are read through descriptors kept open (:class:`ProcFiles`: one ``pread`` each, where
open, read and close were three calls), their lines found with ``str.find``, and the
reading after an attempt is the reading before the next one when nothing ran between them
(:meth:`lab.inguest.runner.Runner.iteration`), so an iteration reads each file once. The
counters are the whole guest's anyway; the window then also holds the runner's own
bookkeeping between two attempts. Here that took the cost from 1.6-2.4 ms per iteration
under TCG to 0.5-0.7 ms.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

PREFIX = "backing.guest_"
VMSTAT = ("thp_fault_alloc", "thp_fault_fallback", "thp_collapse_alloc", "thp_split_page")
ANON_HUGE = "anon_huge_kib"
METRICS = (*(PREFIX + name for name in VMSTAT), PREFIX + ANON_HUGE)  # their names, in order


_CHUNK = 1 << 16


class ProcFiles:
    """Reads ``/proc`` files through descriptors opened once: a ``pread`` from offset 0 makes
    the kernel generate the text anew. Closed with the runner (close-on-exec meanwhile, so
    no timed command inherits them)."""

    def __init__(self) -> None:
        self.fds: dict[str, int] = {}

    def __call__(self, path: str) -> str:
        fd = self.fds.get(path)
        if fd is None:
            fd = self.fds[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        data = os.pread(fd, _CHUNK, 0)
        while len(data) % _CHUNK == 0 and data:  # a file longer than a chunk: the rest
            more = os.pread(fd, _CHUNK, len(data))
            if not more:
                break
            data += more
        return data.decode("ascii", errors="replace")

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as stream:
        return stream.read()


def _value_after(text: str, key: str) -> str | None:
    """What follows line-start ``key`` up to the end of its line; None if no line starts so.
    A ``str.find`` per key: under emulation a regex over every line cost twice as much."""
    at = text.find("\n" + key)
    if at < 0:
        if not text.startswith(key):
            return None
        at = -1
    start = at + 1 + len(key)
    end = text.find("\n", start)
    return text[start : end if end >= 0 else len(text)]


def parse_vmstat(text: str) -> dict[str, int]:
    """The THP counters of a ``/proc/vmstat`` text (``name value`` lines)."""
    found = {}
    for name in VMSTAT:
        value = _value_after(text, name + " ")
        if value is not None and value.strip().isdigit():
            found[name] = int(value)
    return found


def parse_anon_huge_kib(text: str) -> int | None:
    """``AnonHugePages`` of a ``/proc/meminfo`` text, in KiB; None when absent."""
    value = _value_after(text, "AnonHugePages:")
    fields = value.split() if value is not None else []
    return int(fields[0]) if fields and fields[0].isdigit() else None


def counters(read: Callable[[str], str] = _read) -> dict[str, int]:
    """The THP counters now ({} where /proc/vmstat cannot be read)."""
    try:
        return parse_vmstat(read("/proc/vmstat"))
    except OSError:
        return {}


def metrics(
    before: Mapping[str, int], after: Mapping[str, int], meminfo: str | None
) -> dict[str, float]:
    """The metrics of one attempt from the readings around it."""
    found = {PREFIX + name: float(after[name] - before[name])
             for name in VMSTAT if name in before and name in after}  # fmt: skip
    huge = parse_anon_huge_kib(meminfo) if meminfo is not None else None
    if huge is not None:
        found[PREFIX + ANON_HUGE] = float(huge)
    return found


def after(before: Mapping[str, int], read: Callable[[str], str] = _read) -> dict[str, float]:
    """Read again after the attempt: its metrics."""
    return measure(before, read)[0]


def measure(
    before: Mapping[str, int], read: Callable[[str], str] = _read
) -> tuple[dict[str, float], dict[str, int]]:
    """Read again after the attempt: its metrics, and the counters now (the next attempt's
    reading before, when nothing runs between the two)."""
    try:
        meminfo: str | None = read("/proc/meminfo")
    except OSError:
        meminfo = None
    now = counters(read)
    return metrics(before, now, meminfo), now
