"""The analysis `lab compare` and `lab report` share: samples selected from the store, their
warm-up left out, then one comparison per workload and metric.

:func:`select_samples` reads the store; :func:`compare_samples` is the statistics on what
it read; :func:`analyse` is both, for ``lab compare``. ``lab report``
(:mod:`lab.app.report`) selects from a store it keeps open for its metadata, then compares
the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from lab.app import stores
from lab.app.runs import find_run, find_sweep
from lab.core.context import Context
from lab.core.errors import LabError, UsageError
from lab.core.sweeps import label
from lab.stats.verdict import Threshold, parse_threshold
from lab.store import Store
from lab.store.order import variant_order
from lab.store.records import SweepRecord

if TYPE_CHECKING:
    from lab.stats.analysis import MetricComparison
    from lab.stats.blocked import BlockedDifference
    from lab.stats.discard import WarmupCut
    from lab.stats.factorialdata import FactorialAnswer
    from lab.stats.multiplicity import Correction
    from lab.stats.series import Series, SeriesKey
    from lab.stats.stopping import StoppedInterval
    from lab.stats.sweep import SweepComparison


class WorseVerdict(LabError):
    """``lab compare --fail-on worse`` found a verdict that B is worse than A."""

    exit_code = 9


Pairing = Literal["always", "synced", "never"]
"""Pair samples by iteration for every workload, for the synchronised runs only, or never."""


@dataclass(frozen=True)
class Selection:
    """Which samples of which store: ``None`` selects every study, workload or metric."""

    db: str | None = None  # None: the `store` of lab.toml
    study: str | None = None
    workload: str | None = None
    metric: str | None = None
    warmup: str | None = None  # K, "auto" or "none"; None: what each run declared
    baseline: tuple[str, ...] = ()  # variant order, A first; empty: as stored
    run: str | None = None  # one run's key, or a unique prefix of one
    against: str | None = None  # another run to compare ``run`` with, variant by variant
    sweep: str | None = None  # one sweep's key, or a unique prefix of one
    # factors each run records (age: its host's), added to its samples' cells (lab.app.effects)
    from_runs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.from_runs:
            from lab.app.effects import check_run_factors  # deferred: the lab's factors

            check_run_factors(self.from_runs)
        if self.run is not None and self.sweep is not None:  # --sweep went unread
            raise UsageError(
                f"--run {self.run} and --sweep {self.sweep} both say which runs to compare:"
                " --run one run, --sweep a sweep's runs, value by value",
                hint="Pass one of them (`lab runs` lists the runs and the sweeps)",
            )


@dataclass(frozen=True)
class AnalyseRequest:
    selection: Selection
    confidence: float = 99.99
    threshold: str = "1%"
    trim: bool = False
    paired: Pairing = "never"
    correction: str = "holm"  # of a sweep's verdicts: "holm" or "bh" (lab.stats.multiplicity)
    effects_correction: str = "bonferroni"  # of a factorial's effects: or "none" (each alone)

    def __post_init__(self) -> None:
        parse_threshold(self.threshold)  # a threshold that cannot be read: refused at once
        if self.correction not in ("holm", "bh"):
            raise UsageError(
                f"unknown correction {self.correction!r}", hint="Use holm or bh (--correction)"
            )

    @property
    def correction_method(self) -> Correction:
        from lab.stats.multiplicity import Correction  # deferred: numpy

        return Correction(self.correction)

    @property
    def threshold_value(self) -> Threshold:
        """A percentage of A's mean ("1%") or a value in the metric's unit ("0.5")."""
        return parse_threshold(self.threshold)


@dataclass(frozen=True)
class Samples:
    """The selected series without their warm-up, and what goes with them."""

    series: list[Series]
    order: list[str]  # variant order, A first
    cuts: dict[tuple[str, str, str], WarmupCut]  # what the warm-up rule left out, and why
    placements: dict[SeriesKey, np.ndarray]  # CPU-set labels where the twins swapped them
    synced: frozenset[str]  # workloads whose runs were synchronised
    stops: dict[tuple[str, str], StoppedInterval] = field(default_factory=dict)
    """the interval each run's --until rule stopped on, by (study, workload)"""
    boots: dict[SeriesKey, np.ndarray] = field(default_factory=dict)
    """each kept sample's boot (a code per run id and boot id), where the store recorded them"""


