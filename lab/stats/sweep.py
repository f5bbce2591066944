"""A sweep's verdicts: one per value of the swept parameter, corrected together, and the
crossing, the smallest value from which B is better than A beyond the threshold.

Each value is its own run, analysed as ``lab compare`` analyses one (``lab.stats.analysis``):
B against A, the change in % with its interval at the confidence asked for, and a verdict
from that interval (``lab.stats.verdict``). With m values, m verdicts at 1 − α each would
make about α·m false ones, and "the smallest value where B is better" would be the one a
false verdict most likely sets. So the verdicts are corrected as a family:

- each value's verdict gets a **p-value**: the smallest α at which the (1 − α) intervals
  give that verdict (faster, slower or equivalent), found by bisection on the very rule
  ``lab compare`` applies (:func:`verdict_at`), so p ≤ α exactly when the value's own
  verdict at 1 − α is that one; a value whose intervals give no verdict at any α has p = 1;
- the m p-values are adjusted with Holm's step-down (by default: the chance of any false
  verdict among the m stays at most α) or Benjamini–Hochberg's step-up (the expected share
  of false verdicts among those made stays at most α), ``lab.stats.multiplicity``;
- a verdict stands when its adjusted p is at most α; otherwise the value is "inconclusive"
  and its text says what it would have been alone.

The values are separate runs, so their samples, and their tests, are independent.

The **crossing** is read along the first swept key (the others, if any, held at each of their
combinations): the smallest value whose corrected verdict says B is better (``faster``)
beyond the threshold, with the larger values where it does not hold, if any. Values order by
their magnitude (``64M`` is 64·1024²) when all have one, else as given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from lab.core.errors import UsageError
from lab.core.sweeps import label, magnitude
from lab.stats.analysis import MetricComparison, Pair
from lab.stats.difference import mean_intervals
from lab.stats.multiplicity import Correction, adjust
from lab.stats.series import Direction
from lab.stats.verdict import Outcome, Threshold, Verdict, decide

ALPHA_FLOOR = 1e-12  # a verdict that holds even at this α reports p = this
ALPHA_CEILING = 0.999
BISECTIONS = 48  # on log α: p to a relative 1e-12

Point = tuple[tuple[str, str], ...]


def verdict_at(
    a: np.ndarray,
    b: np.ndarray,
    direction: Direction,
    threshold: Threshold,
    level: float,
    labels: tuple[str, str] = ("A", "B"),
) -> Verdict:
    """B against A's verdict at confidence ``level``, as ``lab compare`` gives it for two
    arms: the ratio's interval (batch means where autocorrelated) against the threshold,
    which Welch's interval of B − A must not contradict."""
    found = mean_intervals(a, b, level)
    ratio = found.ratio_ci
    percent = ((ratio[0] - 1.0) * 100.0, (ratio[1] - 1.0) * 100.0)
    return decide(percent, direction, threshold, labels[0], labels[1], level, found.diff_ci,
                  float(np.mean(a)))  # fmt: skip


def claim_p(
    a: np.ndarray, b: np.ndarray, direction: Direction, threshold: Threshold
) -> tuple[Outcome, float]:
    """The verdict the samples give at some confidence, and its p: the smallest α at which
    the (1 − α) intervals give it. Intervals nest as α grows, so once a verdict holds it
    holds at every larger α, and it is always the same one; (inconclusive, 1) when none
    holds even at α = :data:`ALPHA_CEILING`."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)

    def outcome(alpha: float) -> Outcome:
        return verdict_at(a, b, direction, threshold, 1.0 - alpha).outcome

    loose = outcome(ALPHA_CEILING)
    if loose == Outcome.INCONCLUSIVE:
        return Outcome.INCONCLUSIVE, 1.0
    if outcome(ALPHA_FLOOR) != Outcome.INCONCLUSIVE:
        return loose, ALPHA_FLOOR
    low, high = math.log(ALPHA_FLOOR), math.log(ALPHA_CEILING)  # inconclusive at low, not high
    for _ in range(BISECTIONS):
        middle = (low + high) / 2
        if outcome(math.exp(middle)) == Outcome.INCONCLUSIVE:
            low = middle
        else:
            high = middle
    return loose, math.exp(high)


@dataclass(frozen=True)
class SweepValue:
    """One value of the sweep: its run's analysis and its verdict in the family."""

    point: Point
    run: str  # the run's key
    comparison: MetricComparison  # its first pair's verdict is the corrected one
    claim: Outcome  # the verdict its samples give on their own, at some α
    p: float  # the smallest α at which they give it
    p_adjusted: float  # in the family (Holm or Benjamini–Hochberg)
    alone: Verdict  # its verdict at the confidence asked for, uncorrected

    @property
    def label(self) -> str:
        return label(self.point)

    @property
    def pair(self) -> Pair:
        return self.comparison.pairs[0]

    @property
    def verdict(self) -> Verdict:
        return self.pair.verdict


