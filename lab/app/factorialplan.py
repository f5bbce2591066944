"""``lab plan`` of a factorial study (issue 41): the samples per cell per block at which ``lab
compare`` finds each main effect (and any interaction named) of a given ratio.

The design comes from a study file's ``[factors]`` (``--study FILE``) or from ``--factors
'page=thp,1g prealloc=off,on'``, made into cells and pair blocks exactly as ``lab study run``
makes them (:func:`lab.app.design.parse_design`). The residual sd on the log scale comes from
``--sd`` or ``--cv``, or with ``--from-store`` from a pilot factorial in the store: the residual
mean square of compare's own fit (:func:`lab.stats.effects.fit_effects`, block + every
estimable term) on log values, per workload and metric. The math is
:mod:`lab.stats.factorialplan`; this module gathers its inputs and the durations: a block runs
each ``[[workload]]`` for n iterations per guest (``lab.app.studyrun.estimate_seconds``), at the
workload's stored median iteration, or ``--iteration-time``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from lab.app.analyse import Selection, store_path
from lab.app.catalogue import variants, workloads
from lab.app.design import Design, parse_design
from lab.app.effects import DECLARED, factorial_workloads
from lab.app.study import Study, load_study
from lab.app.studyrun import estimate_seconds, stored_seconds
from lab.core.context import Context
from lab.core.errors import UsageError
from lab.stats import factorialplan
from lab.stats.diagnostics import lag1_autocorrelation
from lab.stats.factorialdata import factorial_data
from lab.stats.factorialplan import FactorialPlan, layout_of, plan_factorial, sd_from_cv
from lab.stats.series import Series
from lab.stats.verdict import parse_percent
from lab.store import Store

FACTORS_EXAMPLE = "--factors 'page=thp,1g prealloc=off,on'"
FORMULA = factorialplan.FORMULA  # named here for the command, which reaches no lower


@dataclass(frozen=True)
class FactorialPlanRequest:
    selection: Selection  # with from_store: db, study, workload, metric of the pilot
    study_file: str | None = None  # a study file with [factors]
    factors: str | None = None  # 'page=thp,1g prealloc=off,on'
    effect: str | None = None  # "5%" (a ratio of 1.05), "-5%" or "1.05"; None: 2%
    sd: float | None = None  # residual sd on the log scale; with mean, in the metric's unit
    cv: str | None = None  # "2%" or "0.02"
    mean: float | None = None
    from_store: bool = False
    confidence: float = 99.99
    power: float = 0.9
    autocorrelation: float | None = None  # None: 0, or with from_store the pilot's
    iteration_time: float | None = None  # None: the study's stored median iteration
    interactions: tuple[str, ...] = ()  # "page:prealloc"
    correction: str = "bonferroni"


@dataclass(frozen=True)
class Timing:
    """One ``[[workload]]`` of the study (or ``--iteration-time`` for ``--factors``): how long
    a block takes at n samples per cell, from its seconds per iteration."""

    workload: str  # "" for --factors
    schedule: str  # "alternate" runs the block's two cells one after the other
    seconds: float | None  # per iteration; None: unknown
    source: str  # "--iteration-time", "the store's median", "unknown"
    per_n: float | None  # seconds per unit of n for the whole study (every block)


@dataclass(frozen=True)
class FactorialPlanRow:
    """One plan: the sd it came from (``--sd``/``--cv``, or one workload · metric of the pilot)
    and what it needs."""

    name: str  # "" for --sd/--cv, else "workload · metric"
    sd_source: str
    plan: FactorialPlan


@dataclass(frozen=True)
class FactorialPlanResult:
    design: Design
    source: str  # "study FILE" or "--factors"
    rows: tuple[FactorialPlanRow, ...]
    timings: tuple[Timing, ...]

    def seconds(self, n: int) -> float | None:
        """The study's duration at n samples per cell per block (every workload; None when
        one has no iteration time)."""
        if not self.timings or any(t.per_n is None for t in self.timings):
            return None
        return sum(n * (t.per_n or 0.0) for t in self.timings)


def parse_factors(text: str) -> dict[str, list[str]]:
    """``'page=thp,1g prealloc=off,on'`` as ``[factors]`` holds it: factor -> its levels."""
    table: dict[str, list[str]] = {}
    for part in text.split():
        name, equals, levels = part.partition("=")
        if not equals or not name or not levels:
            raise UsageError(
                f"--factors: cannot read {part!r}: give FACTOR=LEVEL,LEVEL",
                hint=f"e.g. {FACTORS_EXAMPLE}",
            )
        if name in table:
            raise UsageError(f"--factors names {name} twice", hint=f"e.g. {FACTORS_EXAMPLE}")
        table[name] = [v for v in levels.split(",") if v]
    if not table:
        raise UsageError("--factors is empty", hint=f"e.g. {FACTORS_EXAMPLE}")
    return table


def effect_ratio(text: str | None) -> float:
    """``--effect`` as a ratio: "5%" is 1.05, "-5%" 0.95, a plain number the ratio itself."""
    text = (text or "2%").strip()
    if text.endswith("%"):  # parse_percent reads 0 % to 100 %: the sign is read here
        sign = -1.0 if text.startswith("-") else 1.0
        return 1 + sign * parse_percent(text.lstrip("+-").strip(), "effect")
    try:
        value = float(text)
    except ValueError:
        raise UsageError(
            f"cannot read effect {text!r}", hint="e.g. --effect 5% (a ratio of 1.05) or 1.05"
        ) from None
    return value


def log_sd(request: FactorialPlanRequest) -> tuple[float, str]:
    """The residual sd on the log scale from ``--sd`` or ``--cv``, and what it came from."""

    if request.cv is not None:
        text = request.cv.strip()
        try:
            cv = parse_percent(text, "--cv") if text.endswith("%") else float(text)
        except ValueError:
            raise UsageError(f"cannot read --cv {text!r}", hint="e.g. --cv 2%") from None
        return sd_from_cv(cv), f"--cv {text}"
    if request.sd is None:
        raise UsageError(
            "a factorial plan needs the residual sd: --sd (on the log scale), --cv, or"
            " --from-store after a pilot",
            hint="e.g. --cv 2% (the metric's coefficient of variation)",
        )
    if request.mean is not None:
        if request.mean == 0:
            raise UsageError("--mean 0 gives no coefficient of variation", hint="e.g. --mean 42")
        return sd_from_cv(request.sd / abs(request.mean)), f"--sd {request.sd:g} of --mean"
    return request.sd, f"--sd {request.sd:g} (log scale)"


def load_design(ctx: Context, request: FactorialPlanRequest) -> tuple[Design, Study | None]:
    """The design of ``--study FILE`` or ``--factors``, as ``lab study run`` makes it."""
    if request.study_file is not None and request.factors is not None:
        raise UsageError(
            "give the design once: --study FILE or --factors", hint=f"e.g. {FACTORS_EXAMPLE}"
        )
    if request.factors is not None:
        return parse_design("--factors", parse_factors(request.factors)), None
    if request.study_file is None:
        raise UsageError("a factorial plan needs a design", hint=f"e.g. {FACTORS_EXAMPLE}")

    study = load_study(request.study_file, workloads(ctx), variants(ctx))
    if study.design is None:
        raise UsageError(
            f"{request.study_file} has variants, not [factors]: it is a pair, not a factorial",
            hint="Plan a pair with lab plan --sd S (or --from-store); a factorial study file"
            " gives [factors]",
        )
    return study.design, study


def plan_factorial_study(ctx: Context, request: FactorialPlanRequest) -> FactorialPlanResult:
    """``lab plan --study FILE`` (a factorial) or ``--factors``: a plan per sd (the one given,
    or each workload · metric of the pilot)."""

    design, study = load_design(ctx, request)
    layout = layout_of(design.factors, design.blocks)
    ratio = effect_ratio(request.effect)
    sources: list[tuple[str, str, float, float]] = []  # name, source, sd, r
    if request.from_store:
        for name, sd, r, df in pilot_sds(ctx, request, study):
            sources.append((name, f"pilot, {df} residual df", sd, r))
    else:
        sd, source = log_sd(request)
        sources.append(("", source, sd, 0.0))
    rows = []
    for name, source, sd, r in sources:
        autocorrelation = r if request.autocorrelation is None else request.autocorrelation
        plan = plan_factorial(layout, ratio, sd, request.confidence, request.power,
                              terms=_terms(design, request.interactions),
                              correction=request.correction,
                              autocorrelation=min(autocorrelation, 0.99))  # fmt: skip
        rows.append(FactorialPlanRow(name, source, plan))
    where = f"study {request.study_file}" if study is not None else "--factors"
    return FactorialPlanResult(design, where, tuple(rows), timings(ctx, request, design, study))


def _terms(design: Design, interactions: tuple[str, ...]) -> list[str] | None:
    """The main effects, and the interactions named; None (the main effects) without any."""
    if not interactions:
        return None
    return [f for f, _ in design.factors] + list(interactions)


def timings(
    ctx: Context, request: FactorialPlanRequest, design: Design, study: Study | None
) -> tuple[Timing, ...]:
    """Seconds per unit of n of the whole study, per workload: from ``--iteration-time``, or
    the study's median iteration in the store."""
    blocks = len(design.blocks)
    if study is None:
        t = request.iteration_time
        return (Timing("", "sync", t, "--iteration-time" if t else "unknown",
                       None if t is None else blocks * t),)  # fmt: skip

    stored = stored_seconds(Path(store_path(ctx, request.selection)), study)
    found = []
    for w in study.workloads:
        each = request.iteration_time
        source = "--iteration-time"
        if each is None:
            each, source = stored.get(w.name), "the store's median iteration"
        one = estimate_seconds(replace(w, n=1), each, None if request.iteration_time else stored)
        found.append(Timing(w.name, w.schedule, each, source if each else "unknown",
                            None if one is None else blocks * one))  # fmt: skip
    return tuple(found)


