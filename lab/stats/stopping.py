"""The interval a run's stopping rule stopped on, kept with the run and shown by ``lab compare``.

A run that stopped early (``lab run --until``) looked at its samples after every iteration
and stopped when they looked decisive. The fixed-n intervals of ``lab.stats.difference``
assume n was fixed in advance: after such a stop they miss more often than their level
says (6.8 % at a nominal 5 % in simulated studies), because the run stopped where the
noise happened to favour a verdict. The confidence sequence that stopped it is valid at
any stopping time, so it is the run's primary interval, and its verdict the run's verdict.

The controller stores it as JSON with the stop; ``lab.stats.analysis.with_stops`` puts it in
the comparison of the metric the rule read, in place of the fixed-n verdict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from lab.stats.discard import AUTO, NONE
from lab.stats.series import Direction
from lab.stats.verdict import Threshold, Verdict, decide
from lab.stats.warmup import CUSUM_ALPHA, MIN_SAMPLES, suggest_warmup


@dataclass(frozen=True)
class StoppedInterval:
    """B − A as the rule saw it when it stopped the run, in the metric's unit and in %."""

    metric: str
    method: str  # "Lai's t confidence sequence at 99.99 %, tuned for n=500"
    observations: str  # what the sequence ran on: "43 pairs", "4 balanced blocks of 100 …"
    confidence: float  # fraction
    early: bool  # stopped before the maximum n
    diff: float
    diff_ci: tuple[float, float]
    percent: float
    percent_ci: tuple[float, float]
    reason: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), allow_nan=True)

    @classmethod
    def from_json(cls, text: str) -> StoppedInterval:
        data: dict[str, Any] = json.loads(text)
        for name in ("diff_ci", "percent_ci"):
            data[name] = (float(data[name][0]), float(data[name][1]))
        return cls(**data)

    @property
    def note(self) -> str:
        when = "stopped early" if self.early else "ran to its maximum n under a stopping rule"
        # a confidence sequence is anytime-valid; boot means split alpha over their looks
        valid = "anytime-valid" if "boot means" not in self.method else "valid at every look"
        return (
            f"the run {when} ({self.reason}); its interval is the {valid} one the rule"
            f" read ({self.method}, on {self.observations}), because fixed-n intervals do not"
            " hold after a data-dependent stop"
        )


def stopped_verdict(
    stop: StoppedInterval, direction: Direction, threshold: Threshold, a: str, b: str
) -> Verdict:
    """The verdict read from the interval the rule stopped on, at ``threshold``."""
    verdict = decide(stop.percent_ci, direction, threshold, a, b, stop.confidence, stop.diff_ci)
    return replace(verdict, text=f"{verdict.text}; anytime-valid, the interval the run stopped on")


@dataclass(frozen=True)
class RuleView:
    """What the stopping rule may look at now: one observation per pair of samples, or per
    balanced block of them; ``ready`` is False (and ``why`` says why) while it may not look."""

    a: np.ndarray
    b: np.ndarray
    observations: str  # "43 pairs", "4 balanced blocks of 100 iterations (400 pairs)"
    unit: str  # what one observation is, for "after 4 …": "pairs" or "balanced blocks"
    per_observation: int  # iterations per observation: 1, or 2·swap_every
    ready: bool = True
    why: str = ""


def rule_view(
    iterations: Sequence[int],
    a: Sequence[float],
    b: Sequence[float],
    swap_every: int | None = None,
    warmup: str | None = None,
) -> RuleView:
    """The samples of A and B a stopping rule reads, given every iteration both hold.

    - **Warm-up.** A declared count K leaves out iterations 1..K. With ``auto`` the rule waits
      until the warm-up is settled: at least 2·``MIN_SAMPLES`` pairs, the CUSUM test's cut
      (``lab.stats.warmup``, the longer of the two arms') leaves ``MIN_SAMPLES`` or more, and
      the test finds no change in the mean anywhere in what is left of either arm (a change
      late in the samples is a warm-up still ending). Until then the rule does not look: a
      verdict read during the warm-up would be one on the warm-up. A warm-up that has not
      begun to end cannot be told from a steady state by any test; the first look after
      2·``MIN_SAMPLES`` pairs is the guard against the commonest, short ones.
    - **Counterbalancing.** With ``swap_every`` K the twins trade CPU sets every K
      iterations, so a look in the middle of a block would weigh one placement more than the
      other, and before the first swap the variant and the CPU set are one and the same.
      The rule then looks only at balanced points, after whole blocks of 2K iterations (K
      on the own CPU sets, K swapped), and each observation is the block's mean of A and of
      B: within a block the CPU-set effect enters B − A once with each sign and cancels, so
      the sequence estimates the placement-adjusted variant effect. Short blocks of
      correlated samples are not independent of each other (with --swap-every 1 at lag-1 r
      0.5 adjacent block means correlate at about 0.4, and the plain sequence on them stopped
      wrongly in 16 % of studies at α = 5 %), so the rule batches the block means as it does
      single pairs (``lab.stats.sequential.sequence_batch_size``).
    """
    order = np.argsort(np.asarray(iterations, dtype=np.int64), kind="stable")
    it = np.asarray(iterations, dtype=np.int64)[order]
    x = np.asarray(a, dtype=np.float64)[order]
    y = np.asarray(b, dtype=np.float64)[order]
    cut = 0
    if warmup == AUTO:
        if it.size < 2 * MIN_SAMPLES:
            return _waiting(x, f"warm-up auto: {it.size} pairs, {2 * MIN_SAMPLES} needed first")
        cut = max(suggest_warmup(x).n, suggest_warmup(y).n)
        rest = [suggest_warmup(x[cut:]), suggest_warmup(y[cut:])]
        if it.size - cut < MIN_SAMPLES or any(r.p < CUSUM_ALPHA for r in rest):
            return _waiting(x, f"warm-up auto is not settled after {it.size} pairs: the mean"
                            " still changes after the cut")  # fmt: skip
        cut = int(it[cut - 1]) if cut else 0  # as an iteration number
    elif warmup not in (None, "", NONE):
        cut = int(warmup)
    if not swap_every:
        keep = it > cut
        return RuleView(x[keep], y[keep], f"{int(keep.sum())} pairs", "pairs", 1)
    length = 2 * swap_every
    first_block = -(-cut // length)  # blocks touched by the warm-up are left out whole
    block = (it - 1) // length
    blocks_a, blocks_b = [], []
    j = first_block
    while True:
        inside = block == j
        if int(inside.sum()) < length:  # the first incomplete block: the last balanced point
            break
        blocks_a.append(float(x[inside].mean()))
        blocks_b.append(float(y[inside].mean()))
        j += 1
    count = len(blocks_a)
    shown = (
        f"{count} balanced blocks of {length} iterations ({swap_every} on the own CPU sets,"
        f" {swap_every} swapped; {count * length} pairs)"
    )
    view = RuleView(np.array(blocks_a), np.array(blocks_b), shown, "balanced blocks", length)
    if count < 2:
        return replace(view, ready=False, why=f"{count} whole block pairs of {length} iterations")
    return view


def _waiting(x: np.ndarray, why: str) -> RuleView:
    empty = x[:0]
    return RuleView(empty, empty, "0 pairs", "pairs", 1, ready=False, why=why)
