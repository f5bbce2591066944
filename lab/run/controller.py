"""`lab run`'s controller: start the in-guest runners, stream their journals into the store.

The runners do the iterations themselves (detached in the guests), so the controller
can die, lose a connection or be restarted at any time: re-running the same command
finds the same run (its key is a hash of what was asked), ingests the journals again
(idempotently) and restarts a runner only where iterations are still missing.

A guest that stops answering is waited for, and said so once, for at most the plan's
``guest_timeout``: then the run stops with :class:`GuestLost` (status 4), naming the guest,
why it is gone where libvirt can tell (its domain destroyed, or replaced by a new one of the
same name), and the command that resumes it.

A journal is this store's run's only if that run claimed it (:mod:`lab.run.ownership`): a
deleted run stays deleted, and a new store is never filled from old journals unasked.

The controller is the driver a schedule sees (:class:`lab.run.schedules.Driver`), built on
its parts: :mod:`lab.run.runstate` (the plan, each guest's progress, where its domain is),
:mod:`lab.run.trouble` (a guest lost, a runner failing), :mod:`lab.run.ownership` (whose a
journal is), :mod:`lab.run.ingesting` (journals into the store) and :mod:`lab.run.steps`
(stepped runners' channels).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.core.context import Context
from lab.core.errors import UsageError
from lab.guests.labstate import GuestRecord, LabState
from lab.guests.ssh import GuestShell
from lab.run.evidence import EVIDENCE_METRICS, Evidence
from lab.run.guestrunner import GuestRunner
from lab.run.hostside import NFS_SUBDIR
from lab.run.placement import Placement, SwapSchedule, check_swap_plan
from lab.run.reboot import current_boot, power_cycle
from lab.run.runstate import RECENT, RUNNER_DIR, GuestProgress, RunPlan, run_key
from lab.run.schedules import SCHEDULES, run_schedule
from lab.run.steps import SteppedRunners
from lab.run.trouble import MAX_TROUBLES, GuestLost, RunFailed
from lab.store import MetricInfo, Store

if TYPE_CHECKING:
    from lab.guests.sites import Site

# What other modules import from here, as they did before the controller was split.
__all__ = [
    "MAX_TROUBLES",
    "RECENT",
    "RUNNER_DIR",
    "STORE_CACHE_KIB",
    "Controller",
    "GuestLost",
    "GuestProgress",
    "RunFailed",
    "RunPlan",
    "run_key",
]

# SQLite's page cache for the store while a run appends to it: the controller rereads
# nothing it wrote, and SQLite's default (2,000 KiB) would grow its memory through the
# first thousands of iterations, where the soak looks for a leak.
STORE_CACHE_KIB = 256
MAX_UNTAKEN = 64  # attempts taken from answers and not yet stored, at most


def _created(store: Store, study: str, key: str) -> float | None:
    """When the store's run ``key`` was created (0.0 if it does not say); None without it."""
    return next(((r.created or 0.0) for r in store.runs(study) if r.key == key), None)


class Controller(SteppedRunners):
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
        self.boots_read = 0  # boots of both twins the rule has looked at (--reboot-every)
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
            plan.host_age,
            plan.replicate,
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
            defined_xml=self._defined_xml, sources=self._source_versions,
            host_age=plan.host_age,
        )  # fmt: skip

    def _source_versions(self) -> dict[str, dict[str, str]]:
        """The workload's facts of the user's sources (``lab.run.sources``), read on this
        machine, where :func:`lab.run.hostside.host_side` prepared them."""
        read = getattr(self.plan.workload, "source_versions", None)  # tests' stand-ins lack it
        if read is None:
            return {}
        export = Path(self.ctx.config.state_dir) / NFS_SUBDIR
        return dict(read(self.plan.params, self.ctx.host, export))

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

        if self.plan.reboot_every:
            return self._stopped_by_boots()
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

    def _stopped_by_boots(self) -> bool:
        """--until (verdict or ci-halfwidth) on a run with boots: read on the boot means, the
        unit lab compare reads (lab.stats.bootstop), once per boot both twins have completed."""
        from lab.stats.bootstop import boot_decision, boot_iterations, boot_means
        from lab.stats.stopping import StoppedInterval

        assert self.rule is not None and self.plan.reboot_every
        first, second = self.guests
        every, n = self.plan.reboot_every, self.plan.n
        most = max(2, math.ceil(n / every))  # boots a twin can have in this run
        warmup = self.plan.warmup
        skip = int(warmup) if warmup is not None and warmup.isdigit() else 0
        boots = self.boots_read
        while boots < most and all(
            i in g.by_iteration
            for g in (first, second)
            for i in boot_iterations(boots + 1, every, n)
        ):
            boots += 1
        if boots == self.boots_read:
            return False  # no boot completed since the last look
        self.boots_read = boots
        means = [boot_means(g.by_iteration, every, boots, n, skip) for g in (first, second)]
        assert means[0] is not None and means[1] is not None
        metric = self.metrics[0]
        self.decision = boot_decision(
            means[0], means[1], self.plan.confidence, most, self.plan.threshold,
            direction=metric.direction, labels=(first.record.variant, second.record.variant),
            rule=self.rule,
        )  # fmt: skip
        if boots < 2:
            self.waiting = "two boots of each twin"
        if self.decision.stop:
            seq = self.decision.interval
            stopped = StoppedInterval(
                metric=metric.name, method=self.decision.method,
                observations=f"{boots} boot means per twin", confidence=seq.confidence,
                early=boots < most, diff=seq.diff, diff_ci=seq.diff_ci, percent=seq.percent,
                percent_ci=seq.percent_ci, reason=self.decision.reason,
            )  # fmt: skip
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

    def stop_runners(self) -> None:
        self.stopping = True
        self.store_taken()
        self.close_channels()
        for guest in self.guests:
            self.with_guest(guest, lambda g: g.runner.stop())
            self.with_guest(guest, self.ingest)
        self.swaps.finish(warn=self.ctx.warn)  # the runners are stopped: own CPUs again
