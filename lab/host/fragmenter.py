"""The process that ages the host: it fragments free memory to an order-9 unusable free space
index and keeps holding what it took until it is stopped (``lab host age --undo``).

Run as ``python -m lab.host.fragmenter --level F --budget BYTES --floor BYTES --status PATH``
by :mod:`lab.host.aging`; it writes its progress and result to ``PATH`` (JSON) and, once the
index is reached, sleeps holding its memory: freeing it would let the buddy allocator merge
the 2 MiB blocks again.

The method is mmtests' thpscale's: fault anonymous memory in, then free every other 4 KiB
page (MADV_DONTNEED), so each 2 MiB block it touched keeps half its pages in use and its
free half is in holes no buddy can merge into an order-9 block. All of a round's memory is
faulted in before any of it is freed: the allocator serves the smallest free blocks first, so
holes freed early would be handed straight back to the next faults and filled. The holes
are then punched a 64 MiB chunk at a time until the index, counting the chunks not yet
punched as free 2 MiB blocks, reaches the level; those chunks are given back whole. The
pages kept are locked as they are (mlock2 MLOCK_ONFAULT) so no swap frees them, and
``lab host age`` keeps compaction off them once the level is held (lab.host.aging:
``vm.compact_unevictable_allowed`` 0). Bounded: never more than ``--budget`` bytes mapped at
once, and never below ``--floor`` bytes of MemAvailable; it never touches the huge page pools.

While it punches and gives memory back it caps the per-CPU page lists
(``vm.percpu_pagelist_high_fraction`` at its largest, so each list holds a few batches): the
holes go straight to the buddy lists.
Left to tune themselves the lists grow to GiBs under a burst of frees and give the holes back
at a few MiB a second, which on a 16 GiB host was 110 s of waiting for the index to settle
(145 s against 51 s for level 0.8). The sysctl's value is put back after each such step, and
on SIGTERM.

Standard library only, so it starts fast; it imports nothing of the lab but the parsers.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lab.host.telemetry import (
    PAGE_BYTES,
    FreeSpace,
    free_space,
    parse_buddyinfo,
    per_cpu_pages,
)

CHUNK_BYTES = 64 << 20
MAX_ROUNDS = 4
FIRST_SCALE = 1.1  # a round faults this much more than the estimate: the rest is given back
REACHED = 0.01  # a settled index this close below the level counts as reached
OVERSHOOT = 0.03  # a settled index further above the level gives chunks back
SETTLE_SECONDS = 300.0
SETTLED_SLACK_PAGES = 16384  # 64 MiB over the per-CPU lists' floor
PROT_READ, PROT_WRITE = 1, 2
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20
MADV_DONTNEED, MADV_NOHUGEPAGE = 4, 15
MLOCK_ONFAULT = 1
PCP_SYSCTL = "sys/vm/percpu_pagelist_high_fraction"
PCP_CAPPED = "100000"  # zone pages / this, a CPU's list: the kernel's floor, 4 batches


@dataclass
class Progress:
    """What the status file says: ``state`` is working, holding or failed."""

    state: str = "working"
    level: float = 0.0
    index: float = 0.0
    held_bytes: int = 0
    peak_bytes: int = 0
    rounds: int = 0
    seconds: float = 0.0
    pid: int = field(default_factory=os.getpid)
    error: str = ""


class Memory:
    """Anonymous mappings through libc: mapped, faulted in, punched and locked in place."""

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mmap.restype = ctypes.c_void_p
        self.libc.mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        self.libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.mlock2 = getattr(self.libc, "mlock2", None)
        if self.mlock2 is not None:
            self.mlock2.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

    def fault(self, size: int) -> int:
        """A new private mapping of ``size`` bytes, every page written (so not the zero page)."""
        addr = self.libc.mmap(
            None, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0
        )
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        # 4 KiB pages only: a transparent huge page would take a whole 2 MiB block at once.
        self.libc.madvise(addr, size, MADV_NOHUGEPAGE)
        ctypes.memset(addr, 0x5A, size)
        return int(addr)

    def punch(self, addr: int, size: int) -> None:
        """Free every other page of the mapping; lock the pages kept."""
        for offset in range(PAGE_BYTES, size, 2 * PAGE_BYTES):
            if self.libc.madvise(addr + offset, PAGE_BYTES, MADV_DONTNEED) != 0:
                raise OSError(ctypes.get_errno(), "madvise(MADV_DONTNEED) failed")
        if self.mlock2 is not None:
            self.mlock2(addr, size, MLOCK_ONFAULT)  # best effort: only swap could undo it

    def release(self, addr: int, size: int) -> None:
        self.libc.munmap(addr, size)


def mem_available(meminfo: str) -> int:
    for line in meminfo.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise ValueError("no MemAvailable in meminfo")


def round_bytes(free: int, level: float) -> int:
    """What one round faults in so that, with every other page freed, the index reaches
    ``level``: the faults fill the small free blocks first and break 2 MiB blocks for the
    rest, so afterwards the unusable free memory is half of it, A/2, of a free total of
    T - A/2; A/2 >= level * (T - A/2) gives A = 2 * level * T / (1 + level)."""
    return int(2 * level * free / (1 + level))


def mem_free(meminfo: str) -> int:
    for line in meminfo.splitlines():
        if line.startswith("MemFree:"):
            return int(line.split()[1]) * 1024
    raise ValueError("no MemFree in meminfo")


class Fragmenter:
    def __init__(self, args: argparse.Namespace, memory: Memory) -> None:
        self.args = args
        self.memory = memory
        self.proc = Path(args.proc)
        self.held: list[int] = []  # punched mappings, each CHUNK_BYTES
        self.progress = Progress(level=args.level)
        self.started = time.monotonic()
        self.pcp_before: str | None = None  # the per-CPU lists' setting while they are capped

    def cap_per_cpu_lists(self) -> str | None:
        """Cap the per-CPU lists; their setting before (None: the kernel has no such sysctl,
        before 5.14, or a stand-in /proc lacks it)."""
        path = self.proc / PCP_SYSCTL
        try:
            before = path.read_text().strip()
            path.write_text(PCP_CAPPED + "\n")
        except OSError:
            return None
        return before

    def restore_per_cpu_lists(self, before: str | None) -> None:
        if before is not None:  # else they stay capped: a little more zone lock traffic
            with contextlib.suppress(OSError):
                (self.proc / PCP_SYSCTL).write_text(before + "\n")

    @contextlib.contextmanager
    def lists_capped(self) -> Iterator[None]:
        """The per-CPU lists capped while the block frees memory, and only then: the setting
        is the whole host's, the guests' allocations included, so it is held for as short a
        time as the holes need."""
        self.pcp_before = self.cap_per_cpu_lists()
        try:
            yield
        finally:
            self.restore_per_cpu_lists(self.pcp_before)
            self.pcp_before = None

    def space(self) -> FreeSpace:
        return free_space(parse_buddyinfo((self.proc / "buddyinfo").read_text()))

    def pcp_bytes(self) -> int:
        return per_cpu_pages((self.proc / "zoneinfo").read_text()).count * PAGE_BYTES

    def meminfo(self) -> str:
        return (self.proc / "meminfo").read_text()

    def settled(self) -> FreeSpace:
        """The buddy lists once the pages just freed have left the per-CPU lists (they
        drain a few MiB a second), or after SETTLE_SECONDS."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            pcp = per_cpu_pages((self.proc / "zoneinfo").read_text())
            if pcp.count <= pcp.high_min + SETTLED_SLACK_PAGES:
                break
            time.sleep(1)
        return self.space()

    def report(self, state: str | None = None, error: str = "", index: float | None = None) -> None:
        p = self.progress
        p.state = state or p.state
        p.error = error
        p.held_bytes = len(self.held) * CHUNK_BYTES // 2
        p.seconds = round(time.monotonic() - self.started, 3)
        p.index = round(self.space().unusable_index if index is None else index, 4)
        status = Path(self.args.status)
        tmp = status.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(p)) + "\n")
        tmp.replace(status)

    def effective_index(self) -> float:
        """The index with the pages on the per-CPU lists counted as the holes they become."""
        space, pcp = self.space(), self.pcp_bytes()
        return (space.unusable_bytes + pcp) / max(1, space.free_bytes + pcp)

    def run(self) -> float:
        """Attempts until the index reaches the level; the settled index reached.

        Each attempt is one round from the host's own state: a round that falls short is
        given back whole before a larger one is tried, since a second round on top of it
        would first fill its holes (the allocator serves the smallest blocks first)."""
        level = self.args.level
        index = self.effective_index()
        scale = FIRST_SCALE
        while index < level - REACHED:
            if self.progress.rounds >= MAX_ROUNDS:
                raise RuntimeError(
                    f"index {index:.3f} still below {level} after {MAX_ROUNDS} rounds"
                )
            self.progress.rounds += 1
            capped = self.one_round(level, scale)
            index = self.effective_index()
            self.report(index=index)
            if index >= level - REACHED:
                break
            if capped:
                raise RuntimeError(
                    f"no room left to fault more memory in (budget or MemAvailable floor) at"
                    f" index {index:.3f}"
                )
            self.give_back_all()
            # What was faulted in reached index e: the free total was T = A/2 (1 + 1/e);
            # the level needs 2 L T / (1 + L), which is A L (1 + e) / (e (1 + L)).
            e = max(index, 0.05)
            scale *= FIRST_SCALE * level * (1 + e) / (e * (1 + level))
            index = self.effective_index()
        index = self.settled().unusable_index
        self.report(index=index)
        for _ in range(MAX_ROUNDS):
            if index <= level + OVERSHOOT or not self.held:
                break
            index = self.give_back(index, level)
            self.report(index=index)
        return index

    def give_back_all(self) -> None:
        with self.lists_capped():
            while self.held:
                self.memory.release(self.held.pop(), CHUNK_BYTES)

    def give_back(self, index: float, level: float) -> float:
        """Free whole punched chunks, newest first, to bring an index that overshot back
        down: each frees its kept half, whose blocks merge with their holes again (a chunk
        moves the index by about its size over the free total). The settled index."""
        space = self.space()
        total = space.free_bytes + self.pcp_bytes()
        count = max(1, int((index - level - REACHED) * total / CHUNK_BYTES))
        with self.lists_capped():
            for _ in range(min(count, len(self.held))):
                self.memory.release(self.held.pop(), CHUNK_BYTES)
        return self.settled().unusable_index

    def one_round(self, level: float, scale: float) -> bool:
        """Fault ``scale`` times the estimate in, then punch chunks until the level is
        reached; whether the budget or the MemAvailable floor cut the faulting short."""
        held_bytes = len(self.held) * CHUNK_BYTES // 2
        space = self.space()
        # MemFree: on a host whose memory is initialised on demand it is more than the
        # buddy lists hold, and the faults bring the rest in.
        free = max(space.free_bytes + self.pcp_bytes(), mem_free(self.meminfo()))
        want = int(round_bytes(free, level) * scale) + 2 * CHUNK_BYTES
        room = self.args.budget - held_bytes
        count = min(want, room) // CHUNK_BYTES
        capped = want > room
        fresh: list[int] = []
        try:
            for _ in range(count):
                if mem_available(self.meminfo()) - CHUNK_BYTES < self.args.floor:
                    capped = True
                    break  # the margin and the guests' memory stay free
                fresh.append(self.memory.fault(CHUNK_BYTES))
                peak = held_bytes + len(fresh) * CHUNK_BYTES
                self.progress.peak_bytes = max(self.progress.peak_bytes, peak)
            if not fresh:
                raise RuntimeError(
                    "no room left to fault memory in (budget or MemAvailable floor reached) at"
                    f" index {space.unusable_index:.3f}"
                )
            with self.lists_capped():
                self.punch_until(level, fresh)
        finally:
            with self.lists_capped():
                for addr in fresh:
                    self.memory.release(addr, CHUNK_BYTES)
        return capped

    def punch_until(self, level: float, fresh: list[int]) -> None:
        """Punch the chunks in ``fresh`` (taken off it as they are) until the index reaches
        the level; the chunks left are for the caller to give back whole."""
        while fresh:
            addr = fresh.pop(0)
            self.memory.punch(addr, CHUNK_BYTES)
            self.held.append(addr)
            # Pages on the per-CPU lists reach the buddy lists as holes; the chunks still
            # whole go back as free 2 MiB blocks: the index counting both.
            space, pcp = self.space(), self.pcp_bytes()
            total = space.free_bytes + pcp + len(fresh) * CHUNK_BYTES
            if total and (space.unusable_bytes + pcp) / total >= level:
                break


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.host.fragmenter")
    parser.add_argument("--level", type=float, required=True)
    parser.add_argument("--budget", type=int, required=True, help="bytes mapped at most")
    parser.add_argument("--floor", type=int, required=True, help="MemAvailable kept, bytes")
    parser.add_argument("--status", required=True)
    parser.add_argument("--proc", default="/proc")
    parser.add_argument("--exit", action="store_true", help="exit once reached (tests)")
    args = parser.parse_args(argv)
    fragmenter = Fragmenter(args, Memory())

    def stop(*_: object) -> None:  # the memory goes with the process
        fragmenter.restore_per_cpu_lists(fragmenter.pcp_before)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        fragmenter.report()
        index = fragmenter.run()
    except (OSError, RuntimeError, ValueError) as err:
        fragmenter.report("failed", str(err))
        return 1
    fragmenter.report("holding", index=index)
    sys.stdout.flush()
    while not args.exit:
        signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
