"""``lab plan``'s actions: the samples per variant a verdict needs, from a standard deviation
given or from a pilot in the store (:func:`make_plans`), with ``--from-store`` also the boots ×
iterations per boot of a pilot of several boots; and with ``--sweep``, the samples per value
a sweep's verdicts need, from a pilot sweep (:func:`plan_sweep_values`).

A pilot sweep (a few iterations per value) gives each value its own standard deviation, mean
and autocorrelation, and, unless an effect is given, its own difference between the twins:
the verdict it points to. Each value is planned as ``lab plan`` plans one comparison
(``lab.stats.planning``), at the confidence each verdict must reach to survive the sweep's
correction: with m values, Holm's strictest step (and Bonferroni's) reads each p against
α/m, so planning every value at 1 − α/m gives each verdict its power in the family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from lab.app.analyse import Selection, refuse_pooling, selected_sweeps, store_path
from lab.app.pilot import pilot_spread
from lab.app.runs import find_run
from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.sweeps import label
from lab.stats import bootplan, planning
from lab.stats.descriptive import check_confidence
from lab.stats.magnitude import refuse_inexact
from lab.stats.verdict import Threshold, parse_percent, parse_threshold
from lab.store import Store
from lab.store.order import variant_order

if TYPE_CHECKING:
    from lab.stats.bootplan import BootPlan as BootPlan  # re-exported: what lab plan prints
    from lab.stats.discard import WarmupCut
    from lab.stats.planning import Goal
    from lab.stats.planning import Plan as Plan  # re-exported: what lab plan prints
    from lab.stats.series import Direction, Series

# What lab plan prints with its plans, named here for the command (which reaches no lower):
FORMULA = planning.FORMULA  # of the samples per variant
CURVE = planning.CURVE  # the power curve: P(verdict) at these multiples of the planned n
BOOT_FORMULA = bootplan.FORMULA  # of boots × iterations per boot


@dataclass(frozen=True)
class SweepPlanRequest:
    selection: Selection  # db, study, workload, metric, and --sweep KEY
    threshold: Threshold
    confidence: float = 99.99  # the family's, in percent
    power: float = 0.9
    effect: str | None = None  # "2%" of A's mean, or in the metric's unit; None: the pilot's
    goal: str | None = None  # "superiority" or "equivalence"; None: from the effect
    iteration_time: float | None = None  # None: each value's stored median


@dataclass(frozen=True)
class ValuePlan:
    """One value of a sweep, one metric: its plan, or why there is none."""

    sweep: str
    value: str  # "total_size=64M"
    metric: str
    stored: int  # samples already stored, in the arm with fewest
    family: int  # the values planned together (m)
    level: float  # the confidence each verdict is planned at: 1 − α/m
    plan: Plan | None
    why: str = ""  # without a plan: why not
    effect_from: str = "pilot"  # "pilot": the twins' difference at this value; else --effect


def plan_sweep_values(ctx: Context, request: SweepPlanRequest) -> list[ValuePlan]:
    """Every value of every sweep the selection names, for each of its metrics."""
    from lab.stats.diagnostics import lag1_autocorrelation  # deferred: heavy (scipy)
    from lab.stats.planning import Goal, plan_samples

    selection = request.selection
    path = store_path(ctx, selection)
    found: list[ValuePlan] = []
    with Store.open(path, create=False) as store:
        sweeps = selected_sweeps(store, selection)
        if not sweeps:
            where = f" for study {selection.study!r}" if selection.study else ""
            raise UsageError(
                f"no sweep in {path}{where}",
                hint="Run a short pilot sweep first, e.g. lab run W --n 5 --sweep KEY=V1,V2",
            )
        order = variant_order(store, selection.study)
        for sweep in sweeps:
            m = len(sweep.runs)
            level = 1 - (1 - check_confidence(request.confidence)) / m
            for r in sweep.runs:
                value = label(tuple(r.point.items()))
                series = store.values(metric=selection.metric, study=sweep.study, run=r.run_key)
                refuse_inexact(series)
                seconds = store.iteration_seconds(study=sweep.study, run=r.run_key)
                per_iteration = request.iteration_time
                if per_iteration is None and seconds.size:
                    per_iteration = float(np.median(seconds))
                for metric in sorted({s.metric for s in series}):
                    arms = sorted((s for s in series if s.metric == metric),
                                  key=lambda s: order.index(s.variant)
                                  if s.variant in order else len(order))  # fmt: skip
                    stored = min(a.values.size for a in arms)
                    base = ValuePlan(sweep.key, value, metric, stored, m, level, None)
                    if len(arms) < 2 or stored < 3:
                        found.append(_without(base, "fewer than 3 samples per variant"))
                        continue
                    a, b = arms[0].values, arms[1].values
                    n = np.array([a.size, b.size])
                    var = np.array([a.var(ddof=1), b.var(ddof=1)])
                    sd = float(np.sqrt(np.sum((n - 1) * var) / np.sum(n - 1)))
                    r1 = max(0.0, lag1_autocorrelation(a), lag1_autocorrelation(b))
                    mean = float(a.mean())
                    better = -1.0 if arms[0].direction == "lower" else 1.0
                    if request.effect is None:
                        delta, source = better * float(b.mean() - a.mean()), "pilot"
                    else:
                        delta, source = _effect_delta(request.effect, mean, ""), "--effect"
                    try:
                        plan = plan_samples(
                            sd, delta, level, request.power, min(r1, 0.99), per_iteration,
                            threshold=request.threshold, mean=mean,
                            goal=Goal(request.goal) if request.goal else None,
                            direction=arms[0].direction,
                        )  # fmt: skip
                    except UsageError as err:
                        found.append(_without(base, err.message, source))
                        continue
                    found.append(ValuePlan(sweep.key, value, metric, stored, m, level, plan,
                                           effect_from=source))  # fmt: skip
    return found


def _without(base: ValuePlan, why: str, source: str = "pilot") -> ValuePlan:
    return ValuePlan(base.sweep, base.value, base.metric, base.stored, base.family, base.level,
                     None, why, source)  # fmt: skip


@dataclass(frozen=True)
class BootPlanRequest:
    """``lab plan --from-store`` on a pilot with several boots: boots × iterations per boot."""

    selection: Selection  # db, study, workload, metric
    threshold: Threshold
    effect: str  # "2%" of A's mean, or in the metric's unit
    confidence: float = 99.99
    power: float = 0.9
    goal: str | None = None  # "superiority" or "equivalence"; None: from the effect
    reboot_cost: float | None = None  # seconds; None: the pilot's, else 60 s (and says so)
    iteration_cost: float | None = None  # seconds; None: the pilot's median iteration


@dataclass(frozen=True)
class MetricBootPlan:
    """One workload and metric of the pilot: its boots, and the plan, or why there is none."""

    workload: str
    metric: str
    boots: tuple[tuple[str, int], ...]  # (arm, boots in the pilot)
    per_boot: float  # the pilot's iterations per boot, on average (after the warm-up)
    plan: BootPlan | None
    why: str = ""


def plan_boots_from_store(ctx: Context, request: BootPlanRequest) -> list[MetricBootPlan]:
    """Each workload and metric of the pilot whose arms have two boots or more: the variance
    between and within boots and the lag-1 r within them (its warm-up left out, as ``lab
    compare`` leaves it out; ``lab.stats.withinboot``), and the boots × iterations per boot
    of least cost for the verdict in the metric's direction (``lab.stats.bootplan``)."""
    from lab.app.analyse import select_samples
    from lab.stats.bootplan import DEFAULT_REBOOT_SECONDS, Cost, plan_boots
    from lab.stats.boots import components
    from lab.stats.planning import Goal
    from lab.stats.series import series_key, unique_labels
    from lab.stats.withinboot import boot_pilot

    selection = request.selection
    path = store_path(ctx, selection)
    with Store.open(path, create=False) as store:
        samples = select_samples(store, selection)
        reboots = {w: store.reboot_seconds(w, selection.study)
                   for w in {s.workload for s in samples.series}}  # fmt: skip
        iterations = {w: store.iteration_seconds(w, selection.study) for w in reboots}
    groups: dict[tuple[str, str], list[Series]] = {}
    for s in samples.series:
        groups.setdefault((s.workload, s.metric), []).append(s)
    order = samples.order
    found = []
    for (workload, metric), arms in sorted(groups.items()):
        arms.sort(key=lambda s: order.index(s.variant) if s.variant in order else len(order))
        labels = unique_labels(arms)
        parts = [(label, components(s.values, samples.boots[series_key(s)]))
                 for s, label in zip(arms, labels, strict=True)
                 if series_key(s) in samples.boots]  # fmt: skip
        counts = tuple((label, c.boots) for label, c in parts)
        per_boot = sum(c.samples for _, c in parts) / max(1, sum(c.boots for _, c in parts))
        base = MetricBootPlan(workload, metric, counts, per_boot, None)
        if len(parts) < 2 or len(parts) < len(arms):
            found.append(replace(base, why="no boot ids recorded"))
            continue
        if any(c.boots < 2 for _, c in parts):
            found.append(replace(base, why="an arm has one boot: the pilot needs several"
                                 " (lab run --reboot-every K)"))  # fmt: skip
            continue
        # r within boots, and the components read under it (lab.stats.withinboot)
        found_pilot = boot_pilot([(s.values, samples.boots[series_key(s)]) for s in arms])
        if request.iteration_cost is not None:
            iteration = Cost(request.iteration_cost, "--iteration-cost")
        elif iterations[workload].size:
            iteration = Cost(float(np.median(iterations[workload])),
                             "the pilot's median iteration")  # fmt: skip
        else:
            found.append(replace(base, why="no iteration times in the store: pass"
                                 " --iteration-cost S"))  # fmt: skip
            continue
        if request.reboot_cost is not None:
            reboot = Cost(request.reboot_cost, "--reboot-cost")
        elif reboots[workload].size:
            gaps = reboots[workload]
            reboot = Cost(float(np.median(gaps)), f"the pilot's median of {gaps.size} reboots")
        else:
            reboot = Cost(DEFAULT_REBOOT_SECONDS, "assumed: the pilot's timestamps show no"
                          " reboot; pass --reboot-cost S")  # fmt: skip
        warm = _warmup_per_boot(samples.cuts.get((arms[0].study, workload, metric)))
        if warm > 0:  # each new boot also runs its warm-up, which the verdict never sees
            reboot = Cost(reboot.seconds + warm * iteration.seconds,
                          f"{reboot.source}, + {warm:g} warm-up iterations a boot")  # fmt: skip
        mean = float(arms[0].values.mean())
        try:
            plan = plan_boots(
                found_pilot.between, found_pilot.within, _effect_delta(request.effect, mean, ""),
                reboot, iteration, request.confidence, request.power,
                threshold=request.threshold, mean=mean,
                goal=Goal(request.goal) if request.goal else None,
                autocorrelation=found_pilot.r, direction=arms[0].direction,
            )  # fmt: skip
        except UsageError as err:
            found.append(replace(base, why=err.message))
            continue
        found.append(replace(base, plan=plan))
    return found


