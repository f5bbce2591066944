"""The stop rule read on the unit ``lab compare`` reads when a run has boots: the boot means.

A run with ``--reboot-every K`` replicates over boots, and ``lab compare`` then reads B against
A from each arm's boot means (``lab.stats.boots``). A stop rule that looked at balanced blocks
of iterations would stop on a unit compare does not use, and with a large between-boot variance
it stops wrongly far more often than alpha. This rule looks once per completed boot of both
arms, from the second boot on, and reads the boot means with Welch's interval.

Why Bonferroni over the planned looks, not a confidence sequence or O'Brien–Fleming: with two
to a dozen boots the variance is estimated from very few values, so the normal-theory boundaries
(O'Brien–Fleming, the mixture confidence sequence of ``lab.stats.sequential``) do not hold; a
group-sequential t design needs the joint law of t statistics with estimated variance, which
has no closed form for Welch. Splitting alpha evenly over the L = max_boots − 1 planned looks
holds by the union bound whatever the dependence between looks and whatever the variance
estimate: at each look the Welch interval at level 1 − alpha / L is (near) exact for normal
boot means, so P(any look excludes the truth) ≤ L · alpha / L = alpha. It is conservative (the
looks are strongly correlated), which costs boots, never wrong stops. The simulation in
``bench/bootstop_errors.py`` prints the wrong-stop rates on A/A twins.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from lab.stats.boots import BootDifference, boot_difference
from lab.stats.descriptive import check_confidence
from lab.stats.sequential import Decision, SequentialInterval, StopRule, halfwidth
from lab.stats.verdict import Direction, Outcome, Threshold, decide

MIN_BOOTS = 2  # Welch needs two boot means in each arm


def planned_looks(max_boots: int) -> int:
    """How many looks a run of ``max_boots`` boots per arm makes: one per boot from the second."""
    return max(1, max_boots - MIN_BOOTS + 1)


def look_confidence(confidence: float, max_boots: int) -> float:
    """The level of each look's interval: alpha split evenly over the planned looks."""
    level = check_confidence(confidence)
    return 1.0 - (1.0 - level) / planned_looks(max_boots)


@dataclass(frozen=True)
class BootLook:
    """One look at the boot means: the interval at the look's level, and whether it decides."""

    boots: int  # boots per arm read (the fewer of the two arms)
    level: float  # the look's confidence, after the split of alpha
    difference: BootDifference | None  # None before two boots in each arm

    @property
    def excludes_zero(self) -> bool:
        """The interval of B − A is on one side of 0: "faster" or "slower" can be said."""
        if self.difference is None:
            return False
        low, high = self.difference.diff_ci
        return bool(low > 0 or high < 0)


