"""How many samples per variant a question needs, and how long collecting them takes.

For a two-sided test of a difference Δ between two means with common standard deviation σ at
confidence 1−α and power 1−β, the normal approximation is

    n = 2·(z(1−α/2) + z(1−β))²·σ²/Δ²

per variant; the plan then takes the smallest n at which the exact power of Welch's/Student's
test (noncentral t with 2n−2 degrees of freedom) reaches 1−β, which adds a sample or two for
small n (Cohen's tables: d = 0.5 at α = 0.05 and power 0.8 needs 64). Samples whose successive
values correlate with lag-1 autocorrelation r carry less information: an AR(1) series of n
samples is worth n·(1−r)/(1+r) independent ones, so n is multiplied by (1+r)/(1−r).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats

from lab.core.errors import UsageError
from lab.stats.descriptive import check_confidence, margin_of_error

FORMULA = (
    "n = 2·(z(1−α/2) + z(1−β))²·σ²/Δ² per variant, raised to the smallest n whose exact"
    " noncentral-t power reaches 1−β, then multiplied by (1+r)/(1−r) for lag-1"
    " autocorrelation r"
)


@dataclass(frozen=True)
class Plan:
    sd: float
    delta: float  # the absolute difference to detect
    confidence: float
    power: float
    autocorrelation: float
    n_normal: float  # the normal-approximation n, unrounded
    n_independent: int  # independent samples per variant (exact t power)
    inflation: float  # (1+r)/(1−r), at least 1
    n: int  # samples per variant to collect
    margin: float  # the study's margin of error with n samples (independent)
    iteration_time: float | None  # seconds per iteration, if given

    @property
    def duration_concurrent(self) -> float | None:
        """Seconds when both variants run at the same time, as the study ran them."""
        return None if self.iteration_time is None else self.n * self.iteration_time

    @property
    def duration_sequential(self) -> float | None:
        """Seconds when the variants take turns."""
        return None if self.iteration_time is None else 2 * self.n * self.iteration_time


def t_test_power(n: int, d: float, confidence: float) -> float:
    """Exact power of the two-sided two-sample t test with n per group at effect size d."""
    if n < 2:
        return 0.0
    df = 2 * n - 2
    crit = stats.t.ppf(0.5 + confidence / 2, df)
    ncp = d * math.sqrt(n / 2)
    upper = float(stats.nct.sf(crit, df, ncp))
    if math.isnan(upper):  # scipy's noncentral t can fail far out; the normal limit holds there
        upper = float(stats.norm.sf(crit - ncp))
    # The wrong-side tail is below α/2 and scipy returns NaN for it when it is tiny: count 0.
    lower = float(stats.nct.cdf(-crit, df, ncp))
    return upper + (0.0 if math.isnan(lower) else lower)


def plan_samples(
    sd: float,
    delta: float,
    confidence: float = 0.9999,
    power: float = 0.9,
    autocorrelation: float = 0.0,
    iteration_time: float | None = None,
) -> Plan:
    """The samples per variant needed to detect ``delta`` (absolute) given ``sd``."""
    level = check_confidence(confidence)
    if not 0 < power < 1:
        raise UsageError(f"power {power} must lie between 0 and 1", hint="e.g. --power 0.9")
    if sd <= 0 or delta == 0 or not math.isfinite(sd) or not math.isfinite(delta):
        raise UsageError(
            f"cannot plan with sd {sd} and effect {delta}",
            hint="Give a positive --sd and a non-zero --effect (with --mean for a percentage)",
        )
    if not -1 < autocorrelation < 1:
        raise UsageError(
            f"autocorrelation {autocorrelation} must lie strictly between -1 and 1",
            hint="It is the lag-1 autocorrelation of a pilot run (lab compare shows it)",
        )
    d = abs(delta) / sd
    z_sum = stats.norm.ppf(0.5 + level / 2) + stats.norm.ppf(power)
    n_normal = 2 * z_sum**2 / d**2
    n = max(2, math.ceil(n_normal))
    while n > 2 and t_test_power(n - 1, d, level) >= power:
        n -= 1
    while t_test_power(n, d, level) < power:
        n += 1
    inflation = max(1.0, (1 + autocorrelation) / (1 - autocorrelation))
    total = math.ceil(n * inflation)
    return Plan(
        sd=sd,
        delta=abs(delta),
        confidence=level,
        power=power,
        autocorrelation=autocorrelation,
        n_normal=float(n_normal),
        n_independent=n,
        inflation=inflation,
        n=total,
        margin=margin_of_error(sd, n, level),
        iteration_time=iteration_time,
    )
