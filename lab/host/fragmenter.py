"""The process that ages the host: it fragments free memory to an order-9 unusable free space
index and keeps holding what it took until it is stopped (``lab host age --undo``).

Run as ``python -m lab.host.fragmenter --level F --budget BYTES --floor BYTES --status PATH``
by :mod:`lab.host.aging`; it writes its progress and result to ``PATH`` (JSON) and, once the
index is reached, sleeps holding its memory: freeing it would let the buddy allocator merge
the 2 MiB blocks again.

The method takes whole free 2 MiB blocks and keeps one 4 KiB page of each. It faults
anonymous memory in as transparent huge pages (``MADV_HUGEPAGE``): each is one physical 2 MiB
block, so a fault never fills the holes of the blocks taken before (an order-9 allocation
cannot use them). It then frees all of each block but its first page (``MADV_DONTNEED``) and
has the kernel split the huge pages (its deferred-split shrinker, run by ``drop_caches`` 2):
the block's other 511 pages go back free, and no buddy can merge them into an order-9 block
while the page kept is in use. mmtests' thpscale keeps half of every block instead, so it must
fault in as much memory as it fragments; this keeps 1/512 of it (32 MiB for 16 GiB), faults in
one batch (BATCH_BYTES) at a time, and reaches any index up to 1: every free block broken,
with the guests' memory still free (in holes).

The pages kept are locked (mlock2 MLOCK_ONFAULT, so no swap frees them), their mappings barred
from huge pages again (``MADV_NOHUGEPAGE``: khugepaged would collapse a lone page into a new
block), and ``lab host age`` keeps compaction off them from before the first is taken
(lab.host.aging: ``vm.compact_unevictable_allowed`` 0). Bounded: never more than
``--budget`` bytes mapped at once, and never below ``--floor`` bytes of MemAvailable; it never
touches the huge page pools.
A host whose transparent huge pages are off (``never``) cannot be aged this way, and THP
twins get no huge pages on it at any age: the fragmenter says so and stops.

While it frees and gives memory back it caps the per-CPU page lists
(``vm.percpu_pagelist_high_fraction`` at its largest, so each list holds a few batches): the
holes go straight to the buddy lists.
Left to tune themselves the lists grow to GiBs under a burst of frees and give the holes back
at a few MiB a second, which on a 16 GiB host was 110 s of waiting for the index to settle.
The sysctl's value is put back after each such step, and on SIGTERM.

Standard library only, so it starts fast; it imports nothing of the lab but the parsers.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import math
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

BLOCK_BYTES = 2 << 20  # an order-9 block: one transparent huge page
BATCH_BYTES = 512 << 20  # blocks taken and broken at a time: the peak beyond what is held
BATCH_BLOCKS = BATCH_BYTES // BLOCK_BYTES
REACHED = 0.01  # a settled index this close below the level counts as reached
OVERSHOOT = 0.03  # a settled index further above the level gives blocks back
GIVE_BACKS = 8  # rounds of blocks given back to an index that overshot, at most
MAX_BATCHES = 4096  # 2 TiB of blocks: a bound on the loop, not a limit met in use
SETTLE_SECONDS = 300.0
SETTLED_SLACK_PAGES = 16384  # 64 MiB over the per-CPU lists' floor
PROT_READ, PROT_WRITE = 1, 2
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20
MADV_DONTNEED, MADV_HUGEPAGE, MADV_NOHUGEPAGE = 4, 14, 15
MLOCK_ONFAULT = 1
PCP_SYSCTL = "sys/vm/percpu_pagelist_high_fraction"
PCP_CAPPED = "100000"  # zone pages / this, a CPU's list: the kernel's floor, 4 batches
# Writing 2 runs the kernel's shrinkers, the deferred split of partly unmapped huge pages
# among them (the only way to ask for it without debugfs; it drops the dentry and inode
# caches too).
SHRINK_SYSCTL = "sys/vm/drop_caches"
THP_ENABLED = "kernel/mm/transparent_hugepage/enabled"  # under /sys


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
    """Anonymous mappings through libc: whole 2 MiB blocks taken as transparent huge pages,
    broken down to their first page, and given back."""

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
        self.pagemap = os.open("/proc/self/pagemap", os.O_RDONLY)

    def present(self, addr: int) -> bool:
        """Whether the page at ``addr`` is in memory (pagemap's bit 63; no privilege needed)."""
        entry = os.pread(self.pagemap, 8, addr // PAGE_BYTES * 8)
        return bool(int.from_bytes(entry, "little") >> 63)

    def take(self, count: int) -> list[int]:
        """Up to ``count`` whole 2 MiB blocks, each faulted in as one transparent huge page;
        fewer when a fault got a 4 KiB page instead (the kernel found no free block, after
        compacting): that one and the rest of the mapping are given back."""
        size = (count + 1) * BLOCK_BYTES
        addr = self.libc.mmap(
            None, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0
        )
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        base = -(-addr // BLOCK_BYTES) * BLOCK_BYTES  # a huge page needs an aligned address
        if self.libc.madvise(base, count * BLOCK_BYTES, MADV_HUGEPAGE) != 0:
            self.libc.munmap(addr, size)
            raise OSError(ctypes.get_errno(), "madvise(MADV_HUGEPAGE) failed")
        blocks: list[int] = []
        for block in range(base, base + count * BLOCK_BYTES, BLOCK_BYTES):
            ctypes.memset(block, 0x5A, 1)  # one byte faults the whole huge page in
            if not self.present(block + PAGE_BYTES):
                break  # a 4 KiB page: no free 2 MiB block was left
            blocks.append(block)
        end = base + len(blocks) * BLOCK_BYTES
        if base > addr:
            self.libc.munmap(addr, base - addr)
        self.libc.munmap(end, addr + size - end)
        return blocks

    def break_down(self, blocks: list[int]) -> None:
        """Unmap all of each block but its first page, bar the mappings from huge pages and
        lock the pages kept. The huge pages stay whole (partly mapped) until the kernel
        splits them: :meth:`Fragmenter.split`."""
        for block in blocks:
            rest = block + PAGE_BYTES
            if self.libc.madvise(rest, BLOCK_BYTES - PAGE_BYTES, MADV_DONTNEED) != 0:
                raise OSError(ctypes.get_errno(), "madvise(MADV_DONTNEED) failed")
        for start, size in runs(blocks):
            self.libc.madvise(start, size, MADV_NOHUGEPAGE)
            if self.mlock2 is not None:  # best effort: only swap could undo it
                self.mlock2(start, size, MLOCK_ONFAULT)

    def release(self, block: int) -> None:
        self.libc.munmap(block, BLOCK_BYTES)


def runs(blocks: list[int]) -> list[tuple[int, int]]:
    """Adjacent blocks as (start, size) ranges: one madvise or mlock2 call each, so a batch
    stays one mapping in the kernel's books, not one per block."""
    out: list[tuple[int, int]] = []
    for block in sorted(blocks):
        if out and out[-1][0] + out[-1][1] == block:
            out[-1] = (out[-1][0], out[-1][1] + BLOCK_BYTES)
        else:
            out.append((block, BLOCK_BYTES))
    return out


def mem_available(meminfo: str) -> int:
    for line in meminfo.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise ValueError("no MemAvailable in meminfo")


def blocks_needed(free: int, unusable: int, level: float) -> int:
    """Blocks to take for the index to reach ``level``: each turns a free 2 MiB block (B)
    into B - P of holes and keeps a page P, so after k of them the index is
    (U + k (B - P)) / (F - k P); at ``level`` that is k = (L F - U) / (B - P + L P)."""
    need = (level * free - unusable) / (BLOCK_BYTES - PAGE_BYTES + level * PAGE_BYTES)
    return max(0, math.ceil(need))


def thp_off(enabled: str) -> bool:
    """Whether the host's transparent huge pages are off, from their ``enabled`` setting."""
    return "[never]" in enabled


class Fragmenter:
    def __init__(self, args: argparse.Namespace, memory: Memory) -> None:
        self.args = args
        self.memory = memory
        self.proc = Path(args.proc)
        self.held: list[int] = []  # blocks broken down, each keeping its first page
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
        p.held_bytes = len(self.held) * PAGE_BYTES
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
        """Batches of blocks taken and broken down until the index reaches the level; the
        settled index reached. Where the kernel has no free 2 MiB block left to give, the
        index reached is the host's highest, and it holds that. Level 1 takes blocks until
        then (within REACHED of it, 1 % of a 20 GiB host's free memory is 200 MiB of THP),
        those the kernel makes by reclaiming page cache and compacting included: it drops
        the clean page cache that could become whole blocks."""
        enabled = Path(self.args.sys) / THP_ENABLED
        if thp_off(enabled.read_text()):
            raise RuntimeError(
                f"transparent huge pages are off on this host ([never] in {enabled}): the"
                " fragmenter takes its blocks as huge pages, and a THP twin gets none at any age"
            )
        level = self.args.level
        every = level >= 1.0  # every free block: until the kernel has none left to give
        index = self.effective_index()
        for _ in range(MAX_BATCHES):
            if index >= level - REACHED and not every:
                break
            space, pcp = self.space(), self.pcp_bytes()
            want = blocks_needed(space.free_bytes + pcp, space.unusable_bytes + pcp, level)
            if want == 0 and not every:
                break  # the level is met, counting the per-CPU lists
            # Level 1 goes on past the last free block: with none free, a THP fault reclaims
            # clean page cache and compacts to make one, and the guests' faults would too
            # (a study's thp twin got 222 MiB of huge pages on a host stopped at the last
            # free block, after undo had compacted its cache into whole blocks).
            count = min(BATCH_BLOCKS, self.room_blocks(), BATCH_BLOCKS if every else want)
            if count <= 0:
                raise RuntimeError(
                    "no room left to take more memory (budget or MemAvailable floor) at index"
                    f" {index:.3f}"
                )
            blocks = self.memory.take(count)
            peak = len(self.held) * PAGE_BYTES + len(blocks) * BLOCK_BYTES
            self.progress.peak_bytes = max(self.progress.peak_bytes, peak)
            self.progress.rounds += 1
            with self.lists_capped():
                self.memory.break_down(blocks)
                self.held.extend(blocks)
                self.split()
            index = self.effective_index()
            self.report(index=index)
            if len(blocks) < count:
                break  # the kernel has no free 2 MiB block left: the host's highest index
        index = self.settled().unusable_index
        if index < level - REACHED:
            raise RuntimeError(
                f"index {index:.3f} is the highest this host reaches (no free 2 MiB block is"
                f" left to take), below {level}"
            )
        self.report(index=index)
        for _ in range(GIVE_BACKS):
            if index <= level + OVERSHOOT or not self.held:
                break
            index = self.give_back(index, level)
            self.report(index=index)
        return index

    def room_blocks(self) -> int:
        """Blocks one batch may take within the budget and above the MemAvailable floor."""
        budget = self.args.budget - len(self.held) * PAGE_BYTES
        available = mem_available(self.meminfo()) - self.args.floor
        return max(0, min(budget, available)) // BLOCK_BYTES

    def split(self) -> None:
        """Have the kernel split the partly unmapped huge pages, so the pages unmapped are
        free (until then the whole 2 MiB stays in use): the shrinkers' run that
        ``drop_caches`` 2 asks for includes the deferred split's."""
        try:
            (self.proc / SHRINK_SYSCTL).write_text("2\n")
        except OSError as err:
            raise RuntimeError(
                f"cannot ask the kernel to split huge pages ({self.proc / SHRINK_SYSCTL}:"
                f" {err.strerror}); run as root"
            ) from err

    def give_back(self, index: float, level: float) -> float:
        """Free whole blocks' kept pages, newest first, to bring an index that overshot back
        down: each block merges whole again (moving the index by about its size over the
        free total). The settled index."""
        space = self.space()
        total = space.free_bytes + self.pcp_bytes()
        count = max(1, int((index - level - REACHED) * total / BLOCK_BYTES))
        with self.lists_capped():
            for _ in range(min(count, len(self.held))):
                self.memory.release(self.held.pop())
        return self.settled().unusable_index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.host.fragmenter")
    parser.add_argument("--level", type=float, required=True)
    parser.add_argument("--budget", type=int, required=True, help="bytes mapped at most")
    parser.add_argument("--floor", type=int, required=True, help="MemAvailable kept, bytes")
    parser.add_argument("--status", required=True)
    parser.add_argument("--proc", default="/proc")
    parser.add_argument("--sys", default="/sys")
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
