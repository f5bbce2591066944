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
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

from lab.core.errors import UsageError
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
    threshold: float,
    a: str = "A",
    b: str = "B",
    confidence: float = 0.9999,
    diff_ci: tuple[float, float] | None = None,
) -> Verdict:
    """The verdict for B vs A given the CI of (B/A − 1) in percent, and optionally Welch's
    CI of B − A in the metric's units, which a faster or slower verdict must agree with."""
    low, high = percent_ci
    t = threshold * 100.0
    level = f"{confidence * 100:g} % CI"
    if math.isnan(low) or math.isnan(high):
        return Verdict(
            Outcome.INCONCLUSIVE,
            (math.nan, math.nan),
            threshold,
            f"{b} vs {a}: the ratio of means is undefined (a mean is not positive)",
        )
    benefit = (-high, -low) if direction == "lower" else (low, high)
    worse_word, better_word = ("higher", "lower") if direction == "lower" else ("lower", "higher")
    # in the faster and slower branches both bounds have the same sign
    near, far = sorted((abs(low), abs(high)))
    span = f"{near:.2f} % to {far:.2f} %"
    beyond = f"beyond the {t:g} % threshold"
    if (
        diff_ci is not None
        and diff_ci[0] <= 0 <= diff_ci[1]
        and (benefit[0] > t or benefit[1] < -t)
    ):
        return Verdict(
            Outcome.INCONCLUSIVE,
            benefit,
            threshold,
            f"{b} vs {a} is inconclusive: the ratio's interval {low:+.2f} % to {high:+.2f} %"
            f" ({level}) lies beyond the ±{t:g} % threshold, but the difference's own interval"
            f" ({diff_ci[0]:+.4g} to {diff_ci[1]:+.4g}) holds 0; more samples would settle it",
        )
    if benefit[0] > t:
        outcome = Outcome.FASTER
        text = f"{b} is faster than {a}: {span} {better_word} ({level}), {beyond}"
    elif benefit[1] < -t:
        outcome = Outcome.SLOWER
        text = f"{b} is slower than {a}: {span} {worse_word} ({level}), {beyond}"
    elif -t <= benefit[0] and benefit[1] <= t:
        outcome = Outcome.EQUIVALENT
        text = (
            f"{b} and {a} are equivalent: the change lies within ±{t:g} %"
            f" ({low:+.2f} % to {high:+.2f} %, {level})"
        )
    else:
        outcome = Outcome.INCONCLUSIVE
        text = (
            f"{b} vs {a} is inconclusive: {format_percent(low)} % to {format_percent(high)} %"
            f" ({level}) straddles the ±{t:g} % threshold; more samples would narrow it"
        )
    return Verdict(outcome, benefit, threshold, text)


def format_percent(value: float) -> str:
    """A percentage for a sentence: two decimals, or three digits when it is huge (with two
    samples at 99.99 % an interval can reach 10^50 %)."""
    return f"{value:+.2f}" if abs(value) < 1e4 else f"{value:+.3g}"