def _warmup_per_boot(cut: WarmupCut | None) -> float:
    """Iterations the warm-up rule discarded per boot, on average over the arms' boots."""
    if cut is None:
        return 0.0
    boots = sum(a.boots for a in cut.arms)
    return sum(len(a.discarded) for a in cut.arms) / boots if boots else 0.0


@dataclass(frozen=True)
class PlanRequest:
    """``lab plan`` (but ``--sweep``): one plan from ``sd``, or with ``from_store`` one per
    workload and metric of the pilot in the store, and the pilot's boots plans."""

    selection: Selection  # with from_store: db, study, workload, metric
    run: str | None = None  # with from_store: one run's key, or a unique prefix of one
    from_store: bool = False
    sd: float | None = None  # without from_store: needed
    effect: str | None = None  # "2%" of the mean, or in the metric's unit; None: see question
    threshold: str = "1%"
    goal: str | None = None  # "superiority" or "equivalence"; None: from the effect
    mean: float | None = None  # None with from_store: the first arm's
    confidence: float = 99.99
    power: float = 0.9
    direction: Direction = "lower"  # with from_store: each metric's own
    autocorrelation: float = 0.0  # with from_store: the pilot's
    iteration_time: float | None = None  # with from_store, None: the pilot's median
    reboot_cost: float | None = None  # the boots plans': None, the pilot's (else 60 s)
    iteration_cost: float | None = None  # the boots plans': None, iteration_time's


