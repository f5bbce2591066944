"""`lab run`'s controller: start the in-guest runners, stream their journals into the store.

The runners do the iterations themselves (detached in the guests), so the controller
can die, lose a connection or be restarted at any time: re-running the same command
finds the same run (its key is a hash of what was asked), ingests the journals again
(idempotently) and restarts a runner only where iterations are still missing.

A guest that stops answering is waited for, and said so once, for at most the plan's
``guest_timeout``: then the run stops with :class:`GuestLost` (status 4), naming the guest,
why it is gone where libvirt can tell (its domain destroyed, or replaced by a new one of the
same name), and the command that resumes it.

A journal is this store's run's only if that run claimed it (``KEY.owner`` in the guest: the
key and the moment the store's run was created). A journal the guest kept from a run that
was deleted since, or that another store holds, is retired (renamed ``KEY.retired-STAMP``) and
the run starts from its first iteration; with ``adopt`` its iterations are taken up instead.
Either way one line says so, with their count and dates: a deleted run stays deleted, and a
new store is never filled from old journals unasked.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.core.clock import Clock
from lab.core.context import Context
from lab.core.errors import GuestCommandError, GuestError, LabError, UsageError
from lab.core.inventory import LOCAL
from lab.core.units import format_timestamp
from lab.guests.channel import Channel, ChannelClosed, wait_any
from lab.guests.labstate import GuestRecord, LabState
from lab.guests.seed import GUEST_USER
from lab.guests.ssh import GuestShell
from lab.inguest.journal import (
    TERMINAL_EVENTS,
    JournalEntry,
    JournalError,
    JournalEvent,
    parse_journal_line,
)
from lab.run.evidence import EVIDENCE_METRICS, Evidence
from lab.run.guestrunner import GuestRunner
from lab.run.hostside import guest_infos, nfs_source
from lab.run.ingest import entry_to_record, new_pieces
from lab.run.placement import Placement, SwapSchedule, check_swap_plan
from lab.run.reboot import current_boot, power_cycle
from lab.run.schedules import SCHEDULES, STATUS_EVERY, run_schedule
from lab.run.workload import GuestInfo
from lab.stats.running import RunningMoments
from lab.stats.verdict import Threshold
from lab.store import MetricInfo, Store

if TYPE_CHECKING:
    from lab.guests.sites import Site

RUNNER_DIR = f"/home/{GUEST_USER}/lab-runner"
RECENT = 50  # iterations whose wall times give the rate and the ETA
# SQLite's page cache for the store while a run appends to it: the controller rereads
# nothing it wrote, and SQLite's default (2,000 KiB) would grow its memory through the
# first thousands of iterations, where the soak looks for a leak.
STORE_CACHE_KIB = 256
MAX_TROUBLES = 3  # runner failures in a row, with no attempt recorded, before a run stops
MIN_GUEST_FREE = 1024 * 1024  # bytes free in the runner's folder below which a guest is "full"
# A stepped runner answers each step on its channel, and its journal (the durable record,
# and what says a runner stopped) is read at most this often while the channel lives.
JOURNAL_EVERY_S = 10.0
MAX_UNTAKEN = 64  # attempts taken from answers and not yet stored, at most


class RunFailed(LabError):
    """A run stopped because iterations kept failing."""

    exit_code = 6


def _created(store: Store, study: str, key: str) -> float | None:
    """When the store's run ``key`` was created (0.0 if it does not say); None without it."""
    return next(((r.created or 0.0) for r in store.runs(study) if r.key == key), None)


def _taken(live: set[tuple[int, int]], item: JournalEntry | JournalEvent) -> bool:
    """Whether ``item`` is an attempt already taken from a stepped runner's answer (it is
    then dropped from ``live``: its line is read once)."""
    if not isinstance(item, JournalEntry) or (item.iteration, item.attempt) not in live:
        return False
    live.discard((item.iteration, item.attempt))
    return True


def _date(when: float | None) -> str:
    return format_timestamp(when or 0)


class GuestLost(GuestError):
    """A run stopped because one of its guests did not answer for ``guest_timeout``."""


