"""What backed the guest's own memory over one iteration, read by the runner in the guest.

The host sees which pages back the guest's RAM (``lab.run.backing``); the guest's kernel
knows whether *its* anonymous memory got transparent huge pages. Around each attempt's timed
command (outside its timing) the runner reads ``/proc/vmstat``; an attempt that succeeded
gets, as metrics:

- ``backing.guest_thp_fault_alloc`` and the other THP counters: how many times each happened
  during the iteration (the difference of the two readings);
- ``backing.guest_anon_huge_kib``: the guest's anonymous memory in huge pages after it, from
  ``nr_anon_transparent_hugepages`` times the THP size (what ``/proc/meminfo`` shows as
  ``AnonHugePages``, from the same kernel counter).

They are evidence, not performance (their direction is "neither"). A kernel without a
counter (no THP support) gives no metric for it. Standard library only: this runs in the
guest's zipapp.

Cheap under emulation, where every system call and Python line costs ten times more: one
file, read through a descriptor kept open (:class:`ProcFiles`: one ``pread``, where open,
read and close were three calls), its lines found with ``str.find``, each search starting
where the one before ended (the kernel writes them in this order), and the reading after an
attempt is the reading before the next one when nothing ran between them
(:meth:`lab.inguest.runner.Runner.iteration`), so an iteration reads the file once. The
counters are the whole guest's anyway; the window then also holds the runner's own
bookkeeping between two attempts. Iterations shorter than the runner's BACKING_EVERY_S are
read around in a sample, one in every few.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

PREFIX = "backing.guest_"
VMSTAT = ("thp_fault_alloc", "thp_fault_fallback", "thp_collapse_alloc", "thp_split_page")
ANON_THPS = "nr_anon_transparent_hugepages"  # a level, in huge pages; written before VMSTAT
ANON_HUGE = "anon_huge_kib"
METRICS = (*(PREFIX + name for name in VMSTAT), PREFIX + ANON_HUGE)  # their names, in order
THP_SIZE = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"


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


def thp_kib(read: Callable[[str], str] = _read) -> int | None:
    """The size of a transparent huge page in KiB; None without THP support."""
    try:
        text = read(THP_SIZE).strip()
    except OSError:
        return None
    return int(text) // 1024 if text.isdigit() else None


def _value_after(text: str, key: str, start: int = 0) -> tuple[str | None, int]:
    """What follows line-start ``key`` up to the end of its line, and where that line ends
    (None and ``start`` if no line starts so). The search begins at ``start``, then, if
    it finds nothing there, at the beginning: under emulation a regex over every line cost
    twice as much as a ``str.find`` per key, and a ``find`` over the whole text four times
    as much as one from where the last key was."""
    at = text.find("\n" + key, start)
    if at < 0 and start > 0:
        at = text.find("\n" + key)
    if at < 0:
        if not text.startswith(key):
            return None, start
        at = -1
    begin = at + 1 + len(key)
    end = text.find("\n", begin)
    end = end if end >= 0 else len(text)
    return text[begin:end], end


def parse_vmstat(text: str) -> dict[str, int]:
    """The THP counters and ``nr_anon_transparent_hugepages`` of a ``/proc/vmstat`` text
    (``name value`` lines)."""
    found, at = {}, 0
    for name in (ANON_THPS, *VMSTAT):
        value, at = _value_after(text, name + " ", at)
        if value is not None and value.strip().isdigit():
            found[name] = int(value)
    return found


def counters(read: Callable[[str], str] = _read) -> dict[str, int]:
    """The reading now ({} where /proc/vmstat cannot be read)."""
    try:
        return parse_vmstat(read("/proc/vmstat"))
    except OSError:
        return {}


def metrics(
    before: Mapping[str, int], after: Mapping[str, int], huge_kib: int | None
) -> dict[str, float]:
    """The metrics of one attempt from the readings around it; ``huge_kib``: the size of a
    transparent huge page (None: no ``anon_huge_kib``)."""
    found = {PREFIX + name: float(after[name] - before[name])
             for name in VMSTAT if name in before and name in after}  # fmt: skip
    if huge_kib is not None and ANON_THPS in after:
        found[PREFIX + ANON_HUGE] = float(after[ANON_THPS] * huge_kib)
    return found


def measure(
    before: Mapping[str, int], read: Callable[[str], str] = _read, huge_kib: int | None = None
) -> tuple[dict[str, float], dict[str, int]]:
    """Read again after the attempt: its metrics, and the reading now (the next attempt's
    reading before, when nothing runs between the two)."""
    now = counters(read)
    return metrics(before, now, huge_kib), now