@dataclass(frozen=True)
class SweepSamples:
    """A sweep's values, each its own run's samples without their warm-up."""

    sweep: SweepRecord
    values: list[tuple[tuple[tuple[str, str], ...], str, Samples]]  # (point, run key, samples)
    left_out: list[tuple[str, str]]  # (value, why) of values with too few samples to compare


@dataclass(frozen=True)
class Analysis:
    samples: Samples
    comparisons: list[MetricComparison]
    sweeps: list[SweepComparison] = field(default_factory=list)
    factorials: list[FactorialAnswer] = field(default_factory=list)

    @property
    def alone(self) -> list[str]:
        """The workloads whose samples are of one variant, each with it ("w1 (thp)"): they
        have nothing to be compared with (a pytest-benchmark test per workload, one variant
        a file), and the summary has no row for them."""
        found: dict[str, None] = {}
        for c in self.comparisons:
            if len(c.arms) < 2:
                found[f"{c.workload} ({', '.join(a.label for a in c.arms)})"] = None
        return list(found)

    def refuse_nothing_to_compare(self) -> None:
        """Refuse a selection in which no workload holds two variants: the summary was empty
        and the status 0, as if the variants had been compared."""
        if self.sweeps or self.factorials or any(len(c.arms) > 1 for c in self.comparisons):
            return
        alone = self.alone
        shown = ", ".join(alone[:4]) + (f" and {len(alone) - 4} more" if len(alone) > 4 else "")
        raise UsageError(
            f"nothing to compare: each workload holds one variant: {shown}",
            hint="lab compare compares the variants of one workload: store them under one"
            " workload name (lab import --workload W)",
        )


def select_samples(store: Store, selection: Selection) -> Samples:
    """The series ``selection`` names, without their warm-up: ``selection.warmup`` when
    given, else what each run declared (``lab.stats.discard``)."""
    s = selection
    if s.sweep is not None and s.run is None:  # the sweep alone (select_sweeps)
        return Samples([], [], {}, {}, frozenset())
    run = find_run(store, s.run, s.study).key if s.run is not None else None
    swept: set[tuple[str, str]] = set()  # (study, workload): compared as sweeps instead
    if run is None:
        # a factorial's runs are its blocks: fitted together (lab.app.effects), never pooled
        blocked = blocked_factorials(store, s.study, s.from_runs)
        refuse_pooling(store, s, blocked)
        swept = {(sw.study, sw.workload) for sw in selected_sweeps(store, s)} | blocked
    with store.reading_values(s.workload, s.metric, s.study, run) as reading:
        # scipy, through the statistics (0.6 s), while child processes read the samples
        # (0.3 s a million)
        from lab.stats.discard import cut_warmup, describe_rule
        from lab.stats.magnitude import refuse_inexact
        from lab.stats.paired import synced_workloads

        series = [x for x in reading.result() if (x.study, x.workload) not in swept]
    refuse_inexact(series)  # before the warm-up's statistics, which they would upset too
    origins = store.sample_boots(s.workload, s.metric, s.study, run, reading.iterations)
    trimmed = cut_warmup(
        series,
        origins,
        store.warmup_declarations(s.study),
        {r.id: r.key for r in store.runs(s.study)},
        s.warmup,
    )
    for before, after in zip(series, trimmed.series, strict=True):
        if before.values.size >= 2 > after.values.size:
            cut = trimmed.cuts[(before.study, before.workload, before.metric)]
            rules = ", ".join(sorted({describe_rule(a.rule) for a in cut.arms}))
            raise UsageError(
                f"{before.workload} · {before.metric}: discarding the warm-up ({rules}) leaves"
                f" {before.label} {after.values.size} of its {before.values.size} samples",
                hint="Pass --warmup none or a smaller count, or run more iterations",
            )
    placed = trimmed.aligned(
        store.placement_labels(s.workload, s.metric, s.study, run, reading.iterations)
    )
    return Samples(
        series=trimmed.series,
        order=list(s.baseline) if s.baseline else variant_order(store, s.study),
        cuts=trimmed.cuts,
        placements={k: v for k, v in placed.items() if (k[0], k[1]) not in swept},
        synced=synced_workloads(store.runs(s.study)),
        stops={k: v for k, v in stopped_intervals(store, s, run).items() if k not in swept},
        boots=trimmed.aligned(boot_labels(origins)),
    )


