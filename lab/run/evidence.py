"""What a run records beside its samples: the environment of each start, what backs each
guest's memory, and perf's counts of the guests' vCPU threads over every iteration.

The controller (``lab.run.controller``) holds one :class:`Evidence` per run and calls it at the
start of a run, around each iteration (sync and alternate schedules), after each look at the
journals (the concurrent schedule) and at the end.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lab.core.context import Context
from lab.core.errors import LabError
from lab.core.hostexec import Host
from lab.core.units import format_kib
from lab.guests.labstate import GuestRecord, LabState
from lab.guests.ssh import GuestShell
from lab.host.aging import aged_fact
from lab.host.environment import host_environment
from lab.host.facts import Pool, read_hugepage_pools
from lab.host.perf import counted, derived, events_for, per_kilo_instruction, refused
from lab.host.perfevent import open_counter
from lab.host.qemuproc import qemu_cmdline, qemu_pid, read_qemu_memory
from lab.host.site import SYSFS
from lab.host.telemetry import thp_counters, unusable_index
from lab.inguest import backing as guest_backing
from lab.run.backing import backing_facts
from lab.run.counters import Counting, probe, vcpu_threads
from lab.run.environment import GUEST_SCRIPT, guest_environment, lab_facts
from lab.run.sources import per_guest
from lab.store import MetricInfo, Store

if TYPE_CHECKING:
    from lab.guests.sites import Site


# What backed each guest's memory, per iteration: the guest's own THP counters, read by its
# runner (lab.inguest.backing), and its QEMU's memory on the host with the host's free huge
# pages per pool: after each iteration under the sync and alternate schedules, after each
# look at the journals under the concurrent one (as a sample of the last iteration that
# look found). Evidence, not performance: their direction is None, so they are stored and
# exported but never given a verdict.
HOST_BACKING = {  # metric -> the smaps fields it sums, in KiB, less TCG's translation buffer
    "backing.qemu_rss_kib": ("Rss",),
    "backing.qemu_anon_huge_kib": ("AnonHugePages",),
    "backing.qemu_hugetlb_kib": ("Shared_Hugetlb", "Private_Hugetlb"),
}
# The host's supply of 2 MiB blocks beside each iteration (issue 42: THP decays as a host
# ages): the order-9 unusable free space index of /proc/buddyinfo and vmstat's cumulative THP
# fault counters, read once per host per look with its pools.
HOST_TELEMETRY = {
    "backing.host_thp_unusable_index": "ratio",
    "backing.host_thp_fault_alloc": "count",
    "backing.host_thp_fault_fallback": "count",
}
EVIDENCE_METRICS = (
    *(MetricInfo(name, "KiB" if name.endswith("_kib") else "count", None)
      for name in guest_backing.METRICS),
    *(MetricInfo(name, "KiB", None) for name in HOST_BACKING),
    *(MetricInfo(name, unit, None) for name, unit in HOST_TELEMETRY.items()),
)  # fmt: skip
# A QEMU's smaps took 33 ms to read and sum here (a 1 GiB guest under TCG), beside 0.1 s
# iterations of `null` under the sync schedule: read at most this often, as the guest's own
# counters are (lab.inguest.runner.BACKING_EVERY_S).
HOST_BACKING_EVERY_S = 2.0
POOL_FREE = "backing.host_free_pages_{size}"  # and "_node{N}", one metric per pool


def host_telemetry(read: Callable[[str], str]) -> dict[str, float]:
    """:data:`HOST_TELEMETRY` now, each left out where it cannot be read."""
    found: dict[str, float] = {}
    with contextlib.suppress(OSError, ValueError, ZeroDivisionError, LabError):
        found["backing.host_thp_unusable_index"] = unusable_index(read("/proc/buddyinfo"))
    with contextlib.suppress(OSError, ValueError, LabError):
        counters = thp_counters(read("/proc/vmstat"))
        found["backing.host_thp_fault_alloc"] = float(counters.fault_alloc)
        found["backing.host_thp_fault_fallback"] = float(counters.fault_fallback)
    return found


def pool_metrics(pools: Sequence[Pool]) -> dict[str, str]:
    """Metric -> the sysfs file of its free page count, for each pool that holds pages: per
    NUMA node, or the global pools of a host whose sysfs has no nodes."""
    per_node = [p for p in pools if p.node is not None and p.total > 0]
    found = {}
    for pool in per_node or [p for p in pools if p.node is None and p.total > 0]:
        metric = POOL_FREE.format(size=format_kib(pool.page_kib).lower())
        where = "/sys/kernel/mm/hugepages"
        if pool.node is not None:
            metric += f"_node{pool.node}"
            where = f"/sys/devices/system/node/node{pool.node}/hugepages"
        found[metric] = f"{where}/hugepages-{pool.page_kib}kB/free_hugepages"
    return found


class GuestProgress(Protocol):
    """What evidence needs of a guest's part of the run (``lab.run.controller``'s)."""

    record: GuestRecord
    guest_id: int
    shell: GuestShell
    completed: set[int]


class Evidence:
    """The evidence of one run; every side effect comes through ``ctx`` (or a site's)."""

    def __init__(
        self,
        ctx: Context,
        store: Store,
        run_id: int,
        guests: Sequence[GuestProgress],
        *,
        counters: str,
        schedule: str,
        sites: Mapping[str, tuple[Site, LabState]],
        state_of: Callable[[GuestRecord], LabState],
        domain_xml: Callable[[GuestRecord], str | None],
        with_guest: Callable[[Any, Callable[[Any], Any]], Any],  # the controller's
        defined_xml: Callable[[GuestRecord], str | None] | None = None,  # the inactive XML
        sources: Callable[[], Mapping[str, Mapping[str, str]]] | None = None,  # the workload's
        host_age: str | None = None,  # the host age level the run was asked for (--host-age)
    ) -> None:
        self.host_age = host_age
        self.defined_xml = defined_xml or domain_xml
        self.ctx, self.store, self.run_id, self.guests = ctx, store, run_id, guests
        self.counters, self.schedule, self.sites = counters, schedule, sites
        self.state_of, self.domain_xml, self.with_guest = state_of, domain_xml, with_guest
        self.environment: dict[str, dict[str, str]] = {}  # guest -> facts of this start
        self.counter_events: tuple[str, ...] = ()  # the perf events that count on this host
        self.counting: dict[str, Counting] = {}  # guest -> its counters, open for the run
        self.opener = open_counter  # perf_event_open(2); tests hand in their own
        self.backing_read_at: dict[str, float] = {}  # guest -> when end_counting last read it
        self.xml: dict[str, str | None] = {}  # guest -> its domain XML at this start
        self.threads: dict[str, tuple[int, list[int]]] = {}  # guest -> (QEMU pid, vCPU tids)
        self.pool_files: dict[str, dict[str, str]] = {}  # host -> pool_metrics() of its pools
        self.sampled: dict[str, int] = {}  # guest -> the last iteration sample_backing() took
        self.read_sources = sources  # Workload.source_versions of the run's parameters
        self.sources: dict[str, dict[str, str]] = {}  # guest -> its sources' facts this start

    def record_environment(self) -> None:
        """Store each host's and guest's facts for this start of the run
        (``lab.run.environment``); a fact that cannot be read is "not available"."""
        hosts: dict[str, Any] = {}
        for guest in self.guests:
            hosts.setdefault(guest.record.host, guest.record)
        for name, record in hosts.items():
            site = self.sites.get(name)
            ctx = site[0].ctx if site else self.ctx
            state = self.state_of(record)
            try:
                conn: Any = ctx.libvirt
            except LabError:
                conn = None
            pools = site[0].hugepage_pools() if site else read_hugepage_pools(SYSFS)
            self.pool_files[name] = pool_metrics(pools)
            self.store.add_metrics(
                self.run_id, [MetricInfo(m, "pages", None) for m in self.pool_files[name]]
            )
            facts = host_environment(ctx.host.read_text, pools, conn)
            facts.update(self._probe_counters(record, remote=self._remote(name)))
            facts.update(
                accelerator=state.accelerator, accelerator_reason=state.accel_reason,
                image_hash=state.image_hash, **lab_facts(self.ctx.host),
                host_aged=aged_fact(Path(ctx.config.state_dir)),
            )  # fmt: skip
            if self.host_age is not None:  # the level checked at the start (lab.host.agelevels)
                facts["host_age"] = self.host_age
            self.store.record_environment(self.run_id, "host", name, facts)
        self.sources = self._sources()
        for guest in self.guests:
            self.record_guest(guest)

    def _sources(self) -> dict[str, dict[str, str]]:
        """Each guest's facts of the user's sources it runs (``lab.run.sources``), read now:
        a git revision resolved to its commit at this start. A workload that cannot read
        them is warned of, and the run goes on without them."""
        if self.read_sources is None:
            return {}
        try:
            versions = self.read_sources()
        except (OSError, LabError) as err:
            self.ctx.warn(f"the revision of the run's sources is not recorded: {err}")
            return {}
        return per_guest(versions, [g.record.name for g in self.guests])

    def record_guest(self, guest: GuestProgress, **extra: str) -> None:
        """Store ``guest``'s facts now (at a start, or in a new boot), with ``extra``."""
        output = self.with_guest(
            guest, lambda g: g.shell.run(["sh", "-c", GUEST_SCRIPT], timeout=60).stdout
        )
        xml = self.xml[guest.record.name] = self.domain_xml(guest.record)
        facts = guest_environment(output or "", self.defined_xml(guest.record))
        facts.update(host=guest.record.host, variant=guest.record.variant)
        facts.update(self._backing(guest.record, xml))
        facts["qemu_cmdline"] = json.dumps(qemu_cmdline(self._host(guest.record).read_text,
                                                        guest.record.name))  # fmt: skip
        facts.update(self.sources.get(guest.record.name, {}))
        facts.update(extra)
        self.environment[guest.record.name] = facts
        self.store.record_environment(self.run_id, "guest", guest.record.name, facts)

    def _probe_counters(self, record: GuestRecord, remote: bool) -> dict[str, str]:
        """Which perf events count on this host, tried on ``record``'s vCPU threads; the run
        gets a metric for each (``lab.run.counters``). Facts for the environment."""
        wanted = events_for(self.counters)
        if not wanted:
            return {"perf_counted": "none (--counters none)"}
        if self.schedule not in ("sync", "alternate") or remote:
            why = "another host" if remote else f"the {self.schedule} schedule"
            return {"perf_counted": f"none: counted per iteration under sync and alternate"
                    f" schedules on this machine, not on {why}"}  # fmt: skip
        threads = self._vcpu_threads(record)
        if not threads:
            return {"perf_counted": "none: the guest's QEMU vCPU threads cannot be read"}
        readings = probe(wanted, threads, self.ctx.clock, self.opener)
        self.counter_events = counted(readings, wanted)
        self.store.add_metrics(self.run_id, [
            *(MetricInfo(readings[e].metric, readings[e].metric_unit, "lower")
              for e in self.counter_events),
            *(MetricInfo(metric, "per 1,000 instructions", "lower")
              for metric in per_kilo_instruction(self.counter_events).values()),
        ])  # fmt: skip
        return {
            "perf_counted": ",".join(self.counter_events) or "none",
            "perf_not_counted": ", ".join(refused(readings, wanted)) or "none",
        }

    def _vcpu_threads(self, record: GuestRecord) -> list[int]:
        """The guest's vCPU threads, listed again only when its QEMU is a new process (a
        guest restarted by the run): the pid file is one read, the listing a command."""
        try:
            pid = qemu_pid(self.ctx.host.read_text, record.name)
            known = self.threads.get(record.name)
            if known is None or known[0] != pid:
                known = self.threads[record.name] = (pid, vcpu_threads(self.ctx.host, pid))
            return known[1]
        except (OSError, ValueError, LabError):
            return []

    def begin_counting(self, guests: Sequence[GuestProgress]) -> None:
        """Count each guest's vCPU threads from now, for the coming iteration (counters
        opened at the first iteration of the run, and again for a new QEMU process)."""
        if not self.counter_events:
            return
        for guest in guests:
            name = guest.record.name
            threads = self._vcpu_threads(guest.record)
            counting = self.counting.get(name)
            if not threads:
                continue
            pid = self.threads[name][0]
            if counting is None or counting.pid != pid:
                if counting is not None:
                    counting.close()
                counting = self.counting[name] = Counting(pid, self.counter_events, threads,
                                                          self.opener)  # fmt: skip
            counting.start()

    def end_counting(self, iteration: int, guests: Sequence[GuestProgress]) -> None:
        """Stop counting; the counts of an iteration that succeeded become its samples, with
        what backs its guest's memory now (:data:`HOST_BACKING`), read after an iteration
        that ends HOST_BACKING_EVERY_S or more after the last reading: after every one of
        longer iterations, in a sample of short ones."""
        pools: dict[str, dict[str, float]] = {}  # host -> its free pages, read once here
        for guest in guests:
            counting = self.counting.get(guest.record.name)
            readings = counting.stop() if counting is not None else {}
            if iteration not in guest.completed:
                continue
            values = {r.metric: r.value for e, r in readings.items()
                      if r.value is not None and e in self.counter_events}  # fmt: skip
            values.update(derived(readings, self.counter_events))
            now = self.ctx.clock.monotonic()
            if now - self.backing_read_at.get(guest.record.name, -math.inf) >= HOST_BACKING_EVERY_S:
                self.backing_read_at[guest.record.name] = now
                values.update(self._host_backing(guest.record, pools))
            if values:
                self.store.record_samples(self.run_id, guest.guest_id, iteration, values)

    def close_counting(self) -> None:
        """Close every guest's counters (a run's pass is over, or was interrupted)."""
        for counting in self.counting.values():
            counting.close()
        self.counting.clear()

    def mark_sampled(self, guests: Sequence[GuestProgress]) -> None:
        """At a start, after the journals are read: the iterations done before it keep the
        host samples they have (:meth:`sample_backing` takes only newer ones)."""
        for guest in guests:
            self.sampled[guest.record.name] = max(guest.completed, default=0)

    def sample_backing(self, guests: Sequence[GuestProgress]) -> None:
        """Under the concurrent schedule, after a look at the journals: what backs each
        guest's memory now, as samples of the last iteration it completed since the last
        look (the runner goes on by itself, so there is no moment between iterations).
        Guests of this machine only, as with the counters: on another host every look would
        be SSH commands in the controller's loop, which a host that drops off would hold."""
        pools: dict[str, dict[str, float]] = {}  # host -> its free pages, read once here
        for guest in guests:
            if self._remote(guest.record.host):
                continue
            name = guest.record.name
            last = max(guest.completed, default=0)
            if last <= self.sampled.get(name, 0):
                continue
            self.sampled[name] = last
            values = self._host_backing(guest.record, pools)
            if values:
                self.store.record_samples(self.run_id, guest.guest_id, last, values)

    def _host_backing(
        self, record: GuestRecord, pools: dict[str, dict[str, float]]
    ) -> dict[str, float]:
        """The guest's QEMU's memory now, by kind, and its host's free huge pages per pool
        (each left out where it cannot be read); ``pools`` holds each host's free pages
        once read, so twins on one host share one reading."""
        read = self._host(record).read_text
        if record.host not in pools:
            pools[record.host] = {}
            for metric, path in self.pool_files.get(record.host, {}).items():
                try:
                    pools[record.host][metric] = float(int(read(path).strip()))
                except (OSError, ValueError, LabError):  # LabError: a remote host's SSH failed
                    continue
            pools[record.host].update(host_telemetry(read))
        found = dict(pools[record.host])
        try:
            fields = read_qemu_memory(read, record.name)
        except (OSError, ValueError, LabError):
            return found
        found.update({metric: float(sum(fields.get(f, 0) for f in summed))
                      for metric, summed in HOST_BACKING.items()})  # fmt: skip
        return found

    def _remote(self, host: str) -> bool:
        """Whether guests of ``host`` are on another machine (reached over SSH)."""
        site = self.sites.get(host)
        return site is not None and site[0].remote

    def _host(self, record: GuestRecord) -> Host:
        site = self.sites.get(record.host)
        return site[0].ctx.host if site else self.ctx.host

    def _backing(self, record: GuestRecord, xml: str | None) -> dict[str, str]:
        """What backs the guest's memory now (``lab.run.backing``), read on its host."""
        return backing_facts(self._host(record).read_text, record.name, xml)

    def record_backing(self) -> None:
        """At the end of a start: the guests' facts again, with their memory backing now
        that the work has faulted it in (the XML and QEMU's arguments are the start's)."""
        for guest in self.guests:
            name = guest.record.name
            facts = self.environment.get(name)
            if facts is not None:
                facts = {**facts, **self._backing(guest.record, self.xml.get(name))}
                self.store.record_environment(self.run_id, "guest", name, facts)
