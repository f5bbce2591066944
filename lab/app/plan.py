"""``lab plan --sweep``'s action: the samples per value a sweep's verdicts need, from a pilot;
and ``lab plan --from-store``'s boots × iterations per boot, from a pilot of several boots.

A pilot sweep (a few iterations per value) gives each value its own standard deviation, mean
and autocorrelation, and, unless an effect is given, its own difference between the twins:
the verdict it points to. Each value is planned as ``lab plan`` plans one comparison
(``lab.stats.planning``), at the confidence each verdict must reach to survive the sweep's
correction: with m values, Holm's strictest step (and Bonferroni's) reads each p against
α/m, so planning every value at 1 − α/m gives each verdict its power in the family.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lab.app.analyse import Selection, selected_sweeps
from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.sweeps import label
from lab.stats.descriptive import check_confidence
from lab.stats.verdict import Threshold, parse_percent
from lab.store import Store
from lab.store.order import variant_order

if TYPE_CHECKING:
    from lab.stats.bootplan import BootPlan
    from lab.stats.discard import WarmupCut
    from lab.stats.planning import Plan
    from lab.stats.series import Series


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
    path = Path(selection.db or ctx.config.store)
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
                        delta, source = _delta(request.effect, mean), "--effect"
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


def _delta(effect: str, mean: float) -> float:
    """The effect as a value in the metric's unit: a percentage of A's mean, or as given."""
    if effect.strip().endswith("%"):
        return parse_percent(effect, "effect") * abs(mean)
    try:
        return float(effect)
    except ValueError:
        raise UsageError(f"cannot read effect {effect!r}", hint="e.g. --effect 1% or 0.5") from None


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
    between and within boots (its warm-up left out, as ``lab compare`` leaves it out), and
    the boots × iterations per boot of least cost for the verdict (``lab.stats.bootplan``)."""
    from lab.app.analyse import select_samples
    from lab.stats.bootplan import DEFAULT_REBOOT_SECONDS, Cost, plan_boots
    from lab.stats.boots import components
    from lab.stats.planning import Goal
    from lab.stats.series import series_key, unique_labels

    selection = request.selection
    path = Path(selection.db or ctx.config.store)
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
        between = float(np.mean([c.between for _, c in parts]))
        spare = np.array([c.samples - c.boots for _, c in parts])
        within = float(np.sum(spare * np.array([c.within for _, c in parts])) / spare.sum())
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
                between, within, _delta(request.effect, mean), reboot, iteration,
                request.confidence, request.power, threshold=request.threshold, mean=mean,
                goal=Goal(request.goal) if request.goal else None,
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
