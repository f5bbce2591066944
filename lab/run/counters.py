"""Counters from the host, per iteration: ``perf stat`` on each guest's QEMU vCPU threads.

A verdict that one page size is faster invites the question why; the TLB counters answer it
(seed 003 runs ``perf stat -e dTLB-loads,dTLB-load-misses,…`` beside its benchmark). Under the
``sync`` and ``alternate`` schedules the controller knows when each iteration starts and
ends, so it counts the guest's vCPU threads (the QEMU threads named ``CPU n/KVM`` or
``CPU n/TCG``) over each iteration's window: from just before its runner starts until the
iteration is journalled, which adds the runner's own start to the command's time, alike
for both twins. The counts are stored as metrics ``perf.<event>`` of the run (lower is
better), compared like any other.

``lab run --counters`` chooses: ``none``, ``software`` (task-clock, page-faults,
context-switches, cpu-migrations: they work everywhere) or ``all`` (the default: the
hardware events too, where the host's PMU counts them; a nested VM has none, and perf
prints ``<not supported>``). A probe at the start of each run finds which work; the others
are recorded once, with the reason, in the run's environment.

The events and the parsing of ``perf stat -x,`` are ``lab.host.perf``'s.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from lab.core.clock import Clock
from lab.core.hostexec import Host
from lab.host.perf import Reading, parse_perf_csv


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


def perf_argv(events: Sequence[str], threads: Sequence[int], out: Path) -> list[str]:
    return ["perf", "stat", "-x,", "-e", ",".join(events),
            "-t", ",".join(str(t) for t in threads), "-o", str(out)]  # fmt: skip


def probe(
    host: Host, events: Sequence[str], threads: Sequence[int], out: Path
) -> dict[str, Reading]:
    """Count ``events`` on ``threads`` for 0.2 s: which of them this host can count."""
    host.run([*perf_argv(events, threads, out), "--", "sleep", "0.2"], check=False, timeout=30)
    try:
        return parse_perf_csv(out.read_text())
    except OSError:
        return {}


READY_S = 2.0  # how long start() waits for perf to begin counting


class Counting:
    """One ``perf stat`` over one guest's vCPU threads, from :meth:`start` to :meth:`stop`."""

    def __init__(self, host: Host, events: Sequence[str], threads: Sequence[int],
                 out: Path, clock: Clock) -> None:  # fmt: skip
        self.host, self.events, self.threads, self.out = host, events, threads, out
        self.clock = clock
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> bool:
        """Start perf and wait until it counts (it writes its ``# started on`` line once its
        options are read, just before it opens the counters), so that perf's own start-up,
        on a host with few CPUs, is not inside the iteration it counts. False if perf did
        not get there within READY_S (it may have failed; :meth:`stop` then reads {})."""
        self.out.unlink(missing_ok=True)
        argv = perf_argv(self.events, self.threads, self.out)
        self.proc = self.host.spawn(argv, self.out.with_suffix(".log"))
        deadline = self.clock.monotonic() + READY_S
        while self.proc.poll() is None and self.clock.monotonic() < deadline:
            try:
                if self.out.stat().st_size > 0:
                    return True
            except FileNotFoundError:
                pass
            self.clock.sleep(0.005)
        return False

    def stop(self) -> dict[str, Reading]:
        """Stop counting (perf prints its counts on SIGINT) and read them; {} if it failed."""
        proc, self.proc = self.proc, None
        if proc is None:
            return {}
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return {}
        try:
            return parse_perf_csv(self.out.read_text())
        except OSError:
            return {}
