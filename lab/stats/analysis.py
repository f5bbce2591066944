"""Everything ``lab compare`` says about one workload and metric, from the store's series.

Arms are the series (one per variant, or per guest when a variant has several). With two arms
there is one pair, B against the baseline A; with more, every pair, and the family of
Brunner–Munzel p-values is corrected with Benjamini–Hochberg. The m pairs' verdicts are then
Bonferroni-adjusted: each reads its intervals at 1 − α/m (α = 1 − confidence), so all m hold
together at the confidence asked for; the difference tables keep the confidence asked for.
Verdicts of different workloads and metrics are not adjusted (``lab.report.summary`` says how
many there are). ``trim`` adds, side by side,
the same analysis without the samples beyond Tukey's outer fences (3 IQR) of each arm: outliers
are reported, never silently dropped. An arm whose interquartile range is 0 (quantised data:
over half its samples share one value) is not trimmed: its fences would collapse onto the
quartile and drop every other value, its spread rather than its outliers, and an arm made
constant that way can turn a difference into "equivalent" (issue 19: 88 of 400 samples).
``paired`` adds, for synchronised runs, the paired analysis of every pair of arms
(``lab.stats.paired``) beside the independent one.
``with_placement`` adds, for runs that swapped the twins' CPU sets (``lab run --swap-every``),
the variant effect and the placement effect told apart (``lab.stats.placement``).
``with_warmup`` attaches what the warm-up rules cut before the analysis (``lab.stats.discard``).
``with_boots`` splits each arm by boot (``lab.stats.boots``): with two boots or more in every
arm, the verdicts are read from the boot means, the boot being the unit of replication.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from scipy import stats

from lab.core.errors import UsageError
from lab.stats.blocked import BlockedDifference, by_host
from lab.stats.boots import BootAnalysis, BootComponents, BootPair, boot_verdict, components
from lab.stats.descriptive import Summary, check_confidence, summarize
from lab.stats.diagnostics import Diagnostics, diagnose, tukey_fences
from lab.stats.difference import (
    BOOTSTRAP_SEED,
    Difference,
    compare,
    mean_intervals,
    mean_margin,
)
from lab.stats.discard import WarmupCut
from lab.stats.paired import PairedDifference, paired_difference
from lab.stats.placement import PlacementEffects, placement_effects
from lab.stats.series import Direction, Series, SeriesKey, series_key, unique_labels
from lab.stats.stopping import StoppedInterval, stopped_verdict
from lab.stats.verdict import Threshold, Verdict, decide, decide_constant

ALL = "all samples"
TRIMMED = "without far-out outliers (beyond 3 IQR)"


@dataclass(frozen=True, eq=False)
class Arm:
    label: str
    variant: str
    guest: str
    host: str
    iterations: np.ndarray
    values: np.ndarray
    summary: Summary
    dropped: int  # samples left out by trimming (0 for ALL)
    untrimmed: str = ""  # in the trimmed view, why this arm was kept whole

    @cached_property
    def diagnostics(self) -> Diagnostics:
        """The checks of ``lab.stats.diagnostics``, computed when first read: the summary
        does not show them (Kendall's tau and Theil–Sen were most of a large arm's time)."""
        return diagnose(self.values, self.iterations, self.summary.confidence)


class RankFamily:
    """The Brunner–Munzel p-values of a comparison's pairs, Benjamini–Hochberg adjusted when
    first read (the rank tests are computed when read, ``Difference.brunner_munzel_p``)."""

    def __init__(self, differences: Sequence[Difference]) -> None:
        self.differences = tuple(differences)

    @cached_property
    def adjusted(self) -> tuple[float, ...]:
        p = np.array([d.brunner_munzel_p for d in self.differences])
        adjusted = np.full(p.shape, np.nan)
        finite = np.isfinite(p)
        if finite.any():
            adjusted[finite] = stats.false_discovery_control(p[finite], method="bh")
        return tuple(float(q) for q in adjusted)

    def of(self, difference: Difference) -> float:
        """The adjusted p of the pair whose difference this is."""
        index = next(i for i, d in enumerate(self.differences) if d is difference)
        return self.adjusted[index]


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    difference: Difference
    verdict: Verdict
    family: RankFamily | None = field(default=None, repr=False, compare=False)
    """the comparison's pairs, with more than two arms"""
    verdict_confidence: float | None = None  # Bonferroni's, only with more than two arms
    verdict_percent_ci: tuple[float, float] | None = None  # B/A − 1 in % at verdict_confidence

    @property
    def p_adjusted(self) -> float | None:
        """Benjamini–Hochberg's p among the comparison's pairs; None with two arms."""
        return None if self.family is None else self.family.of(self.difference)