PlanRow = tuple[str, int | None, "Plan"]  # name ("" for --sd), samples already stored, plan


@dataclass(frozen=True)
class PlanResult:
    rows: list[PlanRow]  # a plan per workload and metric of the pilot, or the one of --sd
    boot_plans: list[MetricBootPlan]  # with from_store: the pilot's, where it has boots


def question(
    goal: str | None, threshold: str, effect: str | None
) -> tuple[Goal | None, Threshold, str]:
    """The goal (None: derive it), the threshold (of the mean, or in units), and the effect's
    text (None: 2%, or 0% when the goal is equivalence)."""
    planned = planning.Goal(goal) if goal else None
    text = effect or ("0%" if planned == planning.Goal.EQUIVALENCE else "2%")
    return planned, parse_threshold(threshold, "--threshold"), text


def _effect_delta(effect: str, mean: float | None, where: str) -> float:
    """``--effect`` as a value in the metric's unit: a percentage of ``mean`` (refused
    without one, saying ``where``), or a finite number as given."""
    if effect.strip().endswith("%"):
        if mean is None:
            raise UsageError(
                f"a percentage effect ({effect}) needs the mean{where}",
                hint="Pass --mean M, or give --effect in the metric's unit",
            )
        return parse_percent(effect, "effect") * abs(mean)
    try:
        value = float(effect)
    except ValueError:
        raise UsageError(f"cannot read effect {effect!r}", hint="e.g. --effect 1% or 0.5") from None
    if not math.isfinite(value):
        raise UsageError(
            f"--effect {effect} is not a finite number", hint="e.g. --effect 1% or 0.5"
        )
    return value


