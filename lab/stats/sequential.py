"""Stopping a run early without losing the error rate: confidence sequences and planned looks.

A fixed-n interval is valid at one planned n. Looking at it after every iteration and
stopping as soon as it excludes zero ("stop at the first p < α") makes a false positive far
likelier than α, because the study gets many chances. A *confidence sequence* is a sequence
of intervals that all cover the true value at once, with probability at least 1 − α, so a
run may stop at any look, for any reason, and the interval it stops on is still valid.

The one here is Lai's t confidence sequence (T. L. Lai, "On confidence sequences", Annals of
Statistics 4, 1976; revisited by H. Wang and A. Ramdas, "Anytime-valid t-tests and confidence
sequences for Gaussian means with unknown variance", Sequential Analysis, 2025). For
observations with mean μ and an unknown variance it mixes the likelihood ratio of the
scale-invariant statistics over a normal prior on the standardised effect; that mixture is a
nonnegative martingale when μ is true, so Ville's inequality bounds the chance that it ever
reaches 1/α. Solved for μ, with mean x̄ₜ and sample sd sₜ of t observations:

    μ ∈ x̄ₜ ± sₜ·√(k(t−1) / (t(t−k))),  k = (t+a)·(1 − (α·√(a/(t+a)))^(2/t)),

and the whole line while t ≤ k. It is exact for normal data at every t ≥ 2 (no plug-in
variance, hence no excess error at small t); for large t it is the normal-mixture boundary of
Robbins (1970) and Howard et al. ("Time-uniform, nonparametric, nonasymptotic confidence
sequences", Annals of Statistics 49, 2021), which the asymptotic confidence sequences of
Waudby-Smith et al. (2021) extend to any distribution with a finite variance. The tuning
a = t*/(−2 log α + log(1 − 2 log α)) makes the interval tightest near t* (Howard et al.'s
choice of the mixture variance); here t* is half the maximum n unless the rule says.

The observations are the differences Dᵢ = Bᵢ − Aᵢ of the i-th samples of the two variants,
i.i.d. whether or not the runs were synchronised. The relative change uses the delta method
on the log ratio of means, as ``lab.stats.difference`` does at a fixed n: log(B̄/Ā) with the
sd of Bᵢ/B̄ − Aᵢ/Ā. The verdict (``lab.stats.verdict``) is then read from that wider interval.

Autocorrelated differences (lag-1 r of Dᵢ) make the sequence too narrow: with r = 0.5 it
stopped wrongly in 35 % of simulated studies at α = 0.05. So the sequence runs on the means
of batches of m consecutive pairs, recomputed at each look from the complete batches (the
last n − k·m pairs wait for their batch): m is the smallest with m³ ≥ n (2 up to 8 pairs, 6
at 200), and when the differences' lag-1 r is significantly positive at 5 %
(``lab.stats.batchmeans``) ⌈√n⌉ if that is more. Switching
from single pairs to batches only once r is significant is not enough: at n = 20 the test
sees r = 0.5 in a third of the studies, and by then the unbatched sequence has already
stopped wrongly in 4.7 % of them (10.7 % in all). With a high r the batches grow to the
bound 20·r/(1 − r²), in powers of 2 (``sequence_batch_size``). ``batch_size=1`` gives the plain
sequence. tests/unit/test_autocorrelation.py and tests/unit/test_stopping_swaps.py print
the rates, bench/stat_coverage.py the README's.

For a design with a few planned looks instead, ``obrien_fleming_boundaries`` gives the
two-sided z boundaries of the Lan–DeMets O'Brien–Fleming-type alpha spending function,
α/2 per side spent as 2 − 2Φ(z(1−α/4)/√t) at information fraction t (the convention of
DeMets & Lan, "Interim analysis: the alpha spending function approach", Statistics in
Medicine 13, 1994, and of R's gsDesign ``sfLDOF``), and ``classic_obrien_fleming`` those of
O'Brien and Fleming (Biometrics 35, 1979), c·√(K/k). Both come from the recursive numerical
integration of Armitage, McPherson and Rowe (JRSS A 132, 1969) over a grid.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import integrate, optimize, stats

from lab.core.errors import UsageError
from lab.stats.batchmeans import autocorrelated, batch_means
from lab.stats.descriptive import check_confidence
from lab.stats.diagnostics import lag1_autocorrelation
from lab.stats.series import Direction
from lab.stats.verdict import Outcome, Threshold, Verdict, decide, parse_percent

METHOD = "Lai's t confidence sequence"
SEQUENCE_ALPHA = 0.05  # the lag-1 test on the differences at each look
SEQUENCE_BOUND = 20.0  # batches of at least 20·r/(1 − r²), up to a power of 2
UNTIL_FORMS = "--until verdict, or --until 'ci-halfwidth<0.5%' (or an absolute '<0.2' in units)"
_HALFWIDTH = re.compile(r"^\s*ci-halfwidth\s*<\s*([0-9]*\.?[0-9]+)\s*(%?)\s*$")


def tuning(confidence: float, tuned_for: int) -> float:
    """The mixture's prior precision a, which makes the sequence tightest near ``tuned_for``."""
    alpha = 1.0 - check_confidence(confidence)
    two_log = -2.0 * math.log(alpha)
    return max(1, tuned_for) / (two_log + math.log1p(two_log))