def boot_labels(
    origins: dict[SeriesKey, tuple[np.ndarray, np.ndarray]],
) -> dict[SeriesKey, np.ndarray]:
    """Each sample's boot as one integer code, the same for the same (run id, boot id), from
    ``Store.sample_boots``; a series none of whose samples has a boot id recorded (imported
    ones) is left out. Boots change rarely, so the codes are found at the change points: as
    strings, a million samples took 3.4 s to label and 2.6 s to group."""
    labels = {}
    for key, (runs, boots) in origins.items():
        n = runs.size
        if n == 0:
            continue
        change = np.empty(n, dtype=bool)
        change[0] = True
        change[1:] = (runs[1:] != runs[:-1]) | (boots[1:] != boots[:-1])
        starts = np.flatnonzero(change)
        if all(boots[i] == "" for i in starts):
            continue
        codes: dict[tuple[int, str], int] = {}
        found = [codes.setdefault((int(runs[i]), str(boots[i])), len(codes)) for i in starts]
        labels[key] = np.repeat(np.array(found, dtype=np.int64), np.diff(np.append(starts, n)))
    return labels


def stopped_intervals(
    store: Store, selection: Selection, run: str | None
) -> dict[tuple[str, str], StoppedInterval]:
    """The intervals the selected runs' stopping rules stopped on (one run per workload: runs
    are never pooled), by study and workload."""
    from lab.stats.stopping import StoppedInterval  # deferred: heavy (scipy)

    found = {}
    for r in store.runs(selection.study):
        if (run is None or r.key == run) and selection.workload in (None, r.workload):
            text = store.stop_interval(r.id)
            if text is not None:
                found[(r.study, r.workload)] = StoppedInterval.from_json(text)
    return found


def blocked_factorials(
    store: Store, study: str | None, from_runs: tuple[str, ...] = ()
) -> set[tuple[str, str]]:
    """(study, workload) of the factorials that ran in several blocks (runs)."""
    from lab.app.effects import factorial_workloads  # deferred: it loads the lab's factors

    factorial = factorial_workloads(store, study, from_runs)
    runs: dict[tuple[str, str], int] = {}
    for r in store.runs(study):
        runs[(r.study, r.workload)] = runs.get((r.study, r.workload), 0) + 1
    return {key for key in factorial if runs.get(key, 0) > 1}


