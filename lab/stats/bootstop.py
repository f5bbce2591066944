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

from dataclasses import dataclass

import numpy as np

from lab.stats.boots import BootDifference, boot_difference
from lab.stats.descriptive import check_confidence

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
