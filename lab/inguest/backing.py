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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

PREFIX = "backing.guest_"
VMSTAT = ("thp_fault_alloc", "thp_fault_fallback", "thp_collapse_alloc", "thp_split_page")
ANON_HUGE = "anon_huge_kib"
METRICS = (*(PREFIX + name for name in VMSTAT), PREFIX + ANON_HUGE)  # their names, in order


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as stream:
        return stream.read()


def parse_vmstat(text: str) -> dict[str, int]:
    """The THP counters of a ``/proc/vmstat`` text (``name value`` lines)."""
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in VMSTAT and value.strip().isdigit():
            found[name] = int(value)
    return found


def parse_anon_huge_kib(text: str) -> int | None:
    """``AnonHugePages`` of a ``/proc/meminfo`` text, in KiB; None when absent."""
    for line in text.splitlines():
        if line.startswith("AnonHugePages:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return int(fields[1])
    return None


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
    try:
        meminfo: str | None = read("/proc/meminfo")
    except OSError:
        meminfo = None
    return metrics(before, counters(read), meminfo)