def refuse_pooling(
    store: Store, selection: Selection, blocked: set[tuple[str, str]] | None = None
) -> None:
    """Runs of one workload that differ (other parameters, n or schedule: another key) are
    never pooled into one series: two-peaked data would be called "inconclusive". The same
    command resumed or repeated is one run (one key) and pools; the runs of one sweep are
    one family (compared value by value), refused only beside other runs of the workload."""
    in_sweep = {r.run_key: sw for sw in store.sweeps(selection.study) for r in sw.runs}
    by_workload: dict[tuple[str, str], dict[str, str]] = {}  # -> unit -> how it is listed
    for run in store.runs(selection.study):
        if selection.workload in (None, run.workload):
            units = by_workload.setdefault((run.study, run.workload), {})
            sweep = in_sweep.get(run.key)
            if sweep is None:
                units[run.key] = f"{run.key} ({_params(run.params)})"
            else:
                units[sweep.key] = f"sweep {sweep.key} ({_sweep_text(sweep)})"
    for (study, workload), units in sorted(by_workload.items()):
        if len(units) > 1 and (study, workload) not in (blocked or set()):
            listed = "; ".join(list(units.values())[:6])
            sweeps = any(text.startswith("sweep ") for text in units.values())
            raise UsageError(
                f"study {study!r} holds {len(units)} runs of {workload} that differ, and runs"
                f" are never pooled: {listed}",
                hint=f"Pick one with --run KEY{' or --sweep KEY' if sweeps else ''};"
                f" `lab runs --study {study}` lists them",
            )


def _sweep_text(sweep: SweepRecord) -> str:
    axes = "; ".join(f"{key} = {', '.join(values)}" for key, values in sweep.axes)
    return f"{axes}: {len(sweep.runs)} runs"


def selected_sweeps(store: Store, selection: Selection) -> list[SweepRecord]:
    """The sweeps ``selection`` names: the one ``--sweep`` names, none with ``--run``, else
    every sweep of its study and workload that has runs."""
    if selection.run is not None:
        return []
    if selection.sweep is not None:
        return [find_sweep(store, selection.sweep, selection.study)]
    return [sw for sw in store.sweeps(selection.study)
            if sw.runs and selection.workload in (None, sw.workload)]  # fmt: skip


def select_sweeps(store: Store, selection: Selection) -> list[SweepSamples]:
    """Each sweep ``selection`` names, each value's run selected on its own (its warm-up
    left out); a value with fewer than 2 samples in an arm is left out, saying so."""
    found = []
    for sweep in selected_sweeps(store, selection):
        values, left_out = [], []
        for r in sweep.runs:
            point = tuple((str(k), str(v)) for k, v in r.point.items())
            try:
                samples = select_samples(store, replace(selection, run=r.run_key, sweep=None))
            except UsageError as err:  # the warm-up would leave too few samples
                left_out.append((label(point), err.message))
                continue
            small = [x.label for x in samples.series if x.values.size < 2]
            if not samples.series or small:
                why = f"{', '.join(small)} has fewer than 2 samples" if small else "no samples yet"
                left_out.append((label(point), why))
                continue
            values.append((point, r.run_key, samples))
        found.append(SweepSamples(sweep, values, left_out))
    return found


def _params(params: dict[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()) if v is not None) or "defaults"


def compare_samples(samples: Samples, request: AnalyseRequest) -> list[MetricComparison]:
    """One comparison per (study, workload, metric), with the placement, warm-up and host
    tables where the samples call for them."""
    # deferred: heavy (scipy)
    from lab.stats.analysis import analyse as analyse_series
    from lab.stats.analysis import with_boots, with_hosts, with_placement, with_stops, with_warmup

    threshold = request.threshold_value
    paired: bool | frozenset[str] = (
        samples.synced if request.paired == "synced" else request.paired == "always"
    )
    series = samples.series
    metrics = sorted({f"{s.workload} · {s.metric}" for s in series})
    if not threshold.relative and len(metrics) > 1:
        raise UsageError(
            f"--threshold {request.threshold} is in a metric's unit, and the selection holds"
            f" {len(metrics)} metrics: {', '.join(metrics[:6])}",
            hint="Pick one with --workload W --metric M, or give the threshold in % of A's mean",
        )
    comparisons = analyse_series(
        series, request.confidence, threshold, order=samples.order, trim=request.trim,
        paired=paired,
    )  # fmt: skip
    if samples.placements:  # the twins swapped CPU sets (lab run --swap-every)
        comparisons = with_placement(comparisons, series, samples.placements)
    comparisons = with_warmup(comparisons, samples.cuts)
    comparisons = with_stops(comparisons, samples.stops)  # runs an --until rule stopped
    comparisons = with_boots(comparisons, samples.boots)  # the boot as the unit, where known
    return with_hosts(comparisons, series)  # pairs on several hosts: a By-host table