def make_plans(ctx: Context, request: PlanRequest) -> PlanResult:
    """``lab plan``: the plan of the ``sd`` given, or with ``from_store`` the plans of the
    pilot in the store and its boots plans."""
    if request.from_store:
        return PlanResult(_plans_from_store(ctx, request), _boot_plans(ctx, request))
    if request.sd is None:
        raise UsageError("lab plan needs --sd", hint="Or use --from-store after a pilot run")
    goal, threshold, effect = question(request.goal, request.threshold, request.effect)
    delta = _effect_delta(effect, request.mean, "")
    found = planning.plan_samples(request.sd, delta, request.confidence, request.power,
                                  request.autocorrelation, request.iteration_time,
                                  threshold=threshold, mean=request.mean, goal=goal,
                                  direction=request.direction)  # fmt: skip
    return PlanResult([("", None, found)], [])


def _boot_plans(ctx: Context, request: PlanRequest) -> list[MetricBootPlan]:
    """The boots plans of the pilot in the store (:func:`plan_boots_from_store`); none, with
    a warning, for samples lab compare would refuse (runs that differ)."""
    goal, threshold, effect = question(request.goal, request.threshold, request.effect)
    # the run asked for, as the rows' plans read it: without it, every run's boots
    boots = BootPlanRequest(
        replace(request.selection, run=request.run), threshold, effect, request.confidence,
        request.power,
        goal.value if goal else None, request.reboot_cost,
        request.iteration_cost if request.iteration_cost is not None else request.iteration_time,
    )  # fmt: skip
    try:
        return plan_boots_from_store(ctx, boots)
    except UsageError as err:  # samples lab compare would refuse (runs that differ)
        ctx.warn(f"no boots plan: {err.message}")
        return []


