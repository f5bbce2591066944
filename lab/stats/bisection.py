"""Bisecting a performance regression with a bounded chance of naming the wrong commit.

``lab bisect --repo DIR --good REV --bad REV -- ARGV`` times ARGV at a candidate commit against
GOOD as a twin study (in sync, swapped between twins), so each measurement is a pair
(candidate's sample, GOOD's sample) and the step reads the log ratios dᵢ = log(cᵢ/gᵢ). This
module is the pure logic: the verdict of one step and the driver over the commits; the
measuring and storing are :mod:`lab.app.bisect`'s (``measure`` and ``on_step`` are handed in).

**The gap.** The first step measures BAD against GOOD until Lai's confidence sequence on the
mean log ratio (``lab.stats.sequential``) lies wholly on one side of half its own estimate:
then the estimate ĝ is at least twice the interval's half-width away from 0, and whenever the
sequence covers the true gap g, ĝ < 2g, which the candidates' verdicts need (below).

**A step's verdict** reads the sequence on the candidate's log ratios against half the gap,
h = ĝ/2: *bad* when the whole interval is beyond h on BAD's side (slower than GOOD by at least
half the GOOD–BAD gap), *good* when it is wholly on GOOD's side (within half the gap), and
*unknown* while it straddles h: the step then takes ``batch`` more pairs, up to ``cap``, and a
commit still unknown there is skipped (git bisect's exit 125). The sequence is anytime-valid,
so looking after every batch costs nothing: a commit as fast as GOOD is called bad only if the
sequence misses 0, and one as slow as BAD is called good only if it misses g (or the gap
step's missed), each with probability at most the step's α.

**The error budget.** With N commits the search needs K = ⌈log2(N − 1)⌉ probes; the gap step
and each of those K steps get α/(K + 2), and probes beyond K (after skips) get
α/(K + 2)·6/(π²j²) for the j-th extra one (Σ 1/j² = π²/6), so all steps together spend at
most α. By the union bound the
bisection names a wrong commit with probability at most α when every commit is as fast as
GOOD or as slow as BAD; bench/bisect_sim.py measures it (1,024 commits, a 3 % step, CV 2 %).

**Resuming.** Every step is a :class:`Step` (JSON via ``to_dict``/``from_dict``) with every
pair it measured. ``on_step`` receives it after each batch, so a store that keeps the latest
record per (index, commit) holds all pairs measured. A driver handed those steps replays them
in order, takes their pairs before measuring, and asks ``measure`` only for pairs no step
holds: the looks fall at the same counts, so the replay reaches the same verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from lab.core.errors import UsageError
from lab.stats.batchmeans import batch_means
from lab.stats.sequential import radius, sequence_batch_size

Outcome = Literal["bad", "good", "unknown"]
Role = Literal["gap", "probe"]
Pairs = Sequence[tuple[float, float]]
Measure = Callable[[str, int], Pairs]  # (commit, n) -> n new pairs (commit's, GOOD's sample)


class BisectError(UsageError):
    """A bisection that cannot go on: GOOD and BAD do not differ, or a measurement is unusable."""


@dataclass(frozen=True)
class StepVerdict:
    """One look at a candidate: the anytime-valid interval of its mean log ratio; the verdict."""

    outcome: Outcome
    n: int  # pairs read
    log_ratio: float  # mean of log(candidate/GOOD) (of the batch means)
    interval: tuple[float, float]  # anytime-valid at 1 − alpha, on the log scale
    threshold: float  # half the gap, log scale
    alpha: float
    batch_size: int = 1

    @property
    def percent(self) -> float:
        return math.expm1(self.log_ratio) * 100

    @property
    def percent_interval(self) -> tuple[float, float]:
        return (math.expm1(self.interval[0]) * 100, math.expm1(self.interval[1]) * 100)


def log_ratios(pairs: Pairs) -> np.ndarray:
    """log(cᵢ/gᵢ) of the pairs; a sample that is not a positive number is refused."""
    data = np.asarray(pairs, dtype=np.float64).reshape(-1, 2)
    if data.size and not (np.all(np.isfinite(data)) and np.all(data > 0)):
        raise BisectError(
            "a bisect measurement holds a sample that is not a positive number",
            hint="Time something that takes a positive time, or check the measured command",
        )
    return np.log(data[:, 0]) - np.log(data[:, 1])


def sequence_interval(
    d: np.ndarray, alpha: float, tuned_for: int, batch_size: int | None = None
) -> tuple[float, tuple[float, float], int]:
    """Mean and Lai's anytime-valid interval of the log ratios ``d`` at 1 − ``alpha``, on the
    means of batches (``None``: ``lab.stats.sequential.sequence_batch_size``, which batches
    more when the pairs are autocorrelated); the whole line while too few to say."""
    n = int(d.size)
    if n < 2:
        return (float(d.mean()) if n else math.nan), (-math.inf, math.inf), 1
    m = sequence_batch_size(d) if batch_size is None else max(1, batch_size)
    k = n // m
    if k < 2:
        return float(d.mean()), (-math.inf, math.inf), m
    means = batch_means(d, m)
    mean = float(means.mean())
    sd = float(means.std(ddof=1))
    if not sd > 0:
        return mean, (-math.inf, math.inf), m
    half = float(radius(k, 1.0 - alpha, max(1, tuned_for // m))) * sd
    return mean, (mean - half, mean + half), m


def step_verdict(
    pairs: Pairs,
    gap: float,
    alpha: float,
    tuned_for: int,
    batch_size: int | None = None,
) -> StepVerdict:
    """bad, good or unknown for a candidate's (candidate, GOOD) pairs, given the GOOD–BAD gap
    as a log ratio (positive: BAD is the larger, e.g. slower), at error ``alpha``."""
    if not gap or not math.isfinite(gap):
        raise BisectError(f"the GOOD–BAD gap must be a nonzero log ratio, not {gap}")
    d = log_ratios(pairs)
    mean, (low, high), m = sequence_interval(d, alpha, tuned_for, batch_size)
    h = gap / 2
    sign = 1.0 if gap > 0 else -1.0
    near, far = sorted((low * sign, high * sign))  # oriented so that BAD's side is up
    outcome: Outcome = "unknown"
    if near > h * sign:
        outcome = "bad"
    elif far < h * sign:
        outcome = "good"
    return StepVerdict(outcome, int(d.size), mean, (low, high), h, alpha, m)


def gap_established(pairs: Pairs, alpha: float, tuned_for: int, batch_size: int | None) -> bool:
    """Whether BAD's pairs against GOOD settle the gap: the interval is wholly on one side of
    half the estimate (so the estimate is at least twice its half-width from 0)."""
    d = log_ratios(pairs)
    mean, (low, high), _ = sequence_interval(d, alpha, tuned_for, batch_size)
    return bool(mean and (low > mean / 2 if mean > 0 else high < mean / 2))


@dataclass(frozen=True)
class BisectSettings:
    """The error bound and the sampling of each step."""

    alpha: float = 0.05  # the chance of naming a wrong commit, all steps together
    first: int = 10  # pairs at a step's first look
    batch: int = 10  # pairs added per further look
    cap: int = 300  # pairs at most per step; then the commit is skipped (the gap: an error)
    batch_size: int | None = None  # pairs per batch mean; None: grows with n and autocorrelation

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise BisectError(f"alpha must be between 0 and 1, not {self.alpha}")
        if self.first < 2 or self.batch < 1 or self.cap < self.first:
            raise BisectError(
                f"cannot sample first={self.first}, batch={self.batch}, cap={self.cap}",
                hint="Take at least 2 pairs first, 1 more per look, and a cap above the first",
            )

    @property
    def tuned_for(self) -> int:
        return max(2, self.cap // 2)


def step_alphas(commits: int, alpha: float) -> Callable[[int], float]:
    """α of the i-th step (0: the gap step), summing to at most ``alpha`` over any number."""
    planned = max(1, math.ceil(math.log2(max(2, commits - 1))))
    share = alpha / (planned + 2)

    def of(i: int) -> float:
        return share if i <= planned else share * 6 / (math.pi * (i - planned)) ** 2

    return of


@dataclass(frozen=True)
class Step:
    """One step as stored: the commit, every pair measured, the α it spent, and its outcome
    (``unknown`` while ``complete`` is False, and for a commit skipped at the cap)."""

    index: int  # 0: the gap step on BAD; then the probes in order
    commit: str
    role: Role
    alpha: float
    pairs: tuple[tuple[float, float], ...]
    outcome: Outcome = "unknown"
    complete: bool = False
    log_ratio: float = math.nan
    interval: tuple[float, float] = (-math.inf, math.inf)

    @property
    def n(self) -> int:
        return len(self.pairs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "commit": self.commit,
            "role": self.role,
            "alpha": self.alpha,
            "pairs": [list(p) for p in self.pairs],
            "outcome": self.outcome,
            "complete": self.complete,
            "log_ratio": _finite_or_none(self.log_ratio),
            "interval": [_finite_or_none(x) for x in self.interval],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        low, high = data.get("interval") or (None, None)
        ratio = data.get("log_ratio")
        return cls(
            index=int(data["index"]),
            commit=str(data["commit"]),
            role=data["role"],
            alpha=float(data["alpha"]),
            pairs=tuple((float(c), float(g)) for c, g in data["pairs"]),
            outcome=data["outcome"],
            complete=bool(data["complete"]),
            log_ratio=math.nan if ratio is None else float(ratio),
            interval=(-math.inf if low is None else low, math.inf if high is None else high),
        )


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True)
class BisectResult:
    """The first bad commit (None when skipped commits leave it open among ``candidates``)."""

    first_bad: str | None
    candidates: tuple[str, ...]  # the commits it may be: (first_bad,) when found
    gap: float  # BAD against GOOD, log ratio
    steps: tuple[Step, ...] = field(default=())

    @property
    def pairs(self) -> int:
        return sum(s.n for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "first_bad": self.first_bad,
            "candidates": list(self.candidates),
            "gap_percent": math.expm1(self.gap) * 100,
            "pairs": self.pairs,
            "steps": [s.to_dict() for s in self.steps],
        }


class _Replay:
    """The stored steps, handed out in order while they match the steps the driver takes."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self._steps = {s.index: s for s in steps}

    def take(self, index: int, commit: str) -> tuple[tuple[float, float], ...]:
        stored = self._steps.get(index)
        if stored is None:
            return ()
        if stored.commit != commit:
            raise BisectError(
                f"stored step {index} measured {stored.commit}, but this bisection's step"
                f" {index} is {commit}",
                hint="Resume with the same commits, GOOD, BAD and settings, or start afresh",
            )
        return stored.pairs