@dataclass
class GuestProgress:
    """What the controller knows about one guest's part of the run."""

    record: GuestRecord
    guest_id: int
    shell: GuestShell
    runner: GuestRunner
    offset: int = 0  # bytes of the journal already ingested
    completed: set[int] = field(default_factory=set)
    failed_attempts: int = 0
    last_error: str = ""
    check_runner: bool = True  # ask whether the runner runs (and start it if not)
    # Only what a long run needs stays here, so the controller's memory does not grow
    # with the journal: the recent wall times, the first metric's running mean, and its
    # value per iteration only with --until (whose rule needs every pair).
    walls: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT))
    moments: RunningMoments = field(default_factory=RunningMoments)
    by_iteration: dict[int, float] = field(default_factory=dict)
    unreachable: bool = False
    lost_at: float | None = None  # when it first failed to answer, since it last answered
    domain_uuid: str | None = None  # its libvirt domain's, when the run started: tells a
    # guest replaced by another of the same name (a new `lab up`) from one that is slow
    journal_seen: bool = False  # the guest still has this run's journal
    runner_started: bool = False  # started by this controller, and not yet said it ended
    heard_at: float = 0.0  # when its journal last grew, or its runner was started or asked
    troubles: int = 0  # runner failures since the last attempt was recorded
    claimed: bool = False  # its journal is known to be this run's (claim_journal)
    # The paired schedules step a runner that stays up (lab.inguest.stepper) on a channel:
    channel: Channel | None = None
    stepping: int | None = None  # the iteration sent on it and not yet answered
    # Attempts taken from the channel's answers: their lines in the journal, read later,
    # are not counted twice (each is dropped from here once its journal line is read).
    live: set[tuple[int, int]] = field(default_factory=set)
    journal_read_at: float = -1e9  # when its journal was last read (ingest)
    last_boot: str | None = None  # the boot id of the last attempt taken (--reboot-every)


def run_key(
    study: str,
    workload: str,
    params: dict[str, Any],
    guests: list[str],
    n: int,
    schedule: str,
    until: str | None = None,
    swap_every: int | None = None,
    sweep: str | None = None,
    reboot_every: int | None = None,
) -> str:
    """The same command on the same lab gives the same key: that is how it resumes. A run
    of a sweep (``lab.run.sweep``) has the sweep's key in its own."""
    asked: list[Any] = [study, workload, params, sorted(guests), n, schedule]
    if until:  # only then, so that keys of runs without a rule stay what they were
        asked.append(until)
    if swap_every:  # likewise
        asked.append({"swap_every": swap_every})
    if sweep:  # likewise
        asked.append({"sweep": sweep})
    if reboot_every:  # likewise
        asked.append({"reboot_every": reboot_every})
    text = json.dumps(asked, sort_keys=True)
    return f"{workload}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


@dataclass
class RunPlan:
    study: str
    workload: Any  # lab.run.workload.Workload
    params: dict[str, Any]
    n: int
    schedule: str
    max_failures: int
    poll_interval: float = 1.0
    runner_dir: str = RUNNER_DIR  # where the runner and its journals live in the guest
    until: str | None = None  # a stopping rule (lab.stats.sequential); n is then the maximum
    confidence: float = 99.99  # percent, for the rule's interval and verdict
    threshold: float | Threshold = 0.01  # the verdict's threshold: a fraction, or Threshold
    swap_every: int | None = None  # sync only: swap the twins' CPU sets every K iterations
    warmup: str | None = None  # K or "auto": what the stopping rule leaves out (not the key)
    counters: str = "all"  # perf events per iteration: none, software or all (that work)
    sweep: str | None = None  # the key of the sweep this run is a value of (lab.run.sweep)
    guest_timeout: float = 300.0  # seconds a guest may not answer before the run stops
    adopt: bool = False  # take up iterations a guest journalled for a run this store lacks
    reboot_every: int | None = None  # power-cycle the guests every K iterations (lab.run.reboot)
    resume: str = "the same `lab run` command"  # what resumes the run, for the messages