def radius(t: np.ndarray | int, confidence: float, tuned_for: int) -> np.ndarray:
    """The half-width per unit of sample sd after t observations (inf while t is too small)."""
    level = check_confidence(confidence)
    alpha = 1.0 - level
    a = tuning(level, tuned_for)
    n = np.asarray(t, dtype=np.float64)
    with np.errstate(all="ignore"):
        k = (n + a) * -np.expm1((2.0 / n) * (math.log(alpha) + 0.5 * np.log(a / (n + a))))
        r = np.sqrt(k * (n - 1) / (n * (n - k)))
    return np.where((n >= 2) & (n > k), r, np.inf)


@dataclass(frozen=True)
class SequentialInterval:
    """B − A after n pairs, as a confidence sequence: valid at this n whenever one looks."""

    n: int
    confidence: float
    tuned_for: int
    diff: float
    diff_ci: tuple[float, float]
    percent: float
    percent_ci: tuple[float, float]
    batch_size: int = 1  # consecutive pairs a batch; the sequence runs on the batch means
    batches: int = 0  # complete batches at this look: batch_size·batches pairs are used

    @property
    def halfwidth(self) -> float:
        return (self.diff_ci[1] - self.diff_ci[0]) / 2

    @property
    def percent_halfwidth(self) -> float:
        """Half the width of the relative interval, in percent of A's mean."""
        return (self.percent_ci[1] - self.percent_ci[0]) / 2

    @property
    def method(self) -> str:
        on = f" on means of batches of {self.batch_size} pairs" if self.batch_size > 1 else ""
        return f"{METHOD}{on} at {self.confidence * 100:g} %, tuned for n={self.tuned_for}"


def sequence_batch_size(d: np.ndarray) -> int:
    """Pairs a batch after these differences: the smallest m with m³ ≥ n; when their lag-1
    r is significantly positive, at least ⌈√n⌉ and 20·r/(1 − r²) rounded up to a power of 2.

    ⌈√n⌉ alone left batches of 15 at r = 0.9 and 200 pairs, whose means still correlate: 16 %
    wrong stops at α = 5 %. The fixed-n bound 40·r/(1 − r²) of ``lab.stats.batchmeans`` as it
    is moves with r̂ from look to look, and each new cut of the pairs is one more chance to
    stop: 6.3 % at r = 0.5. Rounded to a power of 2 the size changes seldom, and half that
    bound suffices: below 5 % for r 0 to 0.9, swaps or not (tests/unit/test_stopping_swaps.py).
    Where it leaves fewer than 2 batches the run does not stop early, rightly: 200 pairs at
    r = 0.9 hold the information of about 10."""
    n = int(d.size)
    m = max(1, round(n ** (1 / 3)))
    m += m**3 < n
    if autocorrelated(d, SEQUENCE_ALPHA):
        r = min(max(lag1_autocorrelation(d), 0.0), 0.99)
        wanted = max(1.0, SEQUENCE_BOUND * r / (1 - r**2))
        m = max(m, math.isqrt(n - 1) + 1, 2 ** math.ceil(math.log2(wanted)))  # ⌈√n⌉
    return m