@dataclass(frozen=True)
class Crossing:
    """Where B starts to be better, along the sweep's first key, with the other keys at
    ``rest``: the smallest value whose verdict says B is better beyond the threshold."""

    axis: str
    rest: Point  # the other swept keys' values (none for a sweep of one key)
    value: str | None  # None: B is better at no value
    not_above: tuple[str, ...]  # larger values where B is not better

    def describe(self, threshold: Threshold) -> str:
        at = f" (with {label(self.rest)})" if self.rest else ""
        beyond = f"beyond ±{threshold}"
        if self.value is None:
            return f"crossing{at}: none, B is better {beyond} at no value of {self.axis}"
        text = (f"crossing{at}: {self.axis}={self.value}, the smallest value where B is better"
                f" {beyond}")  # fmt: skip
        if self.not_above:
            return text + f"; not at the larger {', '.join(self.not_above)}"
        return text + ", and at every larger value"


@dataclass(frozen=True)
class SweepComparison:
    """One metric of a sweep: a verdict per value, corrected together, and the crossing."""

    sweep: str  # the sweep's key
    axis: str  # the first swept key: the one plotted and crossed
    values: tuple[SweepValue, ...]  # in the sweep's order
    correction: Correction
    crossings: tuple[Crossing, ...]
    left_out: tuple[tuple[str, str], ...] = ()  # (value, why) of values not compared

    @property
    def first(self) -> MetricComparison:
        return self.values[0].comparison

    @property
    def study(self) -> str:
        return self.first.study

    @property
    def workload(self) -> str:
        return self.first.workload

    @property
    def metric(self) -> str:
        return self.first.metric

    @property
    def unit(self) -> str:
        return self.first.unit

    @property
    def direction(self) -> Direction:
        return self.first.direction

    @property
    def confidence(self) -> float:
        return self.first.confidence

    @property
    def threshold(self) -> Threshold:
        return self.first.threshold

    @property
    def labels(self) -> tuple[str, str]:
        return (self.values[0].pair.a, self.values[0].pair.b)

    @property
    def title(self) -> str:
        better = "lower" if self.direction == "lower" else "higher"
        unit = f" ({self.unit})" if self.unit else ""
        a, b = self.labels
        return f"sweep of {self.workload} · {self.metric}{unit}, {better} is better: {b} vs {a}"

    def note(self) -> str:
        """How the verdicts were made, in a sentence: the family, the correction, the p."""
        alpha = 1 - self.confidence
        m = len(self.values)
        return (
            f"{m} verdict{'s' if m > 1 else ''}, corrected together with"
            f" {self.correction.method} on each value's p (the smallest α at which its"
            f" intervals give its verdict): a verdict stands when its adjusted p is at most"
            f" α = {alpha:.4g}, which keeps {self.correction.promise}. Intervals are each at"
            f" {self.confidence * 100:g} %."
        )


