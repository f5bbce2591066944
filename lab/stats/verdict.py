"""Four outcomes instead of "significant": faster, slower, equivalent or inconclusive.

The verdict reads the confidence interval of B's change relative to A (the ratio of means,
as a percentage) against a practical threshold ±t, after turning it so that positive means
"B is better" (lower is better for times, higher for throughput):

- **faster**: the whole interval lies beyond +t (B better by more than t);
- **slower**: the whole interval lies beyond −t (B worse by more than t);
- **equivalent**: the whole interval lies inside [−t, +t] (two one-sided tests, TOST);
- **inconclusive**: anything else; more samples would narrow the interval.

A verdict never contradicts the difference's own interval: "faster" or "slower" needs Welch's
interval of B − A to exclude 0 on the same side too (given as ``diff_ci``).

A threshold is a percentage of A's mean ("1%") or a value in the metric's own unit ("0.5"):
:class:`Threshold`. In units the verdict reads the interval of the difference B − A. So does
a percentage where the ratio of means is undefined (a mean is 0 or negative: retransmits,
a latency offset): against that percentage of |A's mean| when A's mean is not 0, and when it
is 0 the verdict says that only a threshold in units can judge it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

from lab.core.errors import UsageError
from lab.core.units import format_percent
from lab.stats.series import Direction

_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(%?)\s*$")


def parse_percent(text: str, what: str = "threshold") -> float:
    """'1%' or '0.5 %' as a fraction (0.01, 0.005): the one reading of a percentage in
    ``lab run``, ``lab compare``, ``lab report``, ``lab plan`` and study files.

    A bare number is refused, naming both readings: ``0.01`` was 1 % in ``lab run`` and
    0.01 % in ``lab compare``; a number without % will mean the metric's own unit, as it
    does for ``lab plan --effect`` and ``--until ci-halfwidth<X``.
    """
    match = _PERCENT.match(text)
    if not match:
        raise UsageError(f"cannot read {what} {text!r}", hint="Write a percentage such as 1%")
    number, sign = match.groups()
    if not sign:
        value = float(number)
        raise UsageError(
            f"{what} {text!r} needs its % sign: a bare number is ambiguous",
            hint=f"Write {value:g}% for {value:g} percent, or {value * 100:g}% for the fraction"
            f" {value:g}",
        )
    value = float(number) / 100.0
    if not 0 <= value < 1:
        raise UsageError(f"{what} {text!r} must be at least 0 % and below 100 %")
    return value


@dataclass(frozen=True)
class Threshold:
    """The smallest change that matters: a fraction of A's mean, or in the metric's unit."""

    value: float
    relative: bool = True

    def __str__(self) -> str:
        return f"{self.value * 100:g} %" if self.relative else f"{self.value:g} (metric's unit)"


def parse_threshold(text: str, what: str = "--threshold") -> Threshold:
    """'1%' (a percentage of A's mean) or '0.5' (in the metric's own unit): the one reading
    of a threshold in ``lab run``, ``lab compare``, ``lab report``, ``lab plan`` and study
    files."""
    if text.strip().endswith("%"):
        return Threshold(parse_percent(text, what))
    try:
        value = float(text)
    except ValueError:
        raise UsageError(
            f"cannot read {what} {text!r}",
            hint="Write a percentage of A's mean such as 1%, or a value in the metric's unit"
            " such as 0.5",
        ) from None
    if not 0 <= value < math.inf:
        raise UsageError(f"{what} {text!r} must be 0 or more, in the metric's unit")
    return Threshold(value, relative=False)


class Outcome(StrEnum):
    FASTER = "faster"
    SLOWER = "slower"
    EQUIVALENT = "equivalent"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    benefit_ci: tuple[float, float]  # B's improvement over A in percent, positive = better
    threshold: float  # fraction
    text: str


def decide(
    percent_ci: tuple[float, float],
    direction: Direction,
    threshold: float | Threshold,
    a: str = "A",
    b: str = "B",
    confidence: float = 0.9999,
    diff_ci: tuple[float, float] | None = None,
    mean_a: float | None = None,
) -> Verdict:
    """The verdict for B vs A given the CI of (B/A − 1) in percent, and optionally Welch's
    CI of B − A in the metric's units, which a faster or slower verdict must agree with.

    ``threshold`` is a fraction of A's mean, or a :class:`Threshold`; one in units, or a
    ratio that is undefined, turns the verdict to the difference (``diff_ci``, and
    ``mean_a`` to scale a percentage to units)."""
    limit = threshold if isinstance(threshold, Threshold) else Threshold(threshold)
    level = f"{confidence * 100:g} % CI"
    low, high = percent_ci
    if not limit.relative or math.isnan(low) or math.isnan(high):
        return _decide_on_difference(limit, direction, a, b, level, diff_ci, mean_a)
    benefit = (-high, -low) if direction == "lower" else (low, high)
    if (
        diff_ci is not None
        and diff_ci[0] <= 0 <= diff_ci[1]
        and (benefit[0] > limit.value * 100 or benefit[1] < -limit.value * 100)
    ):
        return Verdict(
            Outcome.INCONCLUSIVE,
            benefit,
            limit.value,
            f"{b} vs {a} is inconclusive: the ratio's interval {low:+.2f} % to {high:+.2f} %"
            f" ({level}) lies beyond the ±{limit.value * 100:g} % threshold, but the difference's"
            f" own interval ({diff_ci[0]:+.4g} to {diff_ci[1]:+.4g}) holds 0; more samples would"
            " settle it",
        )
    return _judge(
        benefit, (low, high), limit.value * 100, " %", direction, a, b, level, limit.value
    )


def decide_constant(
    value_a: float,
    n_a: int,
    value_b: float,
    n_b: int,
    direction: Direction,
    threshold: float | Threshold,
    a: str = "A",
    b: str = "B",
    confidence: float = 0.9999,
) -> Verdict:
    """The verdict when no sample varies in either arm: every sample of A is ``value_a`` and
    every one of B ``value_b``. There is no variance, so no interval (scipy warns that its
    0-width one is unreliable); what can be said instead:

    - equal values: the arms are identical at the metric's resolution, "equivalent";
    - different values: every sample of B lies on the same side of every sample of A. Were
      the variants alike, each split of the n_a + n_b samples would be as likely, and one
      that clean (either way round) has the exact permutation probability p = 2/C(n_a + n_b,
      n_a); only when p ≤ α does the change, known exactly, meet the threshold as it would
      an interval. With 2 samples a side p = 1/3: "inconclusive", not "faster" at 99.99 %.
    """
    limit = threshold if isinstance(threshold, Threshold) else Threshold(threshold)
    level = f"{confidence * 100:g} %"
    every = f"every sample of {a} is {value_a:.6g} and of {b} {value_b:.6g} (n = {n_a}, {n_b})"
    if value_a == value_b:
        return Verdict(Outcome.EQUIVALENT, (0.0, 0.0), limit.value,
                       f"{b} and {a} are identical: {every}; no sample varies, so there is no"
                       " interval, and none is needed for no change at the metric's"
                       " resolution")  # fmt: skip
    p = min(1.0, 2 / math.comb(n_a + n_b, n_a))
    diff = value_b - value_a
    if limit.relative and value_a > 0 and value_b > 0:
        change, t, unit = (value_b / value_a - 1) * 100, limit.value * 100, " %"
    elif limit.relative and value_a != 0:
        change, t, unit = diff, limit.value * abs(value_a), ""
    elif limit.relative:
        change, t, unit = diff, math.inf, ""
    else:
        change, t, unit = diff, limit.value, ""
    benefit = -change if direction == "lower" else change
    alpha = 1 - confidence
    if p > alpha or abs(benefit) <= t:
        why = (
            f"a split this clean has p = {p:.3g} (permutation, 2/C({n_a + n_b},{n_a}))"
            f" above α = {alpha:.3g}; more samples would settle it"
            if p > alpha
            else f"the change {change:+.4g}{unit} is within the ±{t:.4g}{unit} threshold, but"
            " with no variance there is no interval to call it equivalent"
        )
        return Verdict(Outcome.INCONCLUSIVE, (benefit, benefit), limit.value,
                       f"{b} vs {a} is inconclusive: {every}, no sample varies, so there is no"
                       f" interval at {level}; {why}")  # fmt: skip
    outcome = Outcome.FASTER if benefit > 0 else Outcome.SLOWER
    word = "faster than" if benefit > 0 else "slower than"
    return Verdict(outcome, (benefit, benefit), limit.value,
                   f"{b} is {word} {a}: {every}, a change of {change:+.4g}{unit} in every"
                   f" sample, beyond the {t:.4g}{unit} threshold; no sample varies, so instead"
                   f" of an interval: a split this clean has p = {p:.3g} (permutation,"
                   f" 2/C({n_a + n_b},{n_a})), within α = {alpha:.3g}")  # fmt: skip


def _decide_on_difference(
    limit: Threshold,
    direction: Direction,
    a: str,
    b: str,
    level: str,
    diff_ci: tuple[float, float] | None,
    mean_a: float | None,
) -> Verdict:
    """The verdict read from B − A in the metric's units: for a threshold in units, or where
    the ratio of means is undefined (a mean is 0 or negative)."""
    nan2 = (math.nan, math.nan)
    if diff_ci is None or math.isnan(diff_ci[0]) or math.isnan(diff_ci[1]):
        return Verdict(Outcome.INCONCLUSIVE, nan2, limit.value,
                       f"{b} vs {a}: the ratio of means is undefined (a mean is not"
                       " positive)")  # fmt: skip
    low, high = diff_ci
    shown = f"B − A from {low:+.4g} to {high:+.4g} ({level})"
    if limit.relative:
        if not mean_a:
            return Verdict(
                Outcome.INCONCLUSIVE, nan2, limit.value,
                f"{b} vs {a}: {a}'s mean is 0, so a change in % is undefined ({shown}); give"
                " --threshold in the metric's unit (e.g. --threshold 0.5) for a verdict on"
                " the difference",
            )  # fmt: skip
        units = limit.value * abs(mean_a)
        why = (
            f"; judged on the difference, as the ratio of means is undefined for a mean that"
            f" is not positive, against {limit.value * 100:g} % of |{a}'s mean| = {units:.4g}"
        )
    else:
        units, why = limit.value, "; judged on the difference, against a threshold in units"
    benefit = (-high, -low) if direction == "lower" else (low, high)
    verdict = _judge(benefit, diff_ci, units, "", direction, a, b, level, limit.value)
    return Verdict(verdict.outcome, verdict.benefit_ci, verdict.threshold, verdict.text + why)


def _judge(
    benefit: tuple[float, float],
    interval: tuple[float, float],
    t: float,
    unit: str,
    direction: Direction,
    a: str,
    b: str,
    level: str,
    threshold: float,
) -> Verdict:
    """Faster, slower, equivalent or inconclusive: ``benefit`` (positive = B better) against
    ±``t``, with ``interval`` (B − A or B/A − 1, as shown) in ``unit``."""
    low, high = interval
    worse_word, better_word = ("higher", "lower") if direction == "lower" else ("lower", "higher")
    # in the faster and slower branches both bounds have the same sign
    near, far = sorted((abs(low), abs(high)))
    show = format_percent if unit else _format_units
    span = f"{show(near).lstrip('+')}{unit} to {show(far).lstrip('+')}{unit}"
    beyond = f"beyond the {t:.4g}{unit} threshold"
    if benefit[0] > t:
        outcome = Outcome.FASTER
        text = f"{b} is faster than {a}: {span} {better_word} ({level}), {beyond}"
    elif benefit[1] < -t:
        outcome = Outcome.SLOWER
        text = f"{b} is slower than {a}: {span} {worse_word} ({level}), {beyond}"
    elif -t <= benefit[0] and benefit[1] <= t:
        outcome = Outcome.EQUIVALENT
        text = (
            f"{b} and {a} are equivalent: the change lies within ±{t:.4g}{unit}"
            f" ({show(low)}{unit} to {show(high)}{unit}, {level})"
        )
    else:
        outcome = Outcome.INCONCLUSIVE
        text = (
            f"{b} vs {a} is inconclusive: {show(low)}{unit} to {show(high)}{unit}"
            f" ({level}) straddles the ±{t:.4g}{unit} threshold; more samples would narrow it"
        )
    return Verdict(outcome, benefit, threshold, text)


def _format_units(value: float) -> str:
    return f"{value:+.4g}"