@dataclass(frozen=True)
class PairedPair:
    """B against A paired by iteration, with the independent (Welch) interval beside it."""

    a: str
    b: str
    paired: PairedDifference
    welch_ci: tuple[float, float]


@dataclass(frozen=True)
class PlacementPair:
    """B against A with the CPU placement as a second factor (own CPU sets or swapped)."""

    a: str
    b: str
    effects: PlacementEffects
    unplaced: int  # samples of A or B without a placement (runs without a swap), left out


@dataclass(frozen=True)
class MetricComparison:
    study: str
    workload: str
    metric: str
    unit: str
    direction: Direction
    subset: str
    confidence: float
    threshold: Threshold
    arms: tuple[Arm, ...]
    pairs: tuple[Pair, ...]
    paired: tuple[PairedPair, ...] = ()  # only when the runs were synchronised
    placement: PlacementPair | None = None  # only when the runs swapped the CPU sets
    warmup: WarmupCut | None = None  # what was discarded as warm-up before all of the above
    hosts: BlockedDifference | None = None  # only when the arms ran on more than one host
    stopped: StoppedInterval | None = None  # the interval the run's --until rule stopped on
    boots: BootAnalysis | None = None  # the arms split by boot, where boots were recorded

    @property
    def title(self) -> str:
        better = "lower" if self.direction == "lower" else "higher"
        unit = f" ({self.unit})" if self.unit else ""
        return f"{self.workload} · {self.metric}{unit}, {better} is better"


def _arm(
    series: Series,
    label: str,
    values: np.ndarray,
    iterations: np.ndarray,
    level: float,
    untrimmed: str = "",
) -> Arm:
    return Arm(
        label=label,
        variant=series.variant,
        guest=series.guest,
        host=series.host,
        iterations=iterations,
        values=values,
        # one margin in every output: the summary's t with the batch means' effective n
        summary=replace(summarize(values, level), margin=mean_margin(values, level)),
        dropped=series.values.size - values.size,
        untrimmed=untrimmed,
    )


def _trimmed(series: Series, label: str, level: float) -> Arm:
    """The arm without the samples beyond its outer fences; whole when its IQR is 0."""
    low, high = tukey_fences(series.values, 3.0)
    if low == high:
        reason = (
            f"not trimmed: its interquartile range is 0 (over half its samples are {low:g}),"
            " so the fences would drop its spread, not outliers"
        )
        return _arm(series, label, series.values, series.iterations, level, reason)
    keep = (series.values >= low) & (series.values <= high)
    return _arm(series, label, series.values[keep], series.iterations[keep], level)


def _bonferroni(
    a: Arm,
    b: Arm,
    direction: Direction,
    threshold: Threshold,
    level: float,
    wider: float,
    family: int,
) -> tuple[Verdict, tuple[float, float]]:
    """B against A's verdict from intervals at ``wider`` = 1 − (1 − level)/family, so the
    family's verdicts hold together at ``level``; the text says so. With the ratio's
    interval (B/A − 1, in %) it read, which the summary shows beside it."""
    found = mean_intervals(a.values, b.values, wider)  # batch means where autocorrelated
    ratio = found.ratio_ci
    percent = ((ratio[0] - 1) * 100, (ratio[1] - 1) * 100)
    verdict = decide(
        percent, direction, threshold, a.label, b.label, wider, found.diff_ci, a.summary.mean
    )
    note = f" (Bonferroni for the {family} pairs: together at {level * 100:g} %)"
    return replace(verdict, text=verdict.text + note), percent