def compare_sweeps(sweeps: list[SweepSamples], request: AnalyseRequest) -> list[SweepComparison]:
    """Each sweep compared value by value as one run is, then per metric its verdicts
    corrected together and its crossing found (``lab.stats.sweep``)."""
    from lab.stats.analysis import ALL  # deferred: heavy (scipy)
    from lab.stats.sweep import compare_sweep

    found = []
    for sweep in sweeps:
        per_value = [(point, key, compare_samples(samples, request))
                     for point, key, samples in sweep.values]  # fmt: skip
        metrics = sorted({(c.workload, c.metric) for _, _, cs in per_value for c in cs})
        for workload, metric in metrics:
            chosen = [
                (point, key, c) for point, key, cs in per_value for c in cs
                if (c.workload, c.metric, c.subset) == (workload, metric, ALL) and c.pairs
            ]  # fmt: skip
            if not chosen:
                continue
            found.append(compare_sweep(
                sweep.sweep.key, [p for p, _, _ in chosen], [k for _, k, _ in chosen],
                [c for _, _, c in chosen], request.correction_method, sweep.left_out,
            ))  # fmt: skip
    return found


def no_samples(selection: Selection) -> UsageError:
    """The refusal of a selection with no samples, naming what was selected."""
    wanted = ", ".join(
        f"{k} {v!r}"
        for k, v in (
            ("study", selection.study),
            ("workload", selection.workload),
            ("metric", selection.metric),
            ("run", selection.run),
        )
        if v is not None  # --metric '' (an unset shell variable) selects nothing: named too
    )
    return UsageError(
        f"no samples in the store{' for ' + wanted if wanted else ''}",
        hint="Collect some with `lab run` or bring them in with `lab import FILE`",
    )


def store_path(ctx: Context, selection: Selection) -> Path:
    """The store ``selection`` reads: its ``db``, else the `store` key of lab.toml."""
    return stores.store_path(ctx, selection.db)


def select_against(store: Store, selection: Selection) -> Samples:
    """Run ``selection.run`` against run ``selection.against``: for each variant both hold,
    one comparison of the first run's samples (arm A) with the second's (arm B), each
    without its own warm-up. Before and after an image change, the same variant on two
    hosts, or an A/A check, with the same statistics as twins."""
    from lab.stats.series import series_key  # deferred, as the statistics are

    if selection.run is None:
        raise UsageError("--against compares two runs: name the first with --run KEY")
    first = find_run(store, selection.run, selection.study).key
    second = find_run(store, selection.against or "", selection.study).key
    if first == second:
        raise UsageError(f"--run and --against both name run {first}", hint="Name two runs")
    parts = [select_samples(store, replace(selection, run=key, against=None))
             for key in (first, second)]  # fmt: skip
    variants = [{s.variant for s in part.series} for part in parts]
    for key, found in zip((first, second), variants, strict=True):
        if not found:  # it said they shared no variant: "(shp1g, thp against )"
            raise no_samples(replace(selection, run=key, against=None))
    shared = variants[0] & variants[1]
    if not shared:
        raise UsageError(
            f"runs {first} and {second} share no variant to compare"
            f" ({', '.join(sorted(variants[0]))} against {', '.join(sorted(variants[1]))})",
            hint="Compare runs of the same variants",
        )
    series, boots = [], {}
    for key, part in zip((first, second), parts, strict=True):
        for s in part.series:
            if s.variant in shared:
                renamed = replace(s, study=f"{s.variant}: {first} vs {second}", variant=key)
                series.append(renamed)
                if series_key(s) in part.boots:  # each run's boots, as its own compare has
                    boots[series_key(renamed)] = part.boots[series_key(s)]
    return Samples(series=series, order=[first, second], cuts={}, placements={},
                   synced=frozenset(), boots=boots)  # fmt: skip