def boot_look(a: np.ndarray, b: np.ndarray, confidence: float, max_boots: int) -> BootLook:
    """Read the boot means ``a`` and ``b`` at one look of a run planned for ``max_boots``."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    boots = int(min(a.size, b.size))
    level = look_confidence(confidence, max_boots)
    if boots < MIN_BOOTS:
        return BootLook(boots, level, None)
    return BootLook(boots, level, boot_difference(a, b, level))


def boot_iterations(boot: int, every: int, n: int, skip: int = 0) -> range:
    """The iterations of boot ``boot`` (from 1) of a run of ``n`` rebooting every ``every``
    (``lab run --reboot-every``): (boot−1)·every+1 to boot·every, the last boot cut at n, less
    the first ``skip`` of each (its warm-up), one left at least."""
    first = (boot - 1) * every + 1
    last = min(boot * every, n)
    return range(min(first + skip, last), last + 1)


def boot_means(
    values: Mapping[int, float], every: int, boots: int, n: int, skip: int = 0
) -> list[float] | None:
    """The means of boots 1..``boots`` of one twin (:func:`boot_iterations`); None while one
    of them lacks an iteration."""
    means = []
    for boot in range(1, boots + 1):
        numbers = boot_iterations(boot, every, n, skip)
        if any(i not in values for i in numbers):
            return None
        means.append(float(np.mean([values[i] for i in numbers])))
    return means


def boot_decision(
    a: Sequence[float],
    b: Sequence[float],
    confidence: float,
    max_boots: int,
    threshold: float | Threshold,
    direction: Direction = "lower",
    labels: tuple[str, str] = ("A", "B"),
    rule: StopRule | None = None,
) -> Decision:
    """Continue or stop a run with boots after the boot means ``a`` and ``b`` of its complete
    boots: stop on a decisive verdict read from the look's interval (:func:`boot_look`), or,
    for ``rule`` ``ci-halfwidth<X``, on that interval's half-width below X; or once
    ``max_boots`` boots are in. The verdict is lab compare's (``decide``) on that interval,
    so a stop and the verdict compare gives read the same unit."""
    look = boot_look(np.asarray(a), np.asarray(b), confidence, max_boots)
    looks = planned_looks(max_boots)
    method = (
        f"Welch's interval on boot means, at {look.level * 100:.6g} % at each of {looks}"
        f" planned look(s) (α split over them)"
    )
    at = f"after {look.boots} boot(s) per twin"
    d = look.difference
    if d is None:
        none = (math.nan, math.nan)
        interval = SequentialInterval(
            look.boots, look.level, max_boots, math.nan, none, math.nan, none
        )
        verdict = decide((math.nan, math.nan), direction, threshold, *labels, look.level)
        return Decision(False, f"{at}: two boots a twin are needed", method, interval, verdict)
    verdict = decide(d.percent_ci, direction, threshold, *labels, look.level, d.diff_ci, d.mean_a)
    interval = SequentialInterval(look.boots, look.level, max_boots, d.diff, d.diff_ci,
                                  d.percent, d.percent_ci)  # fmt: skip
    progress = f"{at}: {verdict.text}"
    met = verdict.outcome != Outcome.INCONCLUSIVE
    if rule is not None and rule.kind == "ci-halfwidth":
        width, shown, limit = halfwidth(rule, interval)
        met = rule.limit is not None and width < rule.limit
        progress = (
            f"{at}: the boot-level interval's half-width {shown}"
            f" {'is below' if met else 'is not below'} {limit}"
        )
    if met:
        return Decision(True, progress, "stopped by " + method, interval, verdict)
    if look.boots >= max_boots:
        reason = (
            f"{progress}; the most boots the run can give, {max_boots}, are reached. Run more"
            " iterations (a higher --n: more boots) to narrow it further"
        )
        return Decision(True, reason, "stopped at the maximum n; the interval is " + method,
                        interval, verdict)  # fmt: skip
    return Decision(False, progress, method, interval, verdict)


WIDE = 4.0  # a t quantile past this makes a boot-level verdict need an effect of many SEs


def too_few_boots(n: int, every: int, confidence: float, until: bool) -> str | None:
    """Why ``n`` iterations rebooting every ``every`` give too few boots for a verdict at
    ``confidence`` (percent or fraction): lab compare reads one value per boot, so the t
    quantile of its interval has 2·(boots − 1) degrees of freedom (fewer with Welch's), and
    with ``until`` the level of each look is higher still (alpha split over the looks);
    None when the quantile is at most :data:`WIDE`."""
    from scipy import stats  # deferred: scipy, only for a run with boots

    boots = max(1, math.ceil(n / every))
    level = look_confidence(confidence, boots) if until else check_confidence(confidence)
    if boots < MIN_BOOTS:
        return (
            f"--n {n} with --reboot-every {every} gives each twin {boots} boot: lab compare"
            " reads one value per boot and needs two in each twin for any interval"
        )
    quantile = float(stats.t.ppf(1 - (1 - level) / 2, 2 * (boots - 1)))
    if quantile <= WIDE:
        return None
    return (
        f"--n {n} with --reboot-every {every} gives each twin {boots} boots: at"
        f" {level * 100:.6g} % the boot-level interval is ±{quantile:.1f} standard errors"
        f" (t with {2 * (boots - 1)} degrees of freedom), so only an effect that large gets a"
        " verdict; more boots (a higher --n) or a lower --confidence narrow it"
    )