def compare_sweep(
    sweep: str,
    points: Sequence[Point],
    runs: Sequence[str],
    comparisons: Sequence[MetricComparison],
    correction: Correction = Correction.HOLM,
    left_out: Sequence[tuple[str, str]] = (),
) -> SweepComparison:
    """The family of one metric's values: ``comparisons[i]`` is the analysis of the run
    ``runs[i]`` made at ``points[i]`` (all samples, B against A in its first pair)."""
    if not comparisons:
        raise UsageError(f"sweep {sweep}: no value to compare", hint="Run the sweep first")
    for point, c in zip(points, comparisons, strict=True):
        if not c.pairs:
            raise UsageError(
                f"sweep {sweep}, {label(point)}: {c.workload} · {c.metric} has one variant only",
                hint="A sweep compares two variants at every value: run it on the pair",
            )
    claims = [_claim_of_pair(c) for c in comparisons]
    adjusted = adjust([p for _, p in claims], correction)
    values = []
    for point, run, c, (claim, p), q in zip(points, runs, comparisons, claims, adjusted,
                                           strict=True):  # fmt: skip
        alone = c.pairs[0].verdict
        verdict = _corrected(c, claim, p, q, correction, len(comparisons))
        corrected = replace(c, pairs=(replace(c.pairs[0], verdict=verdict), *c.pairs[1:]))
        values.append(SweepValue(tuple(point), run, corrected, claim, p, q, alone))
    axis = points[0][0][0]
    return SweepComparison(sweep, axis, tuple(values), correction,
                           crossings(values, axis), tuple(left_out))  # fmt: skip


def _claim_of_pair(c: MetricComparison) -> tuple[Outcome, float]:
    """:func:`claim_p` of the comparison's first pair, B against A."""
    arms = {arm.label: arm for arm in c.arms}
    pair = c.pairs[0]
    return claim_p(arms[pair.a].values, arms[pair.b].values, c.direction, c.threshold)


def _corrected(
    c: MetricComparison, claim: Outcome, p: float, q: float, correction: Correction, m: int
) -> Verdict:
    """The value's verdict in the family: its own when the adjusted p is at most α, else
    inconclusive, saying what it would have been alone."""
    alpha = 1 - c.confidence
    own, pair = c.pairs[0].verdict, c.pairs[0]
    said = f"{correction.method} over the {m} values of the sweep: p {_p(p)}, adjusted {_p(q)}"
    if claim == Outcome.INCONCLUSIVE or p > alpha:  # inconclusive on its own already
        return replace(own, outcome=Outcome.INCONCLUSIVE, text=f"{own.text} ({said})")
    if q <= alpha:
        return replace(own, text=f"{own.text} ({said} ≤ α = {alpha:.4g})")
    return Verdict(
        Outcome.INCONCLUSIVE, own.benefit_ci, own.threshold,
        f"{pair.b} vs {pair.a} is inconclusive once corrected for the {m} values of the sweep:"
        f" on its own {claim.value} ({own.text}), but {said} > α = {alpha:.4g}",
    )  # fmt: skip


def _p(value: float) -> str:
    return f"< {ALPHA_FLOOR:g}" if value <= ALPHA_FLOOR else f"{value:.3g}"


def crossings(values: Sequence[SweepValue], axis: str) -> tuple[Crossing, ...]:
    """The crossing along ``axis`` for each combination of the other keys' values."""
    groups: dict[Point, list[SweepValue]] = {}
    for v in values:
        rest = tuple((k, x) for k, x in v.point if k != axis)
        groups.setdefault(rest, []).append(v)
    found = []
    for rest, members in groups.items():
        along = [(dict(v.point)[axis], v) for v in members]
        sizes = [magnitude(x) for x, _ in along]
        if all(s is not None for s in sizes):
            along = [item for _, item in sorted(zip(sizes, along, strict=True), key=_first)]
        better = [i for i, (_, v) in enumerate(along) if v.verdict.outcome == Outcome.FASTER]
        if not better:
            found.append(Crossing(axis, rest, None, ()))
            continue
        first = better[0]
        above = tuple(x for x, v in along[first + 1 :] if v.verdict.outcome != Outcome.FASTER)
        found.append(Crossing(axis, rest, along[first][0], above))
    return tuple(found)


def _first(item: tuple[float | None, object]) -> float:
    return float(item[0] or 0.0)
