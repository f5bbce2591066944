"""How many boots, and how many iterations in each, a verdict with the boot as its unit needs.

With the boot as the unit (``lab.stats.boots``), each arm gives one value per boot, its boot
mean, whose variance is σ²_between + σ²_within / n · f(n, r) for n iterations per boot that
follow each other as AR(1) with lag-1 r (f: ``lab.stats.withinboot``; 1 at r = 0).
Collecting b boots costs b·(c_boot + n·c_iter) seconds per variant (c_boot: a reboot,
c_iter: one iteration). Kalibera and Jones ("Rigorous benchmarking in reasonable time",
2013) show that the cost of reaching a given precision, the product of the two, is least at

    n* = √(c_boot / c_iter · σ²_within / σ²_between)

iterations per boot at r = 0, whatever the precision asked; with r > 0 n* is where
(σ²_between + σ²_within·f(n, r)/n)·(c_boot + n·c_iter) is least, found numerically. The
number of boots is then the number of boot means per variant ``lab.stats.planning`` finds for
the verdict (in the metric's direction), planned with the standard deviation of one boot
mean, √(σ²_between + σ²_within·f(n, r)/n). The whole numbers either side of n* are both
planned and the cheaper kept. Where the pilot finds no variance between boots, n* is
unbounded: the plan stops at ``max_per_boot`` and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from lab.core.errors import UsageError
from lab.stats.planning import Goal, Plan, plan_samples
from lab.stats.series import Direction
from lab.stats.verdict import Threshold
from lab.stats.withinboot import MAX_R, boot_mean_variance, inflation

DEFAULT_REBOOT_SECONDS = 60.0  # a reboot's cost when neither the pilot nor the user says
MAX_PER_BOOT = 100_000
FORMULA = (
    "n* = √(c_boot/c_iter · σ²_within/σ²_between) iterations per boot (Kalibera and Jones;"
    " with lag-1 r within boots, the n least in (σ²_between + σ²_within·f(n,r)/n)·(c_boot +"
    " n·c_iter)); boots per variant: lab plan's samples for the verdict, each sample a boot"
    " mean of sd √(σ²_between + σ²_within·f(n,r)/n), f(n,r) = 1 + 2Σ(1 − k/n)r^k the AR(1)"
    " variance inflation of a mean of n"
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
    autocorrelation: float = 0.0  # lag-1 r of the iterations within a boot
    direction: Direction = "lower"  # the metric's: which way B is better

    @property
    def boot_sd(self) -> float:
        """The standard deviation of one boot mean of ``per_boot`` iterations, planned with."""
        return math.sqrt(boot_mean_variance(self.between, self.within, self.per_boot,
                                            self.autocorrelation))  # fmt: skip

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


def optimal_per_boot(
    between: float, within: float, reboot: float, iteration: float, r: float = 0.0
) -> float:
    """Kalibera and Jones's n*: iterations per boot at the least cost for any precision,
    with lag-1 r within boots the least of (σ²_b + σ²_w·f(n, r)/n)·(c_boot + n·c_iter)."""
    if between <= 0:
        return math.inf
    independent = math.sqrt(reboot / iteration * within / between)
    if r == 0:
        return independent

    def log_cost(n: float) -> float:
        return math.log(boot_mean_variance(between, within, n, r)) + math.log(
            reboot + n * iteration
        )

    # the product need not be unimodal in n for every r: a grid, then Brent about its least
    grid = np.geomspace(1.0, max(10.0, 1e3 * independent * (1 + r) / (1 - r)), 4000)
    costs = np.log(between + within * inflation(grid, r) / grid) + np.log(reboot + grid * iteration)
    i = int(np.argmin(costs))
    low, high = grid[max(0, i - 1)], grid[min(grid.size - 1, i + 1)]
    if high <= low:
        return float(grid[i])
    found = optimize.minimize_scalar(log_cost, bounds=(low, high), method="bounded",
                                     options={"xatol": 1e-9})  # fmt: skip
    return float(found.x)


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
    autocorrelation: float = 0.0,
    direction: Direction = "lower",
) -> BootPlan:
    """The boots × iterations per boot of least cost for the verdict (as
    :func:`lab.stats.planning.plan_samples` plans it, ``delta`` positive when B is better in
    the metric's ``direction``), from the pilot's variance components: ``within`` is an
    iteration's variance about its boot's level, ``autocorrelation`` the lag-1 r of the
    iterations within a boot (``lab.stats.withinboot.boot_pilot`` reads both)."""
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
    if not 0 <= autocorrelation <= MAX_R:
        raise UsageError(
            f"the lag-1 autocorrelation within boots {autocorrelation:g} must lie in"
            f" [0, {MAX_R:g}]",
            hint="Negative correlation is not credited: plan it as 0",
        )
    r = autocorrelation
    optimal = optimal_per_boot(between, within, reboot.seconds, iteration.seconds, r)
    capped = optimal > max_per_boot
    # n* is infinite when the boots do not vary: floor() of it overflows, so cap it first
    low = max(1, math.floor(min(float(max_per_boot), optimal)))
    candidates = sorted({low, min(max_per_boot, low + 1)})
    found: list[tuple[float, int, Plan]] = []
    for n in candidates:
        sd = math.sqrt(boot_mean_variance(between, within, n, r))
        # boot means are independent of each other: r is in their sd, not between them
        plan = plan_samples(sd, delta, confidence, power, 0.0, None, threshold=threshold,
                            mean=mean, goal=goal, direction=direction)  # fmt: skip
        boots = max(2, plan.n)  # the boot as the unit needs two a variant
        found.append((cost(boots, n, reboot.seconds, iteration.seconds), n, plan))
    _, per_boot, plan = min(found, key=lambda f: f[0])
    return BootPlan(between, within, reboot, iteration, optimal, per_boot, max(2, plan.n), plan,
                    capped, r, direction)  # fmt: skip
