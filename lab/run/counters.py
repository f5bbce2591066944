"""Counters from the host, per iteration: perf events on each guest's QEMU vCPU threads.

A verdict that one page size is faster invites the question why; the TLB counters answer it
(seed 003 runs ``perf stat -e dTLB-loads,dTLB-load-misses,…`` beside its benchmark). Under the
``sync`` and ``alternate`` schedules the controller knows when each iteration starts and
ends, so it counts the guest's vCPU threads (the QEMU threads named ``CPU n/KVM`` or
``CPU n/TCG``) over each iteration's window: from just before the step is sent to the
runner until its answer is in, alike for both twins. The counters are opened once per run
and guest (and again for a restarted QEMU) and enabled and read around each window
(``lab.host.perfevent``): no process per iteration. The counts are stored as metrics
``perf.<event>`` of the run (lower is better), compared like any other.

``lab run --counters`` chooses: ``none``, ``software`` (task-clock, page-faults,
context-switches, cpu-migrations: they work everywhere) or ``all`` (the default: the
hardware events too, where the host's PMU counts them; a nested VM has none, and the kernel
refuses them). A probe at the start of each run finds which work; the others are recorded
once, with the reason, in the run's environment.

The events are ``lab.host.perf``'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from lab.core.clock import Clock
from lab.core.hostexec import Host
from lab.host.perf import Reading
from lab.host.perfevent import Opener, ThreadCounters, open_counter

PROBE_S = 0.05  # how long the probe counts


def vcpu_threads(host: Host, pid: int) -> list[int]:
    """The thread ids of a QEMU process's vCPUs (threads named ``CPU n/…``)."""
    listing = host.run(["ls", f"/proc/{pid}/task"], check=False)
    threads = []
    for tid in listing.stdout.split():
        try:
            if host.read_text(f"/proc/{pid}/task/{tid}/comm").startswith("CPU "):
                threads.append(int(tid))
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile
    return threads


def probe(
    events: Sequence[str], threads: Sequence[int], clock: Clock, opener: Opener = open_counter
) -> dict[str, Reading]:
    """Count ``events`` on ``threads`` for PROBE_S: which of them this host can count."""
    counters = ThreadCounters(events, threads, opener)
    try:
        counters.start()
        clock.sleep(PROBE_S)
        return counters.stop()
    finally:
        counters.close()


class Counting:
    """One guest's vCPU threads counted window by window, for one QEMU process."""

    def __init__(self, pid: int, events: Sequence[str], threads: Sequence[int],
                 opener: Opener = open_counter) -> None:  # fmt: skip
        self.pid = pid
        self.counters = ThreadCounters(events, threads, opener)
        self.counting = False

    def start(self) -> None:
        self.counters.start()
        self.counting = True

    def stop(self) -> dict[str, Reading]:
        """The counts since :meth:`start` ({} if it was not counting)."""
        if not self.counting:
            return {}
        self.counting = False
        return self.counters.stop()

    def close(self) -> None:
        self.counters.close()