def check_baseline(baseline: Sequence[str], known: Sequence[str]) -> None:
    """Refuse a --baseline that names a variant the store does not hold: ordered after the
    known ones, it would silently leave A and B as stored, or swap them."""
    unknown = [name for name in baseline if name not in known]
    if unknown:
        raise UsageError(
            f"--baseline names {', '.join(repr(n) for n in unknown)}, not a variant of the"
            f" selection (its variants: {', '.join(known) or 'none'})",
            hint="Spell --baseline with the variants lab compare lists, A first",
        )


def selected(ctx: Context, selection: Selection) -> tuple[Samples, list[SweepSamples]]:
    """:func:`select_samples` from the store ``selection`` names (or, with ``--against``,
    :func:`select_against`), and its sweeps (:func:`select_sweeps`), refused when empty."""
    with Store.open(store_path(ctx, selection), create=False) as store:
        if selection.against is not None:
            samples, sweeps = select_against(store, selection), []
        else:
            check_baseline(selection.baseline, variant_order(store, selection.study))
            samples, sweeps = select_samples(store, selection), select_sweeps(store, selection)
        empty = not samples.series and not any(sw.values for sw in sweeps)
        # nothing pairwise: a factorial run in blocks may still be (lab.app.effects)
        blocked = (
            empty
            and selection.run is None
            and any(
                selection.workload in (None, workload)
                for _, workload in blocked_factorials(store, selection.study, selection.from_runs)
            )
        )
    if empty and not blocked:
        if sweeps:
            raise no_sweep_samples(sweeps)
        raise no_samples(selection)
    return samples, sweeps


def no_sweep_samples(sweeps: list[SweepSamples]) -> UsageError:
    """The refusal of sweeps none of whose values can be compared yet, saying why."""
    why = "; ".join(f"{value}: {reason}" for sw in sweeps for value, reason in sw.left_out[:4])
    return UsageError(
        f"no value of sweep {sweeps[0].sweep.key} has 2 samples per variant yet ({why})",
        hint="Run (or resume) the sweep with its `lab run ... --sweep` command",
    )


def analyse(ctx: Context, request: AnalyseRequest) -> Analysis:
    """``lab compare``'s analysis: the selected samples compared, arm by arm, and each
    sweep's values compared as a family."""
    samples, sweeps = selected(ctx, request.selection)
    comparisons = compare_samples(samples, request) if samples.series else []
    return Analysis(samples, comparisons, compare_sweeps(sweeps, request),
                    factorials(ctx, request))  # fmt: skip


def factorials(ctx: Context, request: AnalyseRequest) -> list[FactorialAnswer]:
    """The effects of every factorial workload of the selection (none for one run, or
    against another run), at the request's confidence, Bonferroni over each one's effects."""
    from lab.app.effects import factorial_answers  # deferred, as in blocked_factorials

    s = request.selection
    if s.run is not None or s.against is not None or s.sweep is not None:
        return []
    with Store.open(store_path(ctx, s), create=False) as store:
        return factorial_answers(store, s.study, s.workload, s.metric,
                                 request.confidence / 100, request.effects_correction,
                                 s.from_runs)  # fmt: skip


def analyse_by_host(ctx: Context, request: AnalyseRequest) -> list[BlockedDifference]:
    """``lab compare --by host``: B − A within each host, then the hosts combined."""
    from lab.stats.blocked import by_host  # deferred: heavy (scipy)

    samples, _ = selected(ctx, request.selection)
    results = by_host(samples.series, samples.order, request.confidence)
    if not results:
        raise UsageError(
            "no workload has two variants with two samples each on one host",
            hint="Collect more with `lab run`, on pairs of the same variants on each host",
        )
    return results
