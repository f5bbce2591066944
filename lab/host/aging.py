"""``lab host age``: fragment the host's free memory to an order-9 unusable free space index,
hold it so, and give it all back.

A fresh host gives THP its best case, an aged one its worst (issue 42). The fragmenting is
done by a small process (:mod:`lab.host.fragmenter`) that keeps holding its memory after the
command returns; its pid is recorded in ``STATE_DIR/host-aging.json`` (a
:class:`~lab.host.changes.ChangeLog`, like ``lab host prepare``'s) and ``--undo`` stops it.
It never touches the huge page pools, and it is bounded: at its peak it leaves
max(2 GiB, 10 % of MemTotal) of MemAvailable plus the guests' memory (``keep_free``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.core.clock import Clock
from lab.core.errors import LabError, UsageError
from lab.core.hostexec import Host
from lab.host.changes import ChangeLog
from lab.host.fragmenter import (
    BATCH_BYTES,
    BLOCK_BYTES,
    PCP_CAPPED,
    PCP_SYSCTL,
    blocks_needed,
    mem_available,
)
from lab.host.telemetry import PAGE_BYTES, HostTelemetry

AGING_FILE = "host-aging.json"
KIND = "aging"
MAX_LEVEL = 1.0  # every free 2 MiB block broken: the worst case THP meets
GIB = 1 << 30
MARGIN_BYTES = 2 * GIB
MARGIN_SHARE = 0.10
STATUS_FILE = "host-aging-status.json"
LOG_FILE = "host-aging.log"
AGE_TIMEOUT = 1800.0  # taking and breaking ~20 GB of blocks takes well under a minute
STOP_TIMEOUT = 60.0
DRAIN_TIMEOUT = 30.0  # the kernel drains the lists down to their high each second
DRAINED_SLACK_PAGES = 1024  # 4 MiB over the capped lists' floor
MODULE = "lab.host.fragmenter"
# Compaction may migrate the mlocked pages the fragmenter keeps unless this is 0: then a THP
# fault's direct compaction (QEMU madvises guest RAM, and defrag "madvise" compacts for it)
# rebuilt 2 MiB blocks out of the holes, and the thp twin's huge page share on a host aged to
# 0.8 was the fresh host's (22 % against 22-23 %). On a host up for weeks the pages in the
# holes are mostly the kernel's own, which compaction cannot move either.
UNEVICTABLE = "sys/vm/compact_unevictable_allowed"
COMPACT = "sys/vm/compact_memory"


@dataclass(frozen=True)
class Budget:
    """What the fragmenter may have mapped at its peak, in bytes."""

    available: int  # MemAvailable
    margin: int  # max(2 GiB, 10 % of MemTotal): always left available
    keep_free: int  # the guests' memory: left available too

    @property
    def floor(self) -> int:
        return self.margin + self.keep_free

    @property
    def usable(self) -> int:
        return max(0, self.available - self.floor)


def budget(meminfo: str, keep_free: int) -> Budget:
    total = next(
        int(line.split()[1]) * 1024 for line in meminfo.splitlines() if line.startswith("MemTotal:")
    )
    return Budget(mem_available(meminfo), max(MARGIN_BYTES, int(total * MARGIN_SHARE)), keep_free)


def check_level(level: float) -> None:
    if not 0.0 <= level <= MAX_LEVEL:
        raise UsageError(
            f"level {level:g} is outside [0, {MAX_LEVEL}]",
            hint="Give the share of free memory that cannot serve a 2 MiB block, e.g."
            " --level 0.8 (1: no free 2 MiB block left for THP at all)",
        )


def peak_bytes(free_bytes: int, unusable_bytes: int, level: float) -> int:
    """What the fragmenter has mapped at its peak: one batch of 2 MiB blocks taken whole,
    beside the one page it keeps of each block before."""
    blocks = blocks_needed(free_bytes, unusable_bytes, level)
    return min(blocks * BLOCK_BYTES, BATCH_BYTES) + blocks * PAGE_BYTES


class Processes:
    """The fragmenter process: started, looked for, stopped (tests hand in a fake)."""

    def __init__(self, host: Host, proc: Path = Path("/proc")) -> None:
        self.host = host
        self.proc = proc

    def start(self, argv: list[str], log: Path) -> int:
        return self.host.spawn(argv, log).pid

    def running(self, pid: int) -> bool:
        """True while ``pid`` is a fragmenter (not a pid reused since, nor a zombie).

        Its command line reads empty at moments while it unmaps or locks gigabytes (the
        kernel reads it from the process's memory): seen on the real pair, where the lab
        then took a fragmenter holding its level for one that had ended, and left it
        running unrecorded. Empty, with the process not gone, it is still the fragmenter."""
        if self.gone(pid):
            return False
        try:
            cmdline = self.host.read_text(self.proc / str(pid) / "cmdline")
        except OSError:
            return False
        return not cmdline or MODULE in cmdline.split("\0")

    def gone(self, pid: int) -> bool:
        """True once ``pid`` has exited for good: its memory is back only then (its command
        line is unreadable already while the kernel tears its memory down)."""
        try:
            stat = self.host.read_text(self.proc / str(pid) / "stat")
        except OSError:
            return True
        return stat.rpartition(")")[2].split()[:1] in (["Z"], ["X"])

    def stop(self, pid: int, force: bool = False) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL if force else signal.SIGTERM)


@dataclass(frozen=True)
class Aged:
    level: float
    index_before: float
    index: float
    pid: int | None  # None: the index was at the level already; nothing was started
    held_bytes: int = 0
    peak_bytes: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Unaged:
    pid: int
    held_bytes: int
    was_running: bool


@dataclass(frozen=True)
class AgingState:
    index: float
    free_bytes: int
    pid: int | None  # the fragmenter recorded, if any
    running: bool
    level: float | None
    held_bytes: int


@dataclass
class Ager:
    """``lab host age`` on one host: its /proc through ``host``, the fragmenter through
    ``processes``, the record in ``state_dir``."""

    host: Host
    clock: Clock
    state_dir: Path
    processes: Processes
    proc: Path = Path("/proc")
    python: str = sys.executable

    @property
    def telemetry(self) -> HostTelemetry:
        return HostTelemetry(self.host, self.proc)

    def log(self) -> ChangeLog:
        return ChangeLog.load(self.state_dir, AGING_FILE)

    def age(self, level: float, keep_free: int) -> Aged:
        """Start the fragmenter and wait until it holds the host at ``level``."""
        check_level(level)
        log = self.log()
        earlier = log.find(KIND)
        if earlier is not None:
            if self.processes.running(int(earlier.detail["pid"])):
                raise LabError(
                    f"the host is aged already (level {earlier.detail['level']}, fragmenter pid"
                    f" {earlier.detail['pid']})",
                    hint="Run `lab host age --undo` first, then age it again",
                )
            log.changes.remove(earlier)  # its process is gone: nothing to undo any more
            log.save()
        space = self.telemetry.free_space()
        if space.unusable_index >= level:
            return Aged(level, space.unusable_index, space.unusable_index, None)
        meminfo = self.host.read_text(self.proc / "meminfo")
        room = budget(meminfo, keep_free)
        peak = peak_bytes(space.free_bytes, space.unusable_bytes, level)
        if peak > room.usable:
            raise LabError(
                f"not enough free memory to age the host to {level:g}: about {peak / GIB:.1f} GiB"
                f" is faulted in at the peak, {room.usable / GIB:.1f} GiB may be (MemAvailable"
                f" {room.available / GIB:.1f} GiB less a margin of {room.margin / GIB:.1f} GiB"
                f" and {room.keep_free / GIB:.1f} GiB kept for the guests); nothing was touched",
                hint="Ask for a lower --level, a smaller --keep-free, or stop what uses memory",
            )
        status = self.state_dir / STATUS_FILE
        self.host.run(["mkdir", "-p", str(self.state_dir)])
        self.host.run(["rm", "-f", str(status)])
        argv = [self.python, "-m", MODULE, "--level", str(level), "--budget", str(room.usable)]
        argv += ["--floor", str(room.floor), "--status", str(status), "--proc", str(self.proc)]
        # Compaction kept off the pages the fragmenter keeps before it takes any: kcompactd
        # (proactive compaction) otherwise gathers them while it works and hands their blocks
        # back whole, and reaching level 1 took 1,111 batches holding 1.1 GiB, not 36 MiB.
        pinned = self._pin_holes()
        pid = self.processes.start(argv, self.state_dir / LOG_FILE)
        restore = {} if pinned is None else {"unevictable_before": pinned}
        change = log.add(KIND, pid=pid, level=level, index_before=space.unusable_index, **restore)
        try:
            result = self._wait(pid, status)
        except BaseException:  # Ctrl-C too: nothing may stay held that is not recorded
            self._stop(pid)
            self._unpin_holes(pinned)
            log.changes.remove(change)
            log.save()
            raise
        change.detail.update(
            index=result["index"], held_bytes=result["held_bytes"], peak_bytes=result["peak_bytes"]
        )
        log.save()
        return Aged(
            level,
            space.unusable_index,
            float(result["index"]),
            pid,
            int(result["held_bytes"]),
            int(result["peak_bytes"]),
            float(result["seconds"]),
        )

    def _wait(self, pid: int, status: Path) -> dict[str, Any]:
        deadline = self.clock.monotonic() + AGE_TIMEOUT
        while True:
            result = self._status(status)
            if result.get("state") == "holding":
                return result
            if result.get("state") == "failed":
                raise LabError(
                    f"could not age the host: {result.get('error')}; everything was given back",
                    hint="Ask for a lower --level or free memory (see `lab host age --status`)",
                )
            if not self.processes.running(pid):
                if self._status(status).get("state") in ("holding", "failed"):
                    continue  # it wrote its end and exited between the two looks
                raise LabError(
                    f"the fragmenter (pid {pid}) ended before it reached the level",
                    hint=f"See {self.state_dir / LOG_FILE}",
                )
            if self.clock.monotonic() >= deadline:
                raise LabError(
                    f"the fragmenter did not reach the level within {AGE_TIMEOUT:.0f} s; stopped",
                    hint=f"See {self.state_dir / LOG_FILE}",
                )
            self.clock.sleep(1.0)

    def _status(self, status: Path) -> dict[str, Any]:
        try:
            result = json.loads(self.host.read_text(status))
        except (OSError, ValueError):
            return {}  # not written yet (or half-way through a rename)
        return result if isinstance(result, dict) else {}

    def _stop(self, pid: int) -> bool:
        """Stop the fragmenter; True if it was running."""
        if not self.processes.running(pid):
            return False
        self.processes.stop(pid)
        deadline = self.clock.monotonic() + STOP_TIMEOUT
        while not self.processes.gone(pid):
            if self.clock.monotonic() >= deadline:
                self.processes.stop(pid, force=True)
                break
            self.clock.sleep(0.2)
        return True

    @contextlib.contextmanager
    def _capped_per_cpu_lists(self) -> Iterator[None]:
        """The per-CPU page lists capped for the block, as the fragmenter caps them while it
        punches: the pages freed reach the buddy lists (and merge) as they are freed, not at
        a few MiB a second afterwards. Where the kernel has no such setting, nothing."""
        path = self.proc / PCP_SYSCTL
        try:
            before = self.host.read_text(path).strip()
            self.host.write_text(path, PCP_CAPPED + "\n")
        except OSError:
            before = None
        try:
            yield
        finally:
            if before is not None:
                self.host.write_text(path, before + "\n")

    def _compact(self) -> None:
        """Compact every zone (``vm.compact_memory``); nothing on a kernel without it."""
        with contextlib.suppress(OSError):
            self.host.write_text(self.proc / COMPACT, "1\n")

    def _drain_per_cpu_lists(self) -> None:
        """Wait (DRAIN_TIMEOUT at most) until the capped per-CPU lists hold no more than their
        floor: pages freed while the host was aged came from holes, one fragment of many
        blocks each, and on the lists they keep those blocks from merging. Seen here: a probe
        that exited while the host was aged left 13,600 pages on the lists and the index at
        0.71 after undo, against 0.09 before; drained, it was back."""
        deadline = self.clock.monotonic() + DRAIN_TIMEOUT
        while self.clock.monotonic() < deadline:
            try:
                pcp = self.telemetry.per_cpu_pages()
            except OSError:
                return
            if pcp.count <= pcp.high_min + DRAINED_SLACK_PAGES:
                return
            self.clock.sleep(0.5)

    def _pin_holes(self) -> str | None:
        """Keep compaction off the fragmenter's pages (:data:`UNEVICTABLE` at 0); the setting
        before, or None where the kernel has none (no compaction) or it was 0 already."""
        path = self.proc / UNEVICTABLE
        try:
            before = self.host.read_text(path).strip()
            if before == "0":
                return None
            self.host.write_text(path, "0\n")
        except OSError:
            return None
        return before

    def _unpin_holes(self, before: str | None) -> None:
        """Compaction may move mlocked pages again, as before :meth:`_pin_holes`."""
        if before is not None:
            self.host.write_text(self.proc / UNEVICTABLE, f"{before}\n")

    def undo(self) -> Unaged | None:
        """Stop the fragmenter so its memory goes back, then compact: what was allocated
        while the host was aged took a fragment of many blocks each (the allocator serves the
        smallest first), and keeps them from merging. Seen here: two guests and a short run
        left the index at 0.86 after the fragmenter stopped, 0.06 once compacted (0.1 s).
        None when nothing was recorded."""
        log = self.log()
        change = log.find(KIND)
        if change is None:
            return None
        pid = int(change.detail["pid"])
        with self._capped_per_cpu_lists():  # the memory back in the buddy lists at once
            was_running = self._stop(pid)
            self._unpin_holes(change.detail.get("unevictable_before"))
            self._compact()
            self._drain_per_cpu_lists()
        log.changes.remove(change)
        log.save()
        self.host.run(["rm", "-f", str(self.state_dir / STATUS_FILE)])
        return Unaged(pid, int(change.detail.get("held_bytes", 0)), was_running)

    def state(self) -> AgingState:
        space = self.telemetry.free_space()
        change = self.log().find(KIND)
        if change is None:
            return AgingState(space.unusable_index, space.free_bytes, None, False, None, 0)
        pid = int(change.detail["pid"])
        return AgingState(
            space.unusable_index,
            space.free_bytes,
            pid,
            self.processes.running(pid),
            float(change.detail["level"]),
            int(change.detail.get("held_bytes", 0)),
        )


def aged_fact(state_dir: Path) -> str:
    """The host's age as a run records it with its evidence: the level ``lab host age`` was
    asked for, or "no" (also where the record cannot be read)."""
    try:
        change = ChangeLog.load(state_dir, AGING_FILE).find(KIND)
    except (OSError, ValueError, LabError):
        return "no"
    return "no" if change is None else str(change.detail.get("level", "yes"))
