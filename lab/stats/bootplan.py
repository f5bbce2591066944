"""How many boots, and how many iterations in each, a verdict with the boot as its unit needs.

With the boot as the unit (``lab.stats.boots``), each arm gives one value per boot, its boot
mean, whose variance is σ²_between + σ²_within / n for n iterations per boot. Collecting b
boots costs b·(c_boot + n·c_iter) seconds per variant (c_boot: a reboot, c_iter: one
iteration). Kalibera and Jones ("Rigorous benchmarking in reasonable time", 2013) show that
the cost of reaching a given precision is least at

    n* = √(c_boot / c_iter · σ²_within / σ²_between)

iterations per boot, whatever the precision asked. The number of boots is then the number of
boot means per variant ``lab.stats.planning`` finds for the verdict, planned with the
standard deviation of one boot mean, √(σ²_between + σ²_within / n). The whole numbers either
side of n* are both planned and the cheaper kept. Where the pilot finds no variance between
boots, n* is unbounded: the plan stops at ``max_per_boot`` and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lab.core.errors import UsageError
from lab.stats.planning import Goal, Plan, plan_samples
from lab.stats.verdict import Threshold

DEFAULT_REBOOT_SECONDS = 60.0  # a reboot's cost when neither the pilot nor the user says
MAX_PER_BOOT = 100_000
FORMULA = (
    "n* = √(c_boot/c_iter · σ²_within/σ²_between) iterations per boot (Kalibera and Jones);"
    " boots per variant: lab plan's samples for the verdict, each sample a boot mean of sd"
    " √(σ²_between + σ²_within/n)"
)


@dataclass(frozen=True)
class Cost:
    """Seconds something takes, and where that figure comes from."""

    seconds: float
    source: str  # "--reboot-cost", "the pilot's median of 5 reboots", "assumed", ...


@dataclass(frozen=True)
class BootPlan:
    between: float  # σ²_between of the pilot
    within: float  # σ²_within of the pilot
    reboot: Cost
    iteration: Cost
    optimal: float  # n*, unrounded (inf without between-boot variance)
    per_boot: int  # iterations per boot to run
    boots: int  # boots per variant
    plan: Plan  # the verdict's plan on boot means: boots = plan.n
    capped: bool  # n* was beyond max_per_boot

    @property
    def seconds(self) -> float:
        """Per variant (the twins run at the same time): every boot and its iterations."""
        return cost(self.boots, self.per_boot, self.reboot.seconds, self.iteration.seconds)

    @property
    def icc(self) -> float:
        total = self.between + self.within
        return self.between / total if total > 0 else math.nan


def cost(boots: int, per_boot: int, reboot: float, iteration: float) -> float:
    return boots * (reboot + per_boot * iteration)


def optimal_per_boot(between: float, within: float, reboot: float, iteration: float) -> float:
    """Kalibera and Jones's n*: iterations per boot at the least cost for any precision."""
    if between <= 0:
        return math.inf
    return math.sqrt(reboot / iteration * within / between)


def plan_boots(
    between: float,
    within: float,
    delta: float,
    reboot: Cost,
    iteration: Cost,
    confidence: float = 0.9999,
    power: float = 0.9,
    *,
    threshold: float | Threshold = 0.0,
    mean: float | None = None,
    goal: Goal | None = None,
    max_per_boot: int = MAX_PER_BOOT,
) -> BootPlan:
    """The boots × iterations per boot of least cost for the verdict (as
    :func:`lab.stats.planning.plan_samples` plans it), from the pilot's variance
    components."""
    if not (math.isfinite(between) and math.isfinite(within)) or between < 0 or within <= 0:
        raise UsageError(
            f"cannot plan boots with between-boot variance {between:g} and within-boot"
            f" variance {within:g}",
            hint="Run a pilot with several boots of several iterations each"
            " (lab run --reboot-every K)",
        )
    for what, c in (("reboot", reboot), ("iteration", iteration)):
        if not 0 < c.seconds < math.inf:
            raise UsageError(
                f"the {what} cost {c.seconds:g} s ({c.source}) must be a finite number of"
                " seconds above 0",
                hint=f"Pass --{what}-cost S",
            )
    optimal = optimal_per_boot(between, within, reboot.seconds, iteration.seconds)
    capped = optimal > max_per_boot
    # n* is infinite when the boots do not vary: floor() of it overflows, so cap it first
    low = max(1, math.floor(min(float(max_per_boot), optimal)))
    candidates = sorted({low, min(max_per_boot, low + 1)})
    found: list[tuple[float, int, Plan]] = []
    for n in candidates:
        sd = math.sqrt(between + within / n)
        plan = plan_samples(sd, delta, confidence, power, 0.0, None, threshold=threshold,
                            mean=mean, goal=goal)  # fmt: skip
        boots = max(2, plan.n)  # the boot as the unit needs two a variant
        found.append((cost(boots, n, reboot.seconds, iteration.seconds), n, plan))
    _, per_boot, plan = min(found, key=lambda f: f[0])
    return BootPlan(between, within, reboot, iteration, optimal, per_boot, max(2, plan.n), plan,
                    capped)  # fmt: skip