def bisect(
    commits: Sequence[str],
    measure: Measure,
    settings: BisectSettings | None = None,
    *,
    steps: Sequence[Step] = (),
    on_step: Callable[[Step], None] | None = None,
) -> BisectResult:
    """The first bad commit of ``commits`` (oldest first: ``commits[0]`` is GOOD, the last
    BAD), measuring with ``measure`` and resuming from ``steps`` (see the module's text)."""
    cfg = settings or BisectSettings()
    if len(commits) < 2:
        raise BisectError("a bisection needs GOOD and BAD", hint="Give --good and --bad")
    replay = _Replay(steps)
    alpha_of = step_alphas(len(commits), cfg.alpha)
    done: list[Step] = []

    def run(index: int, commit: str, role: Role, decide: Callable[[Pairs], Step]) -> Step:
        pairs = list(replay.take(index, commit))
        while True:
            step = decide(pairs) if len(pairs) >= cfg.first else None
            if step is not None and (step.outcome != "unknown" or len(pairs) >= cfg.cap):
                step = _complete(step)
                if on_step:
                    on_step(step)
                done.append(step)
                return step
            want = cfg.first - len(pairs) if len(pairs) < cfg.first else cfg.batch
            want = min(want, cfg.cap - len(pairs))
            new = [(float(c), float(g)) for c, g in measure(commit, want)]
            if len(new) != want:
                raise BisectError(f"asked for {want} pairs of {commit}, measured {len(new)}")
            log_ratios(new)  # refuse a bad sample before it is stored
            pairs.extend(new)
            if on_step:
                on_step(Step(index, commit, role, alpha_of(index), tuple(pairs)))

    def gap_step(pairs: Pairs) -> Step:
        a = alpha_of(0)
        mean, interval, _ = sequence_interval(log_ratios(pairs), a, cfg.tuned_for, cfg.batch_size)
        ok = gap_established(pairs, a, cfg.tuned_for, cfg.batch_size)
        return Step(0, commits[-1], "gap", a, tuple(pairs), "bad" if ok else "unknown",
                    False, mean, interval)  # fmt: skip

    gap = run(0, commits[-1], "gap", gap_step)
    if gap.outcome != "bad":
        raise BisectError(
            f"GOOD and BAD do not differ clearly after {gap.n} pairs"
            f" ({math.expm1(gap.log_ratio) * 100:+.2f} %,"
            f" interval {_percent(gap.interval[0])} to {_percent(gap.interval[1])})",
            hint="Check that BAD is slower than GOOD, or raise the cap on pairs per step",
        )

    lo, hi = 0, len(commits) - 1
    skipped: set[int] = set()
    index = 0
    while True:
        probe = _next_probe(lo, hi, skipped)
        if probe is None:
            break
        index += 1
        a = alpha_of(index)

        def probe_step(pairs: Pairs, i: int = index, c: int = probe, a: float = a) -> Step:
            v = step_verdict(pairs, gap.log_ratio, a, cfg.tuned_for, cfg.batch_size)
            return Step(i, commits[c], "probe", a, tuple(pairs), v.outcome, False,
                        v.log_ratio, v.interval)  # fmt: skip

        step = run(index, commits[probe], "probe", probe_step)
        if step.outcome == "bad":
            hi = probe
        elif step.outcome == "good":
            lo = probe
        else:
            skipped.add(probe)
    left = tuple(commits[i] for i in range(lo + 1, hi + 1))
    first = commits[hi] if len(left) == 1 else None
    return BisectResult(first, left, gap.log_ratio, tuple(done))


def _complete(step: Step) -> Step:
    return Step(step.index, step.commit, step.role, step.alpha, step.pairs, step.outcome, True,
                step.log_ratio, step.interval)  # fmt: skip


def _next_probe(lo: int, hi: int, skipped: set[int]) -> int | None:
    """The untested commit strictly between lo and hi nearest their middle (lower on a tie)."""
    middle = (lo + hi) / 2
    open_ = [i for i in range(lo + 1, hi) if i not in skipped]
    if not open_:
        return None
    return min(open_, key=lambda i: (abs(i - middle), i))


def _percent(x: float) -> str:
    return f"{math.expm1(x) * 100:+.2f} %" if math.isfinite(x) else ("-∞" if x < 0 else "+∞")