def _analyse(
    group: Sequence[Series],
    subset: str,
    level: float,
    threshold: Threshold,
    seed: int,
    paired: bool = False,
) -> MetricComparison:
    arms = [
        _trimmed(s, label, level)
        if subset == TRIMMED
        else _arm(s, label, s.values, s.iterations, level)
        for s, label in zip(group, unique_labels(group), strict=True)
    ]
    first = group[0]
    pairs = []
    family = len(arms) * (len(arms) - 1) // 2
    for a, b in itertools.combinations(arms, 2):
        diff = compare(a.values, b.values, level, seed=seed)
        if a.summary.min == a.summary.max and b.summary.min == b.summary.max:
            at = level if family == 1 else 1 - (1 - level) / family
            sa, sb = a.summary, b.summary
            verdict = decide_constant(sa.mean, sa.n, sb.mean, sb.n, first.direction,
                                      threshold, a.label, b.label, at)  # fmt: skip
            adjusted = None if family == 1 else at
            pairs.append(Pair(a.label, b.label, diff, verdict, verdict_confidence=adjusted))
        elif family == 1:
            verdict = decide(
                diff.percent_ci, first.direction, threshold, a.label, b.label, level,
                diff.diff_ci, diff.mean_a,
            )  # fmt: skip
            pairs.append(Pair(a.label, b.label, diff, verdict))
        else:
            wider = 1 - (1 - level) / family
            verdict, used = _bonferroni(a, b, first.direction, threshold, level, wider, family)
            pairs.append(Pair(a.label, b.label, diff, verdict, verdict_confidence=wider,
                              verdict_percent_ci=used))  # fmt: skip
    if len(pairs) > 1:
        ranks = RankFamily([pair.difference for pair in pairs])
        pairs = [replace(pr, family=ranks) for pr in pairs]
    comparison = MetricComparison(
        study=first.study,
        workload=first.workload,
        metric=first.metric,
        unit=first.unit,
        direction=first.direction,
        subset=subset,
        confidence=level,
        threshold=threshold,
        arms=tuple(arms),
        pairs=tuple(pairs),
    )
    return with_paired(comparison) if paired else comparison


def with_paired(c: MetricComparison) -> MetricComparison:
    """The comparison with the paired analysis of every pair of its arms added."""
    paired = tuple(
        PairedPair(
            a.label,
            b.label,
            paired_difference(a.iterations, a.values, b.iterations, b.values, c.confidence),
            pair.difference.diff_ci,
        )
        for (a, b), pair in zip(itertools.combinations(c.arms, 2), c.pairs, strict=True)
    )
    return replace(c, paired=paired)


def with_warmup(
    comparisons: Sequence[MetricComparison], cuts: Mapping[tuple[str, str, str], WarmupCut]
) -> list[MetricComparison]:
    """The comparisons with the warm-up cut of their (study, workload, metric) attached,
    its arms in the comparison's order (the baseline A first)."""
    result = []
    for c in comparisons:
        cut = cuts.get((c.study, c.workload, c.metric))
        if cut is not None:
            rank = {a.label: i for i, a in enumerate(c.arms)}
            cut = replace(cut, arms=tuple(sorted(cut.arms, key=lambda a: rank.get(a.label, 0))))
        result.append(replace(c, warmup=cut))
    return result


def with_hosts(
    comparisons: Sequence[MetricComparison], series: Sequence[Series]
) -> list[MetricComparison]:
    """The comparisons whose arms ran on more than one host, each with the host as a
    blocking factor (``lab.stats.blocked``): B − A within each host, then combined. A and B
    are the comparison's first two variants; the trimmed subset is left as it was."""
    result = []
    for c in comparisons:
        variants = list(dict.fromkeys(a.variant for a in c.arms))
        if c.subset != ALL or len(variants) < 2 or len({a.host for a in c.arms}) < 2:
            result.append(c)
            continue
        group = [
            s for s in series
            if (s.study, s.workload, s.metric) == (c.study, c.workload, c.metric)
        ]  # fmt: skip
        found = by_host(group, variants, c.confidence * 100)
        result.append(replace(c, hosts=found[0]) if found else c)
    return result