class Controller:
    """Drives one run on the lab's guests; every side effect comes through ``ctx``."""

    def __init__(
        self,
        ctx: Context,
        store: Store,
        state: LabState,
        guests: list[GuestRecord],
        plan: RunPlan,
        shell_factory: Callable[[GuestRecord], GuestShell],
        on_update: Callable[[Controller], None] = lambda c: None,
        sites: Sequence[tuple[Site, LabState]] = (),
    ) -> None:
        """``state`` is this machine's lab; ``sites`` every host's (with --hosts), whose
        state and libvirt connection then go with the guests on that host."""
        if plan.n < 1:
            raise UsageError(f"--n must be 1 or more, not {plan.n}")
        if plan.schedule not in SCHEDULES:
            raise UsageError(
                f"unknown schedule {plan.schedule!r}", hint=f"Use one of: {', '.join(SCHEDULES)}"
            )
        if plan.swap_every is not None:
            check_swap_plan(plan.schedule, guests, plan.swap_every)
        if plan.reboot_every is not None and (plan.reboot_every < 1 or plan.sweep):
            raise UsageError(
                f"--reboot-every takes a run of 1 or more iterations per boot, not a sweep"
                f" ({plan.reboot_every}{', in a sweep' if plan.sweep else ''})",
                hint="Give --reboot-every K with K >= 1, without --sweep",
            )
        self.ctx, self.store, self.state, self.plan = ctx, store, state, plan
        self.sites = {site.name: (site, site_state) for site, site_state in sites}
        self.shell_factory = shell_factory
        self.on_update = on_update
        self.rule = self._stop_rule(guests)
        self.decision: Any = None  # lab.stats.sequential.Decision once the rule stopped the run
        self.upto = plan.n  # the last iteration of this pass (advance)
        self.begun = self.ended = False
        self.stopping = False  # stop_runners was called: a lost guest no longer stops the run
        self.waiting = ""  # why the rule may not look yet (warm-up, a block not yet whole)
        self.untaken: list[tuple[GuestProgress, list[Any]]] = []  # store_taken() stores them
        self.key = run_key(
            plan.study,
            plan.workload.name,
            plan.params,
            [g.name for g in guests],
            plan.n,
            plan.schedule,
            plan.until,
            plan.swap_every,
            plan.sweep,
            plan.reboot_every,
        )
        self.study_id = study_id = store.ensure_study(plan.study, description="lab run")
        self.metrics = list(plan.workload.metrics_for(plan.params))
        declared = [MetricInfo(m.name, m.unit, m.direction) for m in self.metrics]
        # Whether this store held the run before: its journals from before journals had
        # owners are then its own.
        self.existed = _created(store, plan.study, self.key) is not None
        self.run_id = store.ensure_run(
            study_id, self.key, plan.workload.name, plan.params, plan.schedule, plan.n,
            declared + list(EVIDENCE_METRICS),
        )  # fmt: skip
        created = _created(store, plan.study, self.key)
        # What a guest's journal of this run must be claimed by: a run deleted and made
        # again, or made in another store, is created at another moment.
        self.owner = f"{self.key}@{created:.6f}" if created else f"{self.key}#{self.run_id}"
        self.guests: list[GuestProgress] = []
        for record in guests:
            host_state = self.state_of(record)
            site = self.sites.get(record.host)
            guest_id = store.ensure_guest(
                study_id,
                record.name,
                record.variant,
                domain_xml=self._domain_xml(record),
                host_facts={
                    "accelerator": host_state.accelerator,
                    "reason": host_state.accel_reason,
                    "emulator_cpus": host_state.emulator_cpus,
                    "image": host_state.image,
                    "image_hash": host_state.image_hash,
                    **({"uri": site[0].entry.uri} if site else {}),
                },
                guest_facts={**record.facts, "vcpu_cpus": record.vcpu_cpus, "node": record.node},
                host=record.host,
            )
            shell = shell_factory(record)
            runner = GuestRunner(shell, plan.runner_dir, self.key)
            progress = GuestProgress(record, guest_id, shell, runner)
            progress.domain_uuid = self._domain_uuid(record)
            progress.completed = store.completed_iterations(self.run_id, guest_id)
            self.guests.append(progress)
        placement = Placement(ctx.libvirt, guests, state.emulator_cpus) if plan.swap_every else None
        self.swaps = SwapSchedule(placement, plan.swap_every or 0, store, self.run_id)
        self.evidence = Evidence(
            ctx, store, self.run_id, self.guests, counters=plan.counters,
            schedule=plan.schedule, sites=self.sites, state_of=self.state_of,
            domain_xml=self._domain_xml, with_guest=self.with_guest,
        )  # fmt: skip

    def _stop_rule(self, guests: list[GuestRecord]) -> Any:
        if not self.plan.until:
            return None
        from lab.stats.sequential import parse_until

        if len(guests) != 2 or guests[0].variant == guests[1].variant:
            raise UsageError(
                "--until compares two variants: it needs exactly two guests of different variants",
                hint="Run on the pair (leave out --guests) or drop --until",
            )
        return parse_until(self.plan.until, self.plan.n)

    def state_of(self, record: GuestRecord) -> LabState:
        """The lab state of the host ``record`` runs on."""
        site = self.sites.get(record.host)
        return site[1] if site else self.state

    def _domain_xml(self, record: GuestRecord) -> str | None:
        site = self.sites.get(record.host)
        try:
            conn = site[0].ctx.libvirt if site else self.ctx.libvirt
            return str(conn.lookupByName(record.name).XMLDesc(0))
        except Exception:  # the guest may be down; the XML is context, not a requirement
            return None

    def _domain(self, record: GuestRecord) -> Any:
        """The guest's libvirt domain (raises libvirt's error when there is none)."""
        site = self.sites.get(record.host)
        conn = site[0].ctx.libvirt if site else self.ctx.libvirt
        return conn.lookupByName(record.name)

    def _domain_uuid(self, record: GuestRecord) -> str | None:
        try:
            return str(self._domain(record).UUIDString())
        except Exception:  # the guest may be down, or no hypervisor is at hand
            return None

    def why_lost(self, guest: GuestProgress, err: GuestError) -> str:
        """Why ``guest`` does not answer, as far as its host's libvirt can tell."""
        import libvirt  # deferred: loaded already wherever a hypervisor is at hand

        try:
            dom = self._domain(guest.record)
            uuid, active = str(dom.UUIDString()), bool(dom.isActive())
        except libvirt.libvirtError as lookup:
            if lookup.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return "its domain no longer exists (destroyed and undefined: `lab down`, or virsh)"
            return f"SSH fails: {err.message}"
        except Exception:  # no hypervisor at hand: SSH's word is all there is
            return f"SSH fails: {err.message}"
        if guest.domain_uuid is not None and uuid != guest.domain_uuid:
            return "it was replaced by another guest of the same name (a new `lab up`)"
        if not active:
            return "its domain is not running (`lab status`)"
        return f"SSH fails: {err.message}"

    # --- guest side -------------------------------------------------------------------

    def start_runner(
        self, guest: GuestProgress, first: int, last: int, stepped: bool = False
    ) -> None:
        """Start the guest's runner for ``first``..``last``: detached, or ``stepped`` (in
        the foreground of a channel the controller holds, an iteration per step)."""
        self.claim_journal(guest)
        if guest.runner_started:  # the last one ended without a word
            guest.runner_started = False
            self._trouble(guest, f"its runner ended without finishing{guest.runner.log_tail()}")
        # With its journal the runner numbers attempts itself; a guest that lost it (a new
        # disk) must not reuse attempt numbers the store already holds.
        base = 1 if guest.journal_seen else self.store.max_attempt(self.run_id, guest.guest_id) + 1
        # The runner gives up once this start has spent what is left of --max-failures.
        budget = max(1, self.plan.max_failures - guest.failed_attempts + 1)
        spec = self.plan.workload.spec(self.plan.params, self.guest_info(guest))
        spec = replace(spec.for_range(first, last, attempt_base=base, max_failures=budget),
                       backing=True)  # the guest's THP counters too  # fmt: skip
        if stepped:
            guest.channel = guest.runner.steps(spec)
        else:
            guest.runner.start(spec)
        guest.runner_started, guest.heard_at = True, self.clock.monotonic()

    def guest_info(self, guest: GuestProgress) -> GuestInfo:
        state = self.state_of(guest.record)
        nfs = ""
        if guest.record.host == LOCAL:  # other hosts run no workload that needs NFS
            nfs = nfs_source(Path(self.ctx.config.state_dir), state.host_ip)
        return guest_infos(state, [guest.record], self.plan.runner_dir, nfs)[0]

    def claim_journal(self, guest: GuestProgress) -> None:
        """Make sure the guest's journal of this key is this run's before anything is read
        from it or a runner is started on it (once per guest and start)."""
        if guest.claimed:
            return
        runner = guest.runner
        owner = runner.owner()
        if owner != self.owner and runner.has_journal():
            if owner is None and self.existed:  # written before journals had owners
                pass
            elif self.plan.adopt:
                self._say_journal(guest, "took up", "as --adopt asks")
            else:
                self._retire(guest)
        if owner != self.owner:
            runner.claim(self.owner)
        guest.claimed = True

    def _retire(self, guest: GuestProgress) -> None:
        guest.runner.stop()  # a runner of that journal may still be at it
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(self.clock.now()))
        summary = self._summary(guest)
        target = guest.runner.retire(stamp)
        self._say_journal(guest, "retired", f"now {target}; pass --adopt to take them up"
                          " instead", summary)  # fmt: skip
        guest.check_runner = True

    def _summary(self, guest: GuestProgress) -> tuple[int, float | None, float | None]:
        """The iterations done in the guest's journal, and the first and last moments."""
        done: set[int] = set()
        first = last = None
        where = f"{guest.record.name}:{guest.runner.journal}"
        for items, _ in new_pieces(guest.shell, guest.runner.journal, 0, where):
            for item in items:
                if isinstance(item, JournalEntry):
                    done.update([item.iteration] if item.ok else [])
                    first = item.started if first is None else min(first, item.started)
                    end = item.ended or item.started
                    last = end if last is None else max(last, end)
        return len(done), first, last

    def _say_journal(
        self,
        guest: GuestProgress,
        verb: str,
        then: str,
        summary: tuple[int, float | None, float | None] | None = None,
    ) -> None:
        count, first, last = summary or self._summary(guest)
        when = f" ({_date(first)} to {_date(last)})" if first is not None else ""
        self.ctx.note(
            f"{verb} {count} iterations of run {self.key} found in {guest.record.name}'s"
            f" journal{when}, which this store's run did not start; {then}"
        )

    def ingest(self, guest: GuestProgress) -> int:
        """Store what the guest's journal gained, durably, since last time; returns the new
        attempts. The offset moves only once the store holds a piece, so a store that
        refused one (a full disk) leaves the controller exactly where the store is."""
        self.claim_journal(guest)
        guest.journal_read_at = self.clock.monotonic()
        added = 0
        where = f"{guest.record.name}:{guest.runner.journal}"
        for records, used in new_pieces(guest.shell, guest.runner.journal, guest.offset, where):
            guest.journal_seen = True
            added += self._take(guest, records)
            guest.offset += used
            if used:  # the runner said something (an empty piece is the journal's end)
                guest.heard_at = self.clock.monotonic()
        return added

    def _take(
        self, guest: GuestProgress, items: list[JournalEntry | JournalEvent], later: bool = False
    ) -> int:
        """Store the attempts among ``items`` (``later``: at the next :meth:`store_taken`),
        then count them into ``guest``."""
        source = f"journal:{guest.record.name}:{self.key}"
        if guest.live:  # lines of attempts already taken from a stepped runner's answers
            items = [i for i in items if not _taken(guest.live, i)]
        new = [entry_to_record(item, source) for item in items if isinstance(item, JournalEntry)]
        added = 0
        if new and later:
            self.untaken.append((guest, new))
        elif new:
            added = self.store.record(self.run_id, guest.guest_id, new)
        first = self.metrics[0].name if self.metrics else None
        for item in items:
            if isinstance(item, JournalEvent):
                if item.event in TERMINAL_EVENTS:
                    guest.check_runner = True
                    guest.runner_started = False
                continue
            guest.troubles = 0
            if item.boot_id:
                guest.last_boot = item.boot_id
            if item.ok:
                guest.completed.add(item.iteration)
                if item.wall is not None:
                    guest.walls.append(item.wall)
                if first is not None and first in item.metrics:
                    guest.moments.add(item.metrics[first])
                    if self.rule is not None:
                        guest.by_iteration[item.iteration] = item.metrics[first]
            else:
                guest.failed_attempts += 1
                guest.last_error = item.error or f"exit status {item.exit_status}"
        return added

    # --- the loop ---------------------------------------------------------------------

    def missing(self, guest: GuestProgress) -> list[int]:
        """The iterations of this pass (up to :attr:`upto`) the guest has not done."""
        return [i for i in self.remaining(guest) if i <= self.upto]

    def remaining(self, guest: GuestProgress) -> list[int]:
        """Every iteration of the run the guest has not done."""
        if self.decision is not None and self.decision.stop:
            return []
        return [i for i in range(1, self.plan.n + 1) if i not in guest.completed]

    def stopped_by_rule(self) -> bool:
        """Apply --until to what is stored: every pair of successful iterations so far."""
        if self.rule is None:
            return False
        if self.decision is not None and self.decision.stop:
            return True
        # deferred: scipy, only with --until
        from lab.stats.sequential import check_stop
        from lab.stats.stopping import StoppedInterval, rule_view

        first, second = self.guests
        both = sorted(set(first.by_iteration) & set(second.by_iteration))
        if len(both) < 2:
            return False
        view = rule_view(
            both,
            [first.by_iteration[i] for i in both],
            [second.by_iteration[i] for i in both],
            swap_every=self.plan.swap_every,
            warmup=self.plan.warmup,
        )
        if not view.ready:
            self.waiting = view.why
            return False
        per = view.per_observation  # the rule counts blocks of 2·swap_every with a swap
        rule = replace(
            self.rule, max_n=max(2, self.rule.max_n // per),
            tuned_for=max(2, self.rule.tuning_n // per),
        )  # fmt: skip
        metric = self.metrics[0]
        self.decision = check_stop(
            rule, view.a, view.b, self.plan.confidence, self.plan.threshold,
            direction=metric.direction, labels=(first.record.variant, second.record.variant),
            unit=view.unit,  # block means are batched too where they correlate
        )  # fmt: skip
        if self.decision.stop:
            seq = self.decision.interval
            stopped = StoppedInterval(
                metric=metric.name, method=seq.method, observations=view.observations,
                confidence=seq.confidence, early=len(both) < self.plan.n, diff=seq.diff,
                diff_ci=seq.diff_ci, percent=seq.percent, percent_ci=seq.percent_ci,
                reason=self.decision.reason,
            )  # fmt: skip
            # for `lab runs`, and for `lab compare`, whose primary interval it then is
            self.store.record_stop(self.run_id, self.decision.reason, stopped.to_json())
            self.stop_runners()
        return bool(self.decision.stop)

    def eta_seconds(self, guest: GuestProgress) -> float | None:
        if not guest.walls:
            return None
        return statistics.median(guest.walls) * len(self.remaining(guest))

    def run(self, upto: int | None = None) -> None:
        """The run's iterations up to ``upto`` (default: its n), from :meth:`begin` to
        :meth:`end`."""
        self.begin()
        try:
            self.advance(upto)
        finally:
            self.end()

    def begin(self) -> None:
        """Once per start: the environment, the runner in each guest, what its journal holds."""
        if self.begun:
            return
        self.begun = True
        self.evidence.record_environment()
        for guest in self.guests:
            self.with_guest(guest, lambda g: g.runner.install())
            self.with_guest(guest, self.ingest)
        self.evidence.mark_sampled(self.guests)

    def advance(self, upto: int | None = None) -> None:
        """Run the missing iterations up to ``upto`` (at most n): all of them at once, or a
        sweep's round at a time (``lab.run.sweep``)."""
        target = self.plan.n if upto is None else max(0, min(upto, self.plan.n))
        every = self.plan.reboot_every or target or 1
        for guest in self.guests:
            guest.check_runner = True  # a pass starts by asking
        try:
            firsts = list(range(1, target + 1, every)) or [1]
            for first in firsts:
                self.upto = min(first + every - 1, target)
                self._reboot_if_due(first)
                with self.swaps.in_force(self.ctx.warn):  # then back on their own CPUs
                    run_schedule(self.plan.schedule, self)
                if self.decision is not None and self.decision.stop:
                    break
            self.store_taken()
            for guest in self.guests:  # what a stepped runner's journal holds beyond its
                if guest.channel is not None:  # answers (a killed one's attempts, recorded
                    self.with_guest(guest, self.ingest)  # failed by the next start)
        finally:
            self.store_taken()
            self.evidence.close_counting()

    def _reboot_if_due(self, first: int) -> None:
        """With --reboot-every: before the pass from ``first``, power-cycle the guests if
        that pass has iterations to do and a guest's boot already ran iterations of the run
        (lab.run.reboot). Nothing runs in them now: every guest did the last pass."""
        if not self.plan.reboot_every or first <= 1:
            return
        if not any(self.missing(g) for g in self.guests):
            return
        boots = {g.record.name: self.with_guest(g, lambda x: current_boot(x.shell))
                 for g in self.guests}  # fmt: skip
        if not any(g.last_boot and boots[g.record.name] == g.last_boot for g in self.guests):
            return  # each is in a boot that ran nothing of this run yet
        self.store_taken()
        self.close_channels()
        self.evidence.close_counting()
        cycled = power_cycle(self.guests, self._domain, self.clock, self.ctx.note)
        for guest in self.guests:
            seconds, boot = cycled[guest.record.name]
            self.evidence.record_guest(guest, reboot_s=f"{seconds:.1f}", reboot_boot_id=boot,
                                       reboot_before_iteration=str(first))  # fmt: skip
            guest.check_runner = True
        self.ctx.note(f"rebooted in {max(s for s, _ in cycled.values()):.0f} s; iterations"
                      f" {first}..{self.upto} run in the new boots")  # fmt: skip

    def end(self) -> None:
        """At the end of a start: what backs the guests' memory now that the work has
        faulted it in (once)."""
        if self.ended:
            return
        self.ended = True
        self.close_channels()
        try:
            self.evidence.record_backing()
        except Exception as err:
            self.ctx.warn(f"could not record the guests' memory backing: {err}")

    # --- what a schedule asks of the controller (lab.run.schedules.Driver) --------------

    @property
    def clock(self) -> Clock:
        return self.ctx.clock

    @property
    def n(self) -> int:
        return self.plan.n

    @property
    def poll_interval(self) -> float:
        return self.plan.poll_interval

    def updated(self) -> None:
        if len(self.untaken) >= MAX_UNTAKEN:  # answers that came before any wait
            self.store_taken()
        self.on_update(self)

    def begin_counting(self, guests: Sequence[GuestProgress]) -> None:
        self.evidence.begin_counting(guests)

    def end_counting(self, iteration: int, guests: Sequence[GuestProgress]) -> None:
        self.evidence.end_counting(iteration, guests)

    def sample_backing(self, guests: Sequence[GuestProgress]) -> None:
        self.evidence.sample_backing(guests)

    def before_iteration(self, iteration: int, guests: Sequence[GuestProgress]) -> None:
        """Between iterations of a sync run no runner runs: the CPU sets of --swap-every."""
        self.swaps.before(iteration, [(g.record.name, g.guest_id) for g in guests])

    def start_one(self, iteration: int, guest: GuestProgress) -> bool:
        """Have the guest's stepped runner do ``iteration``: one line on its channel, the
        runner started (for the rest of the pass) when it has none. No store access: runs
        in a thread."""
        if guest.channel is None or guest.channel.closed:
            guest.channel = None
            self.start_runner(guest, iteration, self.upto, stepped=True)
        assert guest.channel is not None
        guest.stepping, guest.heard_at = iteration, self.clock.monotonic()
        with contextlib.suppress(ChannelClosed):  # the runner ended: busy() finds out why
            guest.channel.send_line(f"go {iteration}")
        return True

    def running(self, guest: GuestProgress) -> bool:
        self.claim_journal(guest)  # a runner of a journal not this run's is stopped first
        return guest.runner.running()

    def busy(self, guest: GuestProgress, iteration: int) -> bool:
        """Whether the runner started for ``iteration`` is still at it (the alternate and
        sync schedules wait on this while the guest's command is being measured).

        A stepped runner (the channel start_one opened) says so on its channel. Otherwise
        its journal says, read as always (one SFTP request: nothing starts in the guest).
        The runner itself is asked (a Python start in the guest, beside the measured
        command: about a second of the guest's CPU under emulation, where it was asked every
        quarter of a poll) only when the journal has said nothing for STATUS_EVERY s (a
        runner killed without a word), or of a runner this controller did not start.
        """
        if guest.channel is not None:
            return self._stepping(guest, iteration)
        return self._busy_detached(guest, iteration)

    def _busy_detached(self, guest: GuestProgress, iteration: int) -> bool:
        started = guest.runner_started
        self.ingest(guest)  # notes when the journal grew
        if iteration in guest.completed or (started and not guest.runner_started):
            return False  # its result is in, or a line saying the runner ended
        if not guest.runner_started:
            return self.running(guest)
        now = self.clock.monotonic()
        if now - guest.heard_at < STATUS_EVERY:
            return True
        guest.heard_at = now
        return self.running(guest)

    def _stepping(self, guest: GuestProgress, iteration: int) -> bool:
        """Whether the stepped runner is still at ``iteration``: its answers so far are
        taken (stored at once); a channel that closed ends the step."""
        channel = guest.channel
        assert channel is not None
        for line in channel.lines():
            self._answer(guest, line)
        if guest.channel is None:  # "busy": a runner of this key that a dead controller
            guest.stepping = None  # left holds its lock; waited for as a detached one is
            return self._busy_detached(guest, iteration)
        if channel.closed:  # the runner ended, or was killed: the next step starts one
            guest.channel = guest.stepping = None
            self.ingest(guest)  # what it journalled, and why it ended
            return False
        if guest.stepping == iteration and self.clock.monotonic() - guest.heard_at >= STATUS_EVERY:
            # Silent for long: a long iteration, or a guest gone without closing the
            # connection (destroyed: no reset ever comes). Its journal says which; a read
            # that fails is a GuestError, and with_guest waits for the guest from there.
            guest.heard_at = self.clock.monotonic()
            self.ingest(guest)
        return guest.stepping == iteration

    def _answer(self, guest: GuestProgress, line: str) -> None:
        """One line from a stepped runner: ready, busy, an attempt's result, or an event."""
        try:
            values = json.loads(line)
        except ValueError:
            values = None
        if not isinstance(values, dict):
            self.ctx.warn(f"{guest.record.name}: the runner said {line[:120]!r}; ignored")
            return
        guest.heard_at = self.clock.monotonic()
        if values.get("busy"):  # another runner of this key holds its lock: wait for it
            assert guest.channel is not None
            guest.channel.close()
            guest.channel = None
            return
        if "ready" in values:  # what its start journalled (a killed one's attempts) is in
            self.ingest(guest)
            return
        if "skipped" in values:  # done in the journal, not yet in the store
            guest.stepping = None
            self.ingest(guest)
            return
        try:
            record = parse_journal_line(line + "\n")
        except JournalError as err:
            self.ctx.warn(f"{guest.record.name}: the runner's answer is not a journal line: {err}")
            return
        if record is None:
            return
        if isinstance(record, JournalEntry):
            guest.stepping = None
            self._take(guest, [record], later=True)  # stored while the next step runs
            guest.live.add((record.iteration, record.attempt))
        else:
            self._take(guest, [record])

    def settle(self, guest: GuestProgress) -> None:
        """After a step: the journal read (a detached runner's results come that way), or
        for a stepped runner, whose answers carried them, only every JOURNAL_EVERY_S."""
        recent = self.clock.monotonic() - guest.journal_read_at < JOURNAL_EVERY_S
        if guest.channel is not None and recent:
            return
        self.ingest(guest)

    def store_taken(self) -> None:
        """Store the attempts taken from stepped runners' answers and not yet stored. Each
        commit waits for the disk (``synchronous=FULL``: 3.7 ms here), so it is done while
        the guests work, not between their steps; each attempt is in its guest's journal
        meanwhile, so a controller killed before this loses nothing."""
        untaken, self.untaken = self.untaken, []
        for guest, records in untaken:
            self.store.record(self.run_id, guest.guest_id, records)

    def wait(self, guests: Sequence[GuestProgress], seconds: float) -> None:
        """Sleep until a stepped runner of ``guests`` answers, for at most ``seconds``
        (storing what the last answers carried first: the guests are at work)."""
        self.store_taken()
        channels = [g.channel for g in guests if g.channel is not None]
        if channels and len(channels) == len(guests):
            wait_any(channels, seconds)
        else:
            self.clock.sleep(seconds)

    def close_channels(self) -> None:
        """End the stepped runners: each finishes what it is at, journals it and exits."""
        for guest in self.guests:
            channel, guest.channel, guest.stepping = guest.channel, None, None
            if channel is None:
                continue
            with contextlib.suppress(GuestError):
                channel.send_line("end")
            channel.close()
            guest.runner_started = False  # told to end: it did not end without a word

    def ensure_running(self, guest: GuestProgress, first: int = 0, last: int = 0) -> bool:
        """Start the guest's runner for its missing iterations unless it runs already."""
        guest.check_runner = False
        if self.running(guest):
            return True
        self.ingest(guest)  # what it wrote before it stopped
        missing = self.missing(guest)
        if not missing:
            return False
        self.check_failures(guest)
        self.start_runner(guest, first or missing[0], last or self.upto)
        return True

    def check_failures(self, guest: GuestProgress) -> None:
        if guest.failed_attempts > self.plan.max_failures:
            raise RunFailed(
                f"{guest.record.name}: {guest.failed_attempts} failed attempts (more than"
                f" --max-failures {self.plan.max_failures}); last: {guest.last_error[:300]}",
                hint="Every attempt is in the store (lab export). Fix the cause and re-run the"
                " same command to resume",
            )

    def with_guest(self, guest: GuestProgress, action: Callable[[GuestProgress], Any]) -> Any:
        """Run ``action``; a guest that cannot be reached is marked and retried later, for
        at most the plan's ``guest_timeout`` (then :class:`GuestLost`)."""
        try:
            value = action(guest)
        except GuestCommandError as err:  # the guest answered: something in it is wrong
            self._trouble(guest, err.message)
            return None
        except GuestError as err:
            if guest.channel is not None:  # it went with the connection
                guest.channel.close()
                guest.channel = None
            guest.shell.close()  # the next try opens one afresh: one connection at a time
            self._unanswered(guest, err)
            return None
        guest.lost_at = None
        if guest.unreachable:
            self.ctx.note(f"{guest.record.name} reachable again")
            guest.unreachable = False
            guest.check_runner = True  # whatever ran before may be gone
        return value

    def _unanswered(self, guest: GuestProgress, err: GuestError) -> None:
        """Say once that the run waits for ``guest``, and why; stop the run once it has
        waited ``guest_timeout`` (not while it stops its runners: Ctrl-C stays Ctrl-C)."""
        now, timeout = self.clock.monotonic(), self.plan.guest_timeout
        name = guest.record.name
        if guest.lost_at is None:
            guest.lost_at, guest.unreachable = now, True
            self.ctx.warn(
                f"{name} unreachable, will retry for up to {timeout:.0f} s, then the run stops"
                f" (status 4): {self.why_lost(guest, err)}"
            )
            return
        if self.stopping or now - guest.lost_at < timeout:
            return
        done = len(guest.completed)
        raise GuestLost(
            f"{name} did not answer for {now - guest.lost_at:.0f} s (--guest-timeout"
            f" {timeout:g}): {self.why_lost(guest, err)}; the run stopped with {done} of"
            f" {self.plan.n} iterations stored for it",
            hint=f"Every stored iteration is kept. Bring the guest back (lab status; lab up"
            f" if it is gone), then resume with {self.plan.resume}",
        )

    def _trouble(self, guest: GuestProgress, what: str) -> None:
        """A runner command failed, or a runner ended without a word. A full disk in the
        guest stops the run at once, since nothing can be journalled; anything else after
        MAX_TROUBLES in a row with no attempt recorded in between."""
        guest.troubles += 1
        name, folder = guest.record.name, self.plan.runner_dir
        free = guest.runner.free_bytes()
        if free is not None and free < MIN_GUEST_FREE:
            raise RunFailed(
                f"{name}: the guest's disk is full ({free} bytes free for {folder}), so its"
                f" runner cannot journal; {what}",
                hint=f"Free space in the guest (lab ssh {name} df -h /), then re-run the same"
                " command to resume",
            )
        if guest.troubles >= MAX_TROUBLES:
            raise RunFailed(
                f"{name}: the runner failed {guest.troubles} times in a row with no attempt"
                f" recorded; last: {what}",
                hint=f"See the runner's log (lab ssh {name} cat {folder}/{self.key}.log), fix"
                " the cause, then re-run the same command to resume",
            )
        self.ctx.warn(f"{name}: {what}; will try again")

    def stop_runners(self) -> None:
        self.stopping = True
        self.store_taken()
        self.close_channels()
        for guest in self.guests:
            self.with_guest(guest, lambda g: g.runner.stop())
            self.with_guest(guest, self.ingest)
        self.swaps.finish(warn=self.ctx.warn)  # the runners are stopped: own CPUs again
