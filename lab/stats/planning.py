"""How many samples per variant the verdict needs, and how long collecting them takes.

``lab compare`` says "faster" only when the whole two-sided interval of B's change (at
confidence 1−α) lies beyond the threshold +θ, "slower" beyond −θ, and "equivalent" when it
lies within ±θ (two one-sided tests). Telling an effect from 0 is not enough: with effect
1 %, threshold 1 % and sd 2 %, the n that tells 1 % from 0 gives P("faster") = 0. So the plan
asks for the verdict itself, with true difference Δ, common standard deviation σ, n samples
per variant, s² ~ σ²·χ²(ν)/ν with ν = 2n−2 and c = t(1−α/2, ν):

- **superiority** ("faster" or "slower", |Δ| > θ): the lower bound beats θ,
  P = P(T > c) for T ~ noncentral t(ν, (|Δ|−θ)/(σ·√(2/n))), a one-sided test against the
  shifted null Δ = θ at α/2;
- **equivalence** ("equivalent", |Δ| < θ): both bounds inside ±θ, the TOST power
  P = E_s[Φ((θ − h − Δ)/σ_d) − Φ((h − θ − Δ)/σ_d)]⁺ with h = c·s·√(2/n) and σ_d = σ·√(2/n),
  integrated over s (the exact power, as Owen's Q gives it).

The plan is the smallest n whose probability reaches the asked power, searched for from the
normal approximation n ≈ 2·(z(1−α/2) + z(1−β))²·σ²/(|Δ|−θ)² (for equivalence with Δ = 0,
z(1−β/2) and θ). An effect at or within θ can never be "faster" (P stays at most α/2 however
many samples), and one at or beyond θ never "equivalent"; the plan refuses those. The verdict
reads the ratio of means on the log scale; for changes of a few percent that is the
difference over A's mean.

That pooled t model only starts the search. ``lab compare`` uses Welch's degrees of freedom,
each arm's variance relative to its own mean, and for an autocorrelated arm batch means with
few degrees of freedom: the model promised P = 0.91 at r = 0.5 and n = 174 where compare
delivers about 0.3, and 0.95 at n = 8 where it delivers 0.9 (issue 32). So the plan is the
smallest n at which compare's own rule, applied to simulated studies
(``lab.stats.rulepower``), reaches the power, first without autocorrelation
(``n_independent``), then with the lag-1 r given (``n``); the power curve is the rule's too.
tests/unit/test_plan_rule.py checks both against simulations of whole samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np
from scipy import integrate, stats

from lab.core.errors import UsageError
from lab.stats.descriptive import check_confidence, margin_of_error
from lab.stats.monotone import smallest_holding
from lab.stats.rulepower import Scenario, verdict_shares
from lab.stats.series import Direction
from lab.stats.verdict import Threshold

FORMULA = (
    "θ = threshold × mean; the smallest n whose P(verdict) reaches the power when lab compare's"
    " own rule (Welch's degrees of freedom, the ratio of means on the log scale, batch means"
    " with k − 1 degrees of freedom for an autocorrelated arm) judges 16,000 simulated studies"
    " of n samples a side with true difference Δ, sd σ and lag-1 autocorrelation r; the pooled"
    " t model nct.sf(c, 2n−2, (|Δ|−θ)/(σ·√(2/n))) only starts the search"
)

CURVE = (0.25, 0.5, 1.0, 2.0)  # the power curve: P(verdict) at these multiples of the planned n
MAX_N = 10**9  # beyond this the plan is no plan
QUADRATURE_NODES = 128


class Goal(StrEnum):
    SUPERIORITY = "superiority"  # the verdict "faster" (or "slower")
    EQUIVALENCE = "equivalence"  # the verdict "equivalent"


@dataclass(frozen=True)
class Plan:
    sd: float
    delta: float  # the true difference assumed, B better by this much (absolute)
    threshold: float  # the verdict's threshold, a fraction of the mean
    bound: float  # θ = threshold × |mean|, absolute
    goal: Goal
    derived: bool  # the goal came from |Δ| against θ, not from --goal
    confidence: float
    power: float
    autocorrelation: float
    n_normal: float  # the normal-approximation n, unrounded
    n_independent: int  # independent samples per variant (compare's rule, simulated)
    inflation: float  # n / n_independent: what lag-1 r costs under compare's batch means
    n: int  # samples per variant to collect
    curve: tuple[tuple[int, float], ...]  # (samples per variant, P(verdict)) around n
    n_from_zero: int | None  # samples per variant to tell Δ from 0 only, for context
    margin: float  # the study's margin of error with n samples (independent)
    iteration_time: float | None  # seconds per iteration, if given

    @property
    def verdict(self) -> str:
        """The verdict the plan is for, as ``lab compare`` words it."""
        if self.goal == Goal.EQUIVALENCE:
            return "equivalent"
        return "faster" if self.delta > 0 else "slower"

    @property
    def duration_concurrent(self) -> float | None:
        """Seconds when both variants run at the same time, as the study ran them."""
        return None if self.iteration_time is None else self.n * self.iteration_time

    @property
    def duration_sequential(self) -> float | None:
        """Seconds when the variants take turns."""
        return None if self.iteration_time is None else 2 * self.n * self.iteration_time


def t_test_power(n: float, d: float, confidence: float) -> float:
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


def superiority_power(n: float, delta: float, bound: float, sd: float, confidence: float) -> float:
    """P(the two-sided interval of B − A lies wholly beyond +bound) with true difference
    |delta|, n per variant and common sd: "faster" (or, mirrored, "slower")."""
    if n < 2:
        return 0.0
    df = 2 * n - 2
    crit = float(stats.t.ppf(0.5 + confidence / 2, df))
    ncp = (abs(delta) - bound) / (sd * math.sqrt(2 / n))
    value = float(stats.nct.sf(crit, df, ncp))
    if math.isnan(value):  # scipy's noncentral t can fail far out; the normal limit holds there
        value = float(stats.norm.sf(crit - ncp))
    return value


def equivalence_power(n: float, delta: float, bound: float, sd: float, confidence: float) -> float:
    """P(the two-sided interval of B − A lies wholly within ±bound) with true difference
    delta, n per variant and common sd: "equivalent" (the exact TOST power)."""
    if n < 2 or bound <= 0:
        return 0.0
    df = 2 * n - 2
    crit = float(stats.t.ppf(0.5 + confidence / 2, df))
    spread = sd * math.sqrt(2 / n)  # sd of the estimated difference
    # the interval c·s·√(2/n) fits within ±θ only while s² < σ²·u/ν for u below this
    u_max = df * (bound / (crit * spread)) ** 2
    top = float(stats.chi2.cdf(u_max, df))
    if top <= 0:
        return 0.0

    def inside(p: np.ndarray) -> np.ndarray:  # P(both bounds within ±θ | s), s at chi² quantile p
        half = crit * spread * np.sqrt(stats.chi2.ppf(p, df) / df)
        high = stats.norm.cdf((bound - half - delta) / spread)
        low = stats.norm.cdf((half - bound - delta) / spread)
        return np.maximum(0.0, high - low)

    # over the chi² probability rather than s itself: a bounded, smooth integrand at any ν;
    # 128 Gauss–Legendre nodes agree with adaptive quadrature to 1e-6 and take 1 ms, not 100
    value = float(integrate.fixed_quad(inside, 0.0, top, n=QUADRATURE_NODES)[0])
    return min(1.0, max(0.0, value))


def verdict_power(
    goal: Goal, n: float, delta: float, bound: float, sd: float, confidence: float
) -> float:
    """P(the verdict the goal asks for) at n per variant."""
    power = superiority_power if goal == Goal.SUPERIORITY else equivalence_power
    return power(n, delta, bound, sd, confidence)


def _smallest_n(reaches: Callable[[int], bool], start: float) -> int:
    """The smallest n ≥ 2 at which ``reaches(n)`` holds (it must only ever turn true),
    galloping from ``start`` (the normal approximation, usually a few samples off)."""
    found = smallest_holding(reaches, start=math.ceil(start), floor=2, cap=MAX_N)
    if found is None:
        raise UsageError(
            f"the verdict needs more than {MAX_N:,} samples per variant",
            hint="Plan for a larger effect, a lower --confidence or --power",
        )
    return found


def _unreachable(
    goal: Goal | None,
    delta: float,
    mean: float | None,
    threshold: float,
    level: float,
    bound: float = math.nan,
) -> UsageError:
    """The UsageError for a verdict no n reaches: effect at or within θ for "faster", at or
    beyond it for "equivalent"."""
    t = f"{threshold * 100:g} %" if math.isfinite(threshold) else f"{bound:.4g}"
    size = f"an effect of {abs(delta):.4g}"
    if mean:
        size += f" ({abs(delta) / abs(mean) * 100:.3g} % of the mean {mean:.4g})"
    size += f" against the ±{t} threshold"
    tail = f"{(1 - level) / 2 * 100:.3g} %"
    faster = (
        f'"faster" needs the whole interval beyond +{t}, which a true effect at or'
        f" within it reaches with P ≤ α/2 = {tail} however many samples"
    )
    equivalent = (
        f'"equivalent" needs it within ±{t}, which a true effect at or beyond it'
        f" reaches with P ≤ α/2 = {tail}"
    )
    if goal == Goal.SUPERIORITY:
        why = faster
    elif goal == Goal.EQUIVALENCE:
        why = equivalent
    else:
        why = f"{faster}; {equivalent}"
    verdicts = {Goal.SUPERIORITY: '"faster"', Goal.EQUIVALENCE: '"equivalent"'}
    wanted = verdicts[goal] if goal else 'a verdict ("faster" or "equivalent")'
    return UsageError(
        f"{size} cannot reach {wanted}: {why}",
        hint="Plan for an effect beyond the threshold (a larger --effect or a smaller"
        " --threshold) for faster/slower, or one within it (--goal equivalence) for equivalent",
    )


def plan_samples(
    sd: float,
    delta: float,
    confidence: float = 0.9999,
    power: float = 0.9,
    autocorrelation: float = 0.0,
    iteration_time: float | None = None,
    *,
    threshold: float | Threshold = 0.0,
    mean: float | None = None,
    goal: Goal | None = None,
    direction: Direction = "lower",
) -> Plan:
    """The samples per variant ``lab compare``'s verdict needs, given ``sd`` and the true
    difference ``delta`` (absolute, positive = B better), at ``threshold`` (a fraction of
    ``mean``). Without ``goal``: "faster"/"slower" when |delta| exceeds the threshold,
    "equivalent" when it lies within it. Threshold 0 asks to tell delta from 0. A
    :class:`~lab.stats.verdict.Threshold` in units is the bound itself (``threshold`` is then
    that bound as a fraction of ``mean``, or NaN without one)."""
    level = check_confidence(confidence)
    if not 0 < power < 1:
        raise UsageError(f"power {power} must lie between 0 and 1", hint="e.g. --power 0.9")
    if sd <= 0 or not math.isfinite(sd) or not math.isfinite(delta):
        raise UsageError(
            f"cannot plan with sd {sd} and effect {delta}",
            hint="Give a positive --sd and a finite --effect (with --mean for a percentage)",
        )
    if not -1 < autocorrelation < 1:
        raise UsageError(
            f"autocorrelation {autocorrelation} must lie strictly between -1 and 1",
            hint="It is the lag-1 autocorrelation of a pilot run (lab compare shows it)",
        )
    if iteration_time is not None and not 0 < iteration_time < math.inf:
        raise UsageError(
            f"iteration time {iteration_time} must be a finite number of seconds above 0",
            hint="e.g. --iteration-time 30",
        )
    if isinstance(threshold, Threshold) and not threshold.relative:
        units = threshold.value
        fraction = units / abs(mean) if mean else math.nan
        return _computed(sd, delta, level, power, autocorrelation, iteration_time, fraction,
                         units, mean, goal, direction)  # fmt: skip
    if isinstance(threshold, Threshold):
        threshold = threshold.value
    if not 0 <= threshold < 1:
        raise UsageError(f"threshold {threshold * 100:g} % must lie in [0 %, 100 %)")
    if threshold > 0 and (mean is None or mean == 0 or not math.isfinite(mean)):
        raise UsageError(
            f"the ±{threshold * 100:g} % threshold is a percentage of the mean, which is not given",
            hint="Pass --mean M, or --threshold 0% to plan for telling B from A only",
        )
    bound = threshold * abs(mean) if mean is not None else 0.0
    return _computed(sd, delta, level, power, autocorrelation, iteration_time, threshold, bound,
                     mean, goal, direction)  # fmt: skip


def _computed(
    sd: float,
    delta: float,
    level: float,
    power: float,
    autocorrelation: float,
    iteration_time: float | None,
    threshold: float,
    bound: float,
    mean: float | None,
    goal: Goal | None,
    direction: Direction = "lower",
) -> Plan:
    """:func:`_plan`, whose arithmetic overflows on values near 1e308 (an effect, a
    threshold in units): that is a question it cannot answer, not a traceback."""
    try:
        return _plan(sd, delta, level, power, autocorrelation, iteration_time, threshold, bound,
                     mean, goal, direction)  # fmt: skip
    except (OverflowError, ValueError) as err:  # ValueError: int() or round() of inf or nan
        raise UsageError(
            f"cannot plan with sd {sd:g}, effect {delta:g} and threshold ±{bound:g}: {err}",
            hint="Give them in a unit where they are ordinary numbers (ms, not ns)",
        ) from None


def _plan(
    sd: float,
    delta: float,
    level: float,
    power: float,
    autocorrelation: float,
    iteration_time: float | None,
    threshold: float,
    bound: float,
    mean: float | None,
    goal: Goal | None,
    direction: Direction = "lower",
) -> Plan:
    """:func:`plan_samples` once the threshold is a bound ±``bound`` in the metric's unit."""
    at_bound = math.isclose(abs(delta), bound, rel_tol=1e-9, abs_tol=1e-12 * sd)
    derived = goal is None
    if goal is None and not at_bound:
        goal = Goal.SUPERIORITY if abs(delta) > bound else Goal.EQUIVALENCE
    if (
        goal is None
        or at_bound
        or (goal == Goal.SUPERIORITY and abs(delta) < bound)
        or (goal == Goal.EQUIVALENCE and abs(delta) > bound)
    ):
        raise _unreachable(goal, delta, mean, threshold, level, bound)
    z_alpha = stats.norm.ppf(0.5 + level / 2)
    if goal == Goal.SUPERIORITY:
        n_normal = 2 * (z_alpha + stats.norm.ppf(power)) ** 2 * sd**2 / (abs(delta) - bound) ** 2
    elif delta == 0:
        n_normal = 2 * (z_alpha + stats.norm.ppf(0.5 + power / 2)) ** 2 * sd**2 / bound**2
    else:
        n_normal = 2 * (z_alpha + stats.norm.ppf(power)) ** 2 * sd**2 / (bound - abs(delta)) ** 2
    # the pooled t model (verdict_power) is where the search starts; lab compare's own rule
    # on simulated studies (lab.stats.rulepower) is what it must reach
    pooled = _smallest_n(lambda k: verdict_power(goal, k, delta, bound, sd, level) >= power,
                         n_normal)  # fmt: skip
    wanted = "equivalent" if goal == Goal.EQUIVALENCE else "faster" if delta > 0 else "slower"
    relative = threshold if math.isfinite(threshold) and mean else None
    scenario = Scenario(mean if relative is not None else None, delta, sd, 0.0, bound, relative,
                        level, direction)  # fmt: skip

    def rule(k: int, r: float, whole: bool = True) -> float:
        return verdict_shares(k, replace(scenario, r=r), whole)[wanted]

    n = _smallest_n(lambda k: rule(k, 0.0) >= power, pooled)
    r = max(0.0, autocorrelation)  # negative correlation is not credited
    total = n
    if r > 0:  # first what the rule reads of each arm, then whole samples from there
        start = _smallest_n(lambda k: rule(k, r, whole=False) >= power, n * (1 + r) / (1 - r))
        total = _smallest_n(lambda k: rule(k, r) >= power, start)
    inflation = total / n
    curve = tuple((k, rule(k, r)) for k in sorted({max(2, round(total * f)) for f in CURVE}))
    n_from_zero = None
    if delta != 0 and goal == Goal.SUPERIORITY:
        d = abs(delta) / sd
        start = 2 * (z_alpha + stats.norm.ppf(power)) ** 2 / d**2
        n_from_zero = math.ceil(
            _smallest_n(lambda k: t_test_power(k, d, level) >= power, start) * inflation
        )
    return Plan(
        sd=sd,
        delta=delta,
        threshold=threshold,
        bound=bound,
        goal=goal,
        derived=derived,
        confidence=level,
        power=power,
        autocorrelation=autocorrelation,
        n_normal=float(n_normal),
        n_independent=n,
        inflation=inflation,
        n=total,
        curve=curve,
        n_from_zero=n_from_zero,
        margin=margin_of_error(sd, n, level),
        iteration_time=iteration_time,
    )