def with_stops(
    comparisons: Sequence[MetricComparison], stops: Mapping[tuple[str, str], StoppedInterval]
) -> list[MetricComparison]:
    """The comparisons of the metric a run's stopping rule read (``stops`` by study and
    workload), each with the interval the rule stopped on and its first pair's verdict read
    from that interval (``lab.stats.stopping``); the others as they were."""
    result = []
    for c in comparisons:
        stop = stops.get((c.study, c.workload))
        if stop is None or stop.metric != c.metric or c.subset != ALL or not c.pairs:
            result.append(c)
            continue
        first = c.pairs[0]
        verdict = stopped_verdict(stop, c.direction, c.threshold, first.a, first.b)
        result.append(replace(c, stopped=stop, pairs=(replace(first, verdict=verdict),
                                                      *c.pairs[1:])))  # fmt: skip
    return result


def with_boots(
    comparisons: Sequence[MetricComparison], boots: Mapping[SeriesKey, np.ndarray]
) -> list[MetricComparison]:
    """The comparisons with each arm split by boot (``boots``: each sample's boot, aligned
    with the series after the warm-up cut, by ``series_key``). Where every arm has two boots
    or more, each pair's verdict is read from the boot means instead of the iterations (at
    the pair's own confidence, Bonferroni's with more than two arms), and says so. The
    trimmed subset, and comparisons whose arms' boots are unknown, are returned as they were.
    """
    result = []
    for c in comparisons:
        got = [boots.get((c.study, c.workload, c.metric, a.variant, a.host, a.guest))
               for a in c.arms]  # fmt: skip
        found = [f for f, a in zip(got, c.arms, strict=True)
                 if f is not None and f.size == a.values.size]  # fmt: skip
        if c.subset != ALL or len(found) != len(c.arms):
            result.append(c)
            continue
        arms = tuple((a.label, components(a.values, f))
                     for a, f in zip(c.arms, found, strict=True))  # fmt: skip
        by_label = dict(arms)
        pairs = []
        if all(comp.boots >= 2 for _, comp in arms):
            pairs = [_boot_pair(c, p, by_label) for p in c.pairs]
        analysis = BootAnalysis(arms, tuple(bp for bp, _ in pairs))
        result.append(replace(c, boots=analysis, pairs=tuple(p for _, p in pairs) or c.pairs))
    return result


def _boot_pair(
    c: MetricComparison, pair: Pair, by_label: Mapping[str, BootComponents]
) -> tuple[BootPair, Pair]:
    family = len(c.pairs)
    level = pair.verdict_confidence or c.confidence
    note = (
        f" (Bonferroni for the {family} pairs: together at {c.confidence * 100:g} %)"
        if pair.verdict_confidence is not None
        else ""
    )
    found = boot_verdict(
        (pair.a, by_label[pair.a]), (pair.b, by_label[pair.b]), c.direction, c.threshold,
        level, note,
    )  # fmt: skip
    return found, replace(pair, verdict=found.verdict)


def order_arms(group: Sequence[Series], baseline_order: Sequence[str]) -> list[Series]:
    """Arms in the order of ``baseline_order`` (variant names; the first is A), then by name.
    A name given twice keeps its first place: its last one ranked it (--baseline thp,thp
    ranked thp 1, where the unnamed shp1g came too, and shp1g was A by name)."""
    rank: dict[str, int] = {}
    for i, name in enumerate(baseline_order):
        rank.setdefault(name, i)
    last = len(baseline_order)
    return sorted(group, key=lambda s: (rank.get(s.variant, last), s.variant, s.host, s.guest))