def confidence_sequence(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    confidence: float,
    tuned_for: int,
    *,
    batch_size: int | None = None,
) -> SequentialInterval:
    """The sequence's interval for B − A after the first min(len a, len b) pairs, on the
    means of batches of ``batch_size`` pairs (None: ``sequence_batch_size``)."""
    n = min(len(a), len(b))
    x = np.asarray(a, dtype=np.float64)[:n]
    y = np.asarray(b, dtype=np.float64)[:n]
    level = check_confidence(confidence)
    nan2 = (math.nan, math.nan)
    if n < 2:
        return SequentialInterval(n, level, tuned_for, math.nan, nan2, math.nan, nan2)
    m = sequence_batch_size(y - x) if batch_size is None else max(1, batch_size)
    k = n // m
    if k < 2:  # one batch says nothing about the spread yet
        diff, mean_a, mean_b = float(np.mean(y - x)), float(x.mean()), float(y.mean())
        percent = (mean_b / mean_a - 1) * 100 if mean_a > 0 and mean_b > 0 else math.nan
        return SequentialInterval(n, level, tuned_for, diff, (-math.inf, math.inf), percent,
                                  (-100.0, math.inf), m, k)  # fmt: skip
    x, y = batch_means(x, m), batch_means(y, m)
    d = y - x
    sd = float(d.std(ddof=1))
    # identical differences (quantised values, tiny n) say nothing about the spread yet
    r = float(radius(k, level, max(1, tuned_for // m))) if sd > 0 else math.inf
    diff = float(d.mean())
    half = r * sd if sd > 0 else math.inf
    mean_a, mean_b = float(x.mean()), float(y.mean())
    percent, percent_ci = math.nan, nan2
    if mean_a > 0 and mean_b > 0:
        log_ratio = math.log(mean_b / mean_a)
        log_half = r * float(np.std(y / mean_b - x / mean_a, ddof=1))
        percent = math.expm1(log_ratio) * 100
        percent_ci = (
            math.expm1(log_ratio - log_half) * 100,
            math.expm1(log_ratio + log_half) * 100,
        )
    return SequentialInterval(
        n, level, tuned_for, diff, (diff - half, diff + half), percent, percent_ci, m, k
    )


@dataclass(frozen=True)
class StopRule:
    """When a run may stop: a narrow enough interval, or a verdict; never beyond ``max_n``."""

    kind: Literal["ci-halfwidth", "verdict"]
    max_n: int
    limit: float | None = None  # the half-width to reach: a fraction of A's mean if relative
    relative: bool = True
    tuned_for: int = 0  # 0: half of max_n

    @property
    def tuning_n(self) -> int:
        return self.tuned_for or max(2, self.max_n // 2)

    def describe(self) -> str:
        if self.kind == "verdict":
            return f"until a verdict, at most {self.max_n} iterations"
        assert self.limit is not None
        limit = f"{self.limit * 100:g} %" if self.relative else f"{self.limit:g}"
        return f"until the interval's half-width is below {limit}, at most {self.max_n} iterations"


def parse_until(text: str, max_n: int, tuned_for: int = 0) -> StopRule:
    """``--until``: 'verdict' or 'ci-halfwidth<X%' (X in metric units without the %)."""
    if max_n < 2:
        raise UsageError(
            f"--until needs a maximum of at least 2 iterations, not {max_n}",
            hint="Give the most iterations the run may take with --n",
        )
    if text.strip() == "verdict":
        return StopRule("verdict", max_n, tuned_for=tuned_for)
    match = _HALFWIDTH.match(text)
    if not match:
        raise UsageError(f"cannot read the stopping rule {text!r}", hint=f"Write {UNTIL_FORMS}")
    number, percent = match.groups()
    if percent:
        limit, relative = parse_percent(number + "%", "ci-halfwidth"), True
    else:
        limit, relative = float(number), False
    if limit <= 0:
        raise UsageError(f"the half-width in {text!r} must be above 0", hint=f"Write {UNTIL_FORMS}")
    return StopRule("ci-halfwidth", max_n, limit, relative, tuned_for)


@dataclass(frozen=True)
class Decision:
    """Whether the run stops after these samples, why, and how that was decided."""

    stop: bool
    reason: str
    method: str  # for the output: "stopped by an anytime-valid confidence sequence (...)"
    interval: SequentialInterval
    verdict: Verdict


def halfwidth(rule: StopRule, seq: SequentialInterval) -> tuple[float, str, str]:
    """The half-width the rule reads, as a number, as text and the limit as text."""
    if rule.relative:
        width = seq.percent_halfwidth / 100
        return width, f"{width * 100:.3g} % of A's mean", f"{(rule.limit or 0) * 100:g} %"
    return seq.halfwidth, f"{seq.halfwidth:.4g}", f"{rule.limit:g}"


def check_stop(
    rule: StopRule,
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    confidence: float,
    threshold: float | Threshold,
    direction: Direction = "lower",
    labels: tuple[str, str] = ("A", "B"),
    unit: str = "pairs",
    batch_size: int | None = None,
) -> Decision:
    """Continue or stop, given every sample of A and of B so far (in iteration order), or
    one observation per balanced block of them (``unit``, ``lab.stats.stopping.rule_view``).

    ``threshold`` is the verdict's practical threshold as a fraction (0.01 for 1 %) or a
    :class:`~lab.stats.verdict.Threshold` (in the metric's unit: the verdict reads B − A).
    ``batch_size`` as for :func:`confidence_sequence`: 1 for observations that are already
    independent means of blocks.
    """
    seq = confidence_sequence(a, b, confidence, rule.tuning_n, batch_size=batch_size)
    verdict = decide(
        seq.percent_ci,
        direction,
        threshold,
        labels[0],
        labels[1],
        seq.confidence,
        seq.diff_ci,
        float(np.mean(np.asarray(a, dtype=np.float64)[: seq.n])),
    )
    method = f"an anytime-valid confidence sequence ({seq.method})"
    at = f"after {seq.n} {unit}"
    if seq.n < 2:
        return Decision(False, f"{at}: too few for an interval", method, seq, verdict)
    if rule.kind == "verdict":
        progress = f"{at}: {verdict.text}"
        met = verdict.outcome != Outcome.INCONCLUSIVE
    else:
        width, shown, limit = halfwidth(rule, seq)
        met = rule.limit is not None and width < rule.limit  # False while the width is inf
        progress = (
            f"{at}: the interval's half-width {shown} {'is below' if met else 'is not below'}"
        )
        progress += f" {limit}"
    if met:
        return Decision(True, progress, "stopped by " + method, seq, verdict)
    if seq.n >= rule.max_n:
        # the verdict once (a verdict rule's progress is it), the maximum in the rule's unit
        said = "" if rule.kind == "verdict" else f": {verdict.text}"
        reason = (
            f"{progress}; the most {unit} the run can give, {rule.max_n}, are"
            f" reached{said}. Run more iterations (a higher --n) to narrow it further"
        )
        return Decision(True, reason, "stopped at the maximum n; the interval is from " + method,
                        seq, verdict)  # fmt: skip
    return Decision(False, progress, method, seq, verdict)


_GRID = 501  # points of the continuation region per look: boundaries to 1e-5


def _looks(looks: int | Sequence[float]) -> np.ndarray:
    fractions = np.arange(1, looks + 1) / looks if isinstance(looks, int) else np.asarray(looks)
    if fractions.size < 1 or np.any(np.diff(fractions) <= 0) or not 0 < fractions[-1] <= 1:
        raise UsageError("the looks must be increasing information fractions in (0, 1]",
                         hint="e.g. 5 equally spaced looks, or 0.25,0.5,0.75,1")  # fmt: skip
    return fractions.astype(np.float64)


def _crossing(z: float, t: float, step: float, grid: np.ndarray, density: np.ndarray) -> float:
    """P(no crossing before this look and |Z| ≥ z at it, information t) with no difference.

    ``density`` is that of the score S = Z·√t on ``grid`` at the previous look, among the
    paths that have not crossed; ``step`` the sd of S's increment since then.
    """
    if not grid.size:
        return float(2 * stats.norm.sf(z))
    b = z * math.sqrt(t)
    out = stats.norm.cdf((-b - grid) / step) + stats.norm.sf((b - grid) / step)
    return float(integrate.trapezoid(density * out, grid))


Choose = Callable[[int, Callable[[float], float]], float]


def _boundaries(fractions: np.ndarray, choose: Choose) -> np.ndarray:
    """z boundaries look by look; ``choose(k, crossing)`` picks look k's from crossing(z)."""
    grid = density = np.empty(0)
    previous = 0.0
    bounds = []
    for k, t in enumerate(fractions):
        step = math.sqrt(t - previous)
        z = choose(k, functools.partial(_crossing, t=t, step=step, grid=grid, density=density))
        bounds.append(z)
        new_grid = np.linspace(-z * math.sqrt(t), z * math.sqrt(t), _GRID)
        if grid.size:
            kernel = stats.norm.pdf((new_grid[:, None] - grid[None, :]) / step) / step
            density = integrate.trapezoid(kernel * density[None, :], grid, axis=1)
        else:
            density = stats.norm.pdf(new_grid, 0, step)
        grid, previous = new_grid, t
    return np.array(bounds)


def obrien_fleming_boundaries(looks: int | Sequence[float], confidence: float) -> np.ndarray:
    """Lan–DeMets O'Brien–Fleming-type two-sided z boundaries at the planned looks."""
    alpha = 1.0 - check_confidence(confidence)
    fractions = _looks(looks)
    z_quarter = float(stats.norm.isf(alpha / 4))

    def spent(t: float) -> float:  # both sides
        return float(4 * stats.norm.sf(z_quarter / math.sqrt(t)))

    def choose(k: int, crossing: Callable[[float], float]) -> float:
        target = spent(fractions[k]) - (spent(fractions[k - 1]) if k else 0.0)
        return float(optimize.brentq(lambda z: crossing(z) - target, 0.01, 40, xtol=1e-10))

    return _boundaries(fractions, choose)


def crossing_probability(bounds: Sequence[float], looks: int | Sequence[float]) -> float:
    """P(|Z_k| ≥ bounds[k] at some look) when there is no difference."""
    given = [float(b) for b in bounds]
    parts: list[float] = []

    def choose(k: int, crossing: Callable[[float], float]) -> float:
        parts.append(crossing(given[k]))
        return given[k]

    _boundaries(_looks(looks), choose)
    return math.fsum(parts)


def classic_obrien_fleming(looks: int, confidence: float) -> np.ndarray:
    """O'Brien and Fleming's c·√(K/k), with c such that the boundaries spend exactly α."""
    alpha = 1.0 - check_confidence(confidence)
    shape = np.sqrt(looks / np.arange(1, looks + 1))
    c = optimize.brentq(
        lambda c: crossing_probability(c * shape, looks) - alpha, 0.5, 10, xtol=1e-8
    )
    return float(c) * shape
