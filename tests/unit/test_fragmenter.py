"""The fragmenter's method on a toy buddy allocator written out as /proc files: whole 2 MiB
blocks taken, each broken down to one page kept, batch by batch until the index reaches the
level; bounded by its budget and the MemAvailable floor; the per-CPU lists capped while it
frees. The real kernel's side (huge pages faulted whole, split by the shrinkers) is checked
by tests/integration/test_host_age.py and bench/host_age.py."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lab.host.fragmenter import (
    BATCH_BYTES,
    BLOCK_BYTES,
    Fragmenter,
    Memory,
    blocks_needed,
    runs,
    thp_off,
)
from lab.host.telemetry import PAGE_BYTES, unusable_index

GIB = 1 << 30
KEPT = PAGE_BYTES


class ToyBuddy(Memory):
    """A buddy allocator in two numbers: ``big``, free bytes in whole 2 MiB blocks, and
    ``small``, free bytes in holes. A block taken comes off ``big`` (``limit``: the blocks
    the kernel gives before it has none left, as when the rest is reserved); broken down, all
    of it but one page joins ``small``; given back, it merges into ``big`` again."""

    def __init__(self, proc: Path, big: int, small: int, limit: int | None = None) -> None:
        self.proc, self.big, self.small, self.limit = proc, big, small, limit
        self.next = 1 << 40
        self.broken: set[int] = set()
        self.taken = 0
        self.write()

    def write(self) -> None:
        blocks = ["0"] * 11
        blocks[0], blocks[9] = str(self.small // PAGE_BYTES), str(self.big // BLOCK_BYTES)
        (self.proc / "buddyinfo").write_text("Node 0, zone   Normal " + " ".join(blocks) + "\n")
        (self.proc / "zoneinfo").write_text("    count: 0\n    high_min: 0\n")
        free_kib = (self.big + self.small) // 1024
        (self.proc / "meminfo").write_text(
            f"MemTotal: {24 * GIB // 1024} kB\nMemFree: {free_kib} kB\n"
            f"MemAvailable: {free_kib} kB\n"
        )

    def take(self, count: int) -> list[int]:
        given = min(count, self.big // BLOCK_BYTES)
        if self.limit is not None:
            given = min(given, self.limit - self.taken)
        self.taken += given
        self.big -= given * BLOCK_BYTES
        blocks = [self.next + i * BLOCK_BYTES for i in range(given)]
        self.next += (count + 1) * BLOCK_BYTES
        self.write()
        return blocks

    def break_down(self, blocks: list[int]) -> None:
        self.small += len(blocks) * (BLOCK_BYTES - KEPT)
        self.broken.update(blocks)
        self.write()

    def release(self, block: int) -> None:
        assert block in self.broken
        self.broken.discard(block)
        self.small -= BLOCK_BYTES - KEPT
        self.big += BLOCK_BYTES
        self.write()


def stand_in(tmp_path: Path, enabled: str = "always [madvise] never") -> Path:
    """A /sys with the THP setting, and the /proc sysctls the fragmenter writes."""
    sysfs = tmp_path / "sys"
    (sysfs / "kernel/mm/transparent_hugepage").mkdir(parents=True)
    (sysfs / "kernel/mm/transparent_hugepage/enabled").write_text(enabled + "\n")
    (tmp_path / "proc" / "sys" / "vm").mkdir(parents=True)
    return sysfs


def arguments(
    tmp_path: Path, level: float, budget: int = 8 * GIB, floor: int = GIB // 4
) -> argparse.Namespace:
    return argparse.Namespace(
        level=level, budget=budget, floor=floor, status=str(tmp_path / "status.json"),
        proc=str(tmp_path / "proc"), sys=str(tmp_path / "sys"),
    )  # fmt: skip


def toy(tmp_path: Path, big: int = 6 * GIB, small: int = GIB // 2, **kw: int) -> ToyBuddy:
    stand_in(tmp_path)
    return ToyBuddy(tmp_path / "proc", big, small, **kw)


@pytest.mark.parametrize("level", [0.3, 0.5, 0.8, 0.95, 1.0])
def test_the_fragmenter_reaches_the_level_holding_a_page_per_block(
    tmp_path: Path, level: float
) -> None:
    buddy = toy(tmp_path)
    fragmenter = Fragmenter(arguments(tmp_path, level), buddy)
    index = fragmenter.run()
    expected = buddy.small / (buddy.small + buddy.big)  # the toy's own account
    assert index == pytest.approx(expected)
    assert index == pytest.approx(unusable_index((tmp_path / "proc/buddyinfo").read_text()))
    assert level - 0.01 <= index <= level + 0.03
    if level == 1.0:  # every block, not just to within 0.01 of it (that left 200 MiB of THP)
        assert buddy.big == 0
    held = len(fragmenter.held) * KEPT
    assert buddy.big + buddy.small + held == 6.5 * GIB  # nothing lost
    assert held <= 6 * GIB / 512 + KEPT  # one page per block at most
    assert fragmenter.progress.peak_bytes <= BATCH_BYTES + held
    # the split asked for: the shrinkers' run (drop_caches 2) after each batch
    assert (tmp_path / "proc/sys/vm/drop_caches").read_text() == "2\n"


def test_blocks_needed_agrees_with_the_index_it_aims_at() -> None:
    free, unusable = 10 * GIB, GIB
    for level in (0.2, 0.5, 0.9, 1.0):
        k = blocks_needed(free, unusable, level)
        after = (unusable + k * (BLOCK_BYTES - KEPT)) / (free - k * KEPT)
        before = (unusable + (k - 1) * (BLOCK_BYTES - KEPT)) / (free - (k - 1) * KEPT)
        assert before < level <= after + 1e-12  # the fewest blocks that reach it
    assert blocks_needed(free, unusable, 0.05) == 0  # at it already


def test_a_host_out_of_blocks_holds_its_highest_index_when_that_is_the_level(
    tmp_path: Path,
) -> None:
    # level 1 asks for every block; the kernel gives all but the last few (reserved)
    buddy = toy(tmp_path, big=2 * GIB, small=GIB // 8, limit=1020)
    index = Fragmenter(arguments(tmp_path, 1.0), buddy).run()
    assert buddy.big == 4 * BLOCK_BYTES and index > 0.99


class Reclaiming(ToyBuddy):
    """A host with page cache to reclaim: once no block is free, a THP fault still gets one,
    made by evicting the cache (what defrag does for a MADV_HUGEPAGE fault)."""

    def __init__(self, proc: Path, big: int, small: int, cache: int) -> None:
        super().__init__(proc, big, small)
        self.cache, self.evicted = cache, 0

    def take(self, count: int) -> list[int]:
        blocks: list[int] = []
        for _ in range(count):  # fault by fault, each reclaiming for itself
            if self.big == 0 and self.cache:
                self.evicted += BLOCK_BYTES
                self.cache -= BLOCK_BYTES
                self.big += BLOCK_BYTES
            got = super().take(1)
            if not got:
                break
            blocks += got
        return blocks


def test_level_1_takes_the_blocks_reclaim_makes_too_and_a_lower_level_evicts_nothing(
    tmp_path: Path,
) -> None:
    # on the real pair, a host stopped at its last free block gave the thp twin 222 MiB of
    # huge pages: its faults reclaimed page cache that undo had compacted into whole blocks
    stand_in(tmp_path)
    buddy = Reclaiming(tmp_path / "proc", 2 * GIB, GIB // 8, cache=GIB)
    index = Fragmenter(arguments(tmp_path, 1.0), buddy).run()
    assert buddy.big == 0 and index == 1.0
    assert buddy.evicted == GIB and buddy.cache == 0  # every block a fault can get

    (tmp_path / "lower").mkdir()
    stand_in(tmp_path / "lower")
    buddy = Reclaiming(tmp_path / "lower" / "proc", 2 * GIB, GIB // 8, cache=GIB)
    Fragmenter(arguments(tmp_path / "lower", 0.9), buddy).run()
    assert buddy.evicted == 0  # below 1, the free blocks suffice


def test_a_level_the_host_cannot_reach_fails_with_its_highest_index(tmp_path: Path) -> None:
    buddy = toy(tmp_path, big=2 * GIB, small=GIB // 8, limit=200)
    with pytest.raises(RuntimeError, match=r"index 0\.\d+ is the highest this host reaches"):
        Fragmenter(arguments(tmp_path, 0.9), buddy).run()


def test_the_fragmenter_stays_within_its_budget_and_above_the_floor(tmp_path: Path) -> None:
    buddy = toy(tmp_path, big=2 * GIB, small=GIB // 8)
    args = arguments(tmp_path, 0.8, budget=128 << 20)  # 64 blocks a batch at most
    fragmenter = Fragmenter(args, buddy)
    fragmenter.run()
    assert fragmenter.progress.peak_bytes <= args.budget
    assert fragmenter.progress.rounds >= GIB // (128 << 20)  # many small batches

    (tmp_path / "floor").mkdir()
    buddy = toy(tmp_path / "floor")
    args = arguments(tmp_path / "floor", 0.8, floor=int(6.5 * GIB) - (1 << 20))
    with pytest.raises(RuntimeError, match="no room left"):  # not a block above the floor
        Fragmenter(args, buddy).run()
    assert buddy.taken == 0


def test_a_host_whose_thp_is_off_is_refused_with_the_reason(tmp_path: Path) -> None:
    stand_in(tmp_path, "always madvise [never]")
    buddy = ToyBuddy(tmp_path / "proc", 6 * GIB, GIB // 2)
    with pytest.raises(RuntimeError, match=r"transparent huge pages are off .*\[never\]"):
        Fragmenter(arguments(tmp_path, 0.8), buddy).run()
    assert buddy.taken == 0
    assert thp_off("always madvise [never]\n") and not thp_off("[always] madvise never\n")


def test_an_index_past_the_level_gives_whole_blocks_back(tmp_path: Path) -> None:
    buddy = toy(tmp_path)
    fragmenter = Fragmenter(arguments(tmp_path, 0.6), buddy)
    fragmenter.run()
    held = len(fragmenter.held)
    index = fragmenter.give_back(0.6, 0.5)  # as if it had overshot to 0.6 asking for 0.5
    assert len(fragmenter.held) < held and 0.5 <= index <= 0.53  # the run's own bound
    assert buddy.big + buddy.small + len(fragmenter.held) * KEPT == 6.5 * GIB


def test_the_per_cpu_lists_are_capped_while_it_frees_and_put_back_after(tmp_path: Path) -> None:
    buddy_dir = tmp_path
    stand_in(buddy_dir)
    sysctl = tmp_path / "proc/sys/vm/percpu_pagelist_high_fraction"
    sysctl.write_text("0\n")
    taking: list[str] = []
    freeing: list[str] = []

    class Watching(ToyBuddy):
        def take(self, count: int) -> list[int]:
            taking.append(sysctl.read_text().strip())
            return super().take(count)

        def break_down(self, blocks: list[int]) -> None:
            freeing.append(sysctl.read_text().strip())
            super().break_down(blocks)

    Fragmenter(arguments(tmp_path, 0.5), Watching(tmp_path / "proc", 6 * GIB, GIB // 2)).run()
    assert freeing and set(freeing) == {"100000"}  # every block broken with the lists capped
    assert taking and set(taking) == {"0"}  # and none taken so: capped, faults are slower
    assert sysctl.read_text() == "0\n"


def test_a_failed_run_puts_the_per_cpu_lists_back_too(tmp_path: Path) -> None:
    stand_in(tmp_path)
    (tmp_path / "proc/sys/vm/percpu_pagelist_high_fraction").write_text("8\n")

    class Failing(ToyBuddy):
        def break_down(self, blocks: list[int]) -> None:
            raise OSError(12, "madvise(MADV_DONTNEED) failed")

    with pytest.raises(OSError):
        Fragmenter(arguments(tmp_path, 0.8), Failing(tmp_path / "proc", 6 * GIB, GIB)).run()
    assert (tmp_path / "proc/sys/vm/percpu_pagelist_high_fraction").read_text() == "8\n"


def test_adjacent_blocks_are_one_range() -> None:
    b = BLOCK_BYTES
    assert runs([5 * b, 2 * b, 3 * b, 9 * b]) == [(2 * b, 2 * b), (5 * b, b), (9 * b, b)]
    assert runs([]) == []


def test_the_real_memory_takes_whole_huge_pages_and_keeps_one_page_of_each() -> None:
    """On this host's own kernel, a few blocks: each is a huge page (its second page is in
    memory after one byte was written), and broken down only the first page stays."""
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not thp.exists() or thp_off(thp.read_text()):
        pytest.skip("no transparent huge pages on this host")
    memory = Memory()
    blocks = memory.take(4)
    if not blocks:  # an aged host: no free 2 MiB block to take
        pytest.skip("no free 2 MiB block on this host now (lab host age --status)")
    try:
        assert all(b % BLOCK_BYTES == 0 for b in blocks)
        assert all(memory.present(b + PAGE_BYTES) for b in blocks)
        memory.break_down(blocks)
        assert all(memory.present(b) for b in blocks)  # the page kept
        assert not any(memory.present(b + PAGE_BYTES) for b in blocks)
        assert not any(memory.present(b + BLOCK_BYTES - PAGE_BYTES) for b in blocks)
    finally:
        for block in blocks:
            memory.release(block)