def analyse(
    series: Sequence[Series],
    confidence: float,
    threshold: float | Threshold,
    *,
    order: Sequence[str] = (),
    trim: bool = False,
    seed: int = BOOTSTRAP_SEED,
    paired: bool | Collection[str] = False,
) -> list[MetricComparison]:
    """One comparison per (study, workload, metric), twice with ``trim``: all, then trimmed.

    ``paired`` is True for every workload, or the names of the workloads whose runs were
    synchronised (``lab.stats.paired.synced_workloads``).
    """
    level = check_confidence(confidence)
    limit = threshold if isinstance(threshold, Threshold) else Threshold(threshold)
    groups: dict[tuple[str, str, str], list[Series]] = {}
    for s in series:
        groups.setdefault((s.study, s.workload, s.metric), []).append(s)
    result = []
    for key in sorted(groups):
        group = order_arms(groups[key], order)
        small = [
            label for s, label in zip(group, unique_labels(group), strict=True)
            if s.values.size < 2
        ]  # fmt: skip
        if small:
            raise UsageError(
                f"{key[1]} · {key[2]}: {', '.join(small)} has fewer than 2 samples",
                hint="Run more iterations (lab plan says how many) before comparing",
            )
        pair_them = paired if isinstance(paired, bool) else key[1] in paired
        result.append(_analyse(group, ALL, level, limit, seed, pair_them))
        if trim:
            result.append(_analyse(group, TRIMMED, level, limit, seed, pair_them))
    return result


OWN, SWAPPED = "own", "swapped"  # as lab.run.placement labels them


def cpu_set_name(variant: str) -> str:
    """The placement level of a sample: the CPU set it ran on, named by the twin owning it."""
    return f"{variant}'s CPUs"


def with_placement(
    comparisons: Sequence[MetricComparison],
    series: Sequence[Series],
    labels: Mapping[SeriesKey, np.ndarray],
) -> list[MetricComparison]:
    """The comparisons, each with its placement analysis where the samples allow one.

    ``labels`` are the placement of each sample of a series ("own" or "swapped"), keyed by
    ``lab.store.reads.series_key`` (``Store.placement_labels``). The model's placement
    factor is *which CPU set* a sample ran on: A's own, or B's (A swapped, B own). So the
    placement effect is what moving from A's CPUs to B's does, averaged over the variants,
    and the variant effect is B − A with the CPU sets balanced out. A comparison gets one
    when it has exactly two variants, all samples of its arms (not the trimmed subset)
    and samples of each variant on both CPU sets; everything else is returned as it was.
    """
    by_key = {series_key(s): s for s in series}
    result = []
    for c in comparisons:
        variants = list(dict.fromkeys(a.variant for a in c.arms))
        chosen = [by_key.get((c.study, c.workload, c.metric, a.variant, a.host, a.guest))
                  for a in c.arms]  # fmt: skip
        if c.subset != ALL or len(variants) != 2 or any(s is None for s in chosen):
            result.append(c)
            continue
        values: list[np.ndarray] = []
        var: list[str] = []
        cpu_sets: list[str] = []
        seen: set[str] = set()
        unplaced = 0
        for s in chosen:
            assert s is not None
            got = labels.get(series_key(s), np.full(s.values.size, "", dtype=str))
            keep = np.isin(got, (OWN, SWAPPED))
            unplaced += int(np.sum(~keep))
            seen.update(got[keep].tolist())
            other = variants[1] if s.variant == variants[0] else variants[0]
            values.append(s.values[keep])
            var.extend([s.variant] * int(keep.sum()))
            cpu_sets.extend(cpu_set_name(s.variant if g == OWN else other) for g in got[keep])
        if seen != {OWN, SWAPPED}:
            result.append(c)
            continue
        try:
            effects = placement_effects(
                np.concatenate(values), var, cpu_sets, c.confidence,
                baseline=variants[0], first_placement=cpu_set_name(variants[0]),
            )  # fmt: skip
        except UsageError:  # a variant never ran on one of the CPU sets, or too few samples
            result.append(c)
            continue
        pair = PlacementPair(variants[0], variants[1], effects, unplaced)
        result.append(replace(c, placement=pair))
    return result