def _plans_from_store(ctx: Context, request: PlanRequest) -> list[PlanRow]:
    """A plan per workload and metric of the pilot in the store: its pooled sd, lag-1
    autocorrelation, mean and median iteration unless the request gives them."""
    selection = request.selection
    study, workload = selection.study, selection.workload
    with Store.open(store_path(ctx, selection), create=False) as store:
        # runs that differ are never pooled, here as in lab compare: a pooled σ, lag-1
        # correlation and n would plan from two-peaked data
        run = find_run(store, request.run, study).key if request.run is not None else None
        if run is None:
            refuse_pooling(store, Selection(study=study, workload=workload))
        series = store.values(workload=workload, metric=selection.metric, study=study, run=run)
        swept = (
            {(sw.study, sw.workload) for sw in store.sweeps(study) if sw.runs}
            if run is None
            else set()
        )
        order = variant_order(store, study)
        for one_study, one_workload in sorted(swept & {(s.study, s.workload) for s in series}):
            ctx.warn(f"{one_workload} in study {one_study} is a sweep, whose values are never"
                     " pooled: plan it value by value with lab plan --sweep")  # fmt: skip
        series = [s for s in series if (s.study, s.workload) not in swept]
        refuse_inexact(series)  # as lab compare: no sd, correlation or mean of them is right
        times = {s.workload: store.iteration_seconds(s.workload, study, run) for s in series}
    if not series:
        raise UsageError(
            "no samples in the store to plan from" + (" but a sweep's" if swept else ""),
            hint="Plan a sweep with lab plan --sweep"
            if swept
            else "Run a short pilot (lab run) or import one (lab import), or pass --sd",
        )
    groups: dict[tuple[str, str], list[Series]] = {}
    for s in series:
        groups.setdefault((s.workload, s.metric), []).append(s)
    goal, threshold, effect = question(request.goal, request.threshold, request.effect)
    rows: list[PlanRow] = []
    unplanned: list[str] = []  # metrics no plan can be made for, each with why
    for (one_workload, metric), arms in sorted(groups.items()):
        arms.sort(key=lambda s: order.index(s.variant) if s.variant in order else len(order))
        usable = [a for a in arms if a.values.size >= 3]
        if not usable:
            ctx.warn(f"{one_workload} · {metric}: fewer than 3 samples per variant, skipped")
            continue
        spread = pilot_spread([a.values for a in usable])
        pooled_sd, r = spread.sd, spread.r
        mean = request.mean if request.mean is not None else float(usable[0].values.mean())
        seconds = times.get(one_workload)
        per_iteration = request.iteration_time
        if per_iteration is None and seconds is not None and seconds.size:
            per_iteration = float(np.median(seconds))
        where = f"{one_workload} · {metric}"
        try:
            found = planning.plan_samples(
                pooled_sd, _effect_delta(effect, mean, f" of {where}"), request.confidence,
                request.power, min(r, 0.99), per_iteration, threshold=threshold, mean=mean,
                goal=goal, direction=usable[0].direction,
            )  # fmt: skip
        except UsageError as err:  # this metric only: the others are still planned
            unplanned.append(f"{where} ({err.message})")
            continue
        rows.append((f"{one_workload} · {metric}", spread.n, found))
    if unplanned and rows:
        ctx.warn(f"not planned: {'; '.join(unplanned)}")
    if unplanned and not rows:
        raise UsageError(f"no metric can be planned: {'; '.join(unplanned)}",
                         hint="Pass --effect, or run a pilot whose samples vary")  # fmt: skip
    if not rows:
        raise UsageError("no metric has 3 samples per variant yet", hint="Run a longer pilot")
    return rows