def pilot_sds(
    ctx: Context, request: FactorialPlanRequest, study: Study | None
) -> list[tuple[str, float, float, int]]:
    """Each factorial workload · metric of the pilot in the store: its name, the residual sd of
    compare's fit on log values, the largest lag-1 r of a cell in a run, and the residual df."""
    from lab.stats.effects import fit_effects  # deferred: statsmodels, for a pilot only

    selection = request.selection
    name = study.name if study is not None else selection.study
    found = []
    with Store.open(store_path(ctx, selection), create=False) as store:
        for st, wl in sorted(factorial_workloads(store, name)):
            if selection.workload not in (None, wl):
                continue
            by_metric: dict[str, dict[str, list[Series]]] = {}
            for run in store.runs(st):
                if run.workload == wl:
                    for s in store.values(wl, selection.metric, st, run.key):
                        by_metric.setdefault(s.metric, {}).setdefault(run.key, []).append(s)
            for metric, runs in sorted(by_metric.items()):
                data = factorial_data(runs, DECLARED)
                if data is None or not np.all(data.values > 0):
                    continue
                fit = fit_effects(np.log(data.values),
                                  {f: v.tolist() for f, v in data.levels.items()},
                                  levels=data.orders,
                                  blocks=None if data.blocks is None else data.blocks.tolist(),
                                  correction="none")  # fmt: skip
                error = fit.shares[-1]
                lags = [lag1_autocorrelation(s.values) for ss in runs.values() for s in ss]
                r = max([0.0, *(x for x in lags if math.isfinite(x))])
                sd = math.sqrt(error.sum_of_squares / error.df)
                found.append((f"{wl} · {metric}", sd, r, error.df))
    if not found:
        where = f" of study {name!r}" if name else ""
        raise UsageError(
            f"no factorial{where} in the store to take the residual sd from",
            hint="Run a short pilot of the study (lab study run with a small n), or pass --cv",
        )
    return found
