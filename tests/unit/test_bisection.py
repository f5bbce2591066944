"""lab.stats.bisection: the step verdict's error under repeated looks (against a simulation and
scipy's fixed-n t interval, which the same looks would break), the driver's answer, its skips,
and a resume that measures no pair twice."""

from __future__ import annotations

import json
import math
import zlib

import numpy as np
import pytest
from scipy import stats

from lab.stats.bisection import (
    BisectError,
    BisectSettings,
    Step,
    bisect,
    sequence_interval,
    step_alphas,
    step_verdict,
)

GAP = math.log(1.03)


def looks(rng: np.random.Generator, true: float, sd: float, n: int) -> np.ndarray:
    """A candidate's log ratios, as pairs (candidate, GOOD) with GOOD at 1."""
    d = rng.normal(true, sd, n)
    return np.column_stack([np.exp(d), np.ones(n)])


def test_the_verdict_keeps_its_error_at_every_look_where_a_fixed_n_interval_does_not() -> None:
    # The hardest case: the candidate sits exactly on the threshold, half the gap. Calling it
    # bad at any of 20 looks is an error the sequence bounds by alpha; scipy's fixed-n t
    # interval read at the same looks errs far more often (the reason for the sequence).
    rng = np.random.default_rng(7)
    alpha, reps, sd = 0.1, 300, 0.028
    wrong = naive = 0
    for _ in range(reps):
        pairs = looks(rng, GAP / 2, sd, 200)
        d = np.log(pairs[:, 0])
        said = fixed = False
        for n in range(10, 201, 10):
            v = step_verdict(pairs[:n], GAP, alpha, 100, batch_size=1)
            said = said or v.outcome == "bad"
            low = stats.t.interval(1 - alpha, n - 1, d[:n].mean(), stats.sem(d[:n]))[0]
            fixed = fixed or low > GAP / 2
        wrong += said
        naive += fixed
    se = math.sqrt(alpha * (1 - alpha) / reps)
    assert wrong / reps <= alpha / 2 + 3 * se  # one side of a two-sided sequence
    assert naive / reps > alpha / 2 + 3 * se


def test_the_interval_is_wider_than_scipys_fixed_n_t_interval_and_centred_on_the_mean() -> None:
    rng = np.random.default_rng(3)
    d = rng.normal(0.01, 0.02, 60)
    mean, (low, high), m = sequence_interval(d, 0.05, 30, batch_size=1)
    t_low, t_high = stats.t.interval(0.95, 59, d.mean(), stats.sem(d))
    assert m == 1
    assert mean == pytest.approx(d.mean())
    assert (low + high) / 2 == pytest.approx(d.mean())
    assert low < t_low and high > t_high


def test_clear_candidates_get_their_verdicts_and_a_negative_gap_is_mirrored() -> None:
    rng = np.random.default_rng(1)
    fast = looks(rng, 0.0, 0.01, 80)
    slow = looks(rng, GAP, 0.01, 80)
    assert step_verdict(fast, GAP, 0.01, 50).outcome == "good"
    assert step_verdict(slow, GAP, 0.01, 50).outcome == "bad"
    # a throughput bisect: BAD is lower, so "bad" is below half the (negative) gap
    low = looks(rng, -GAP, 0.01, 80)
    assert step_verdict(low, -GAP, 0.01, 50).outcome == "bad"
    assert step_verdict(fast, -GAP, 0.01, 50).outcome == "good"
    assert step_verdict(fast[:3], GAP, 0.01, 50).outcome == "unknown"


def test_refuses_unusable_input() -> None:
    with pytest.raises(BisectError, match="positive"):
        step_verdict([(1.0, 0.0), (1.0, 1.0)], GAP, 0.05, 10)
    with pytest.raises(BisectError, match="nonzero"):
        step_verdict([(1.0, 1.0)], 0.0, 0.05, 10)
    with pytest.raises(BisectError):
        BisectSettings(first=20, cap=10)


def test_the_step_alphas_spend_at_most_alpha_however_many_steps() -> None:
    of = step_alphas(1024, 0.05)
    assert of(0) == of(10) == pytest.approx(0.05 / 12)
    assert math.fsum(of(i) for i in range(100_000)) <= 0.05


class Series:
    """A deterministic measurement: sample k of a commit is a function of (commit, k), so an
    interrupted and a resumed bisection see the same samples; it counts what it is asked."""

    def __init__(self, commits: list[str], first_bad: int, cv: float = 0.02, odd: int = -1):
        self.index = {c: i for i, c in enumerate(commits)}
        self.first_bad, self.cv, self.odd = first_bad, cv, odd
        self.given: dict[str, int] = {}
        self.asked = 0
        self.fail_after: int | None = None

    def __call__(self, commit: str, n: int) -> list[tuple[float, float]]:
        if self.fail_after is not None and self.asked >= self.fail_after:
            raise KeyboardInterrupt  # the lead's process stopped mid-bisection
        self.asked += 1
        i = self.index[commit]
        mean = 1.03 if i >= self.first_bad else 1.0
        if i == self.odd:
            mean = math.sqrt(1.03)  # exactly half the gap: no verdict can be reached
        start = self.given.get(commit, 0)
        self.given[commit] = start + n
        seed = zlib.crc32(f"{commit}:{start}".encode())
        rng = np.random.default_rng(seed)
        noise = rng.normal(0, self.cv, (n, 2))
        return [(mean * (1 + c), 1 + g) for c, g in noise]


COMMITS = [f"r{i:03d}" for i in range(100)]
SETTINGS = BisectSettings(alpha=0.05, cap=200)


def test_names_the_first_bad_commit_and_reports_every_step_as_json() -> None:
    series = Series(COMMITS, 37)
    result = bisect(COMMITS, series, SETTINGS)
    assert result.first_bad == "r037"
    assert result.candidates == ("r037",)
    assert math.expm1(result.gap) == pytest.approx(0.03, abs=0.01)
    assert result.steps[0].role == "gap" and result.steps[0].commit == "r099"
    assert sum(series.given.values()) == result.pairs
    out = json.loads(json.dumps(result.to_dict()))
    assert out["first_bad"] == "r037"
    assert [Step.from_dict(s) for s in out["steps"]] == list(result.steps)


def test_a_commit_unknown_at_the_cap_is_skipped_and_may_leave_the_answer_open() -> None:
    series = Series(COMMITS, 37, cv=0.01, odd=37)  # the first bad commit is half as slow
    result = bisect(COMMITS, series, BisectSettings(cap=60))
    skipped = [s for s in result.steps if s.commit == "r037"]
    assert skipped and skipped[0].outcome == "unknown" and skipped[0].n == 60
    assert result.first_bad is None
    assert result.candidates == ("r037", "r038")


def test_a_resumed_bisection_asks_for_no_pair_twice_and_reaches_the_same_answer() -> None:
    whole = bisect(COMMITS, Series(COMMITS, 61), SETTINGS)
    for fail_after in range(3, 40):  # the first stop part-way through a step's looks
        stored: dict[int, Step] = {}
        series = Series(COMMITS, 61)
        series.fail_after = fail_after
        keep = stored.__setitem__
        with pytest.raises(KeyboardInterrupt):
            bisect(COMMITS, series, SETTINGS, on_step=lambda s, keep=keep: keep(s.index, s))
        if any(not s.complete for s in stored.values()) and len(stored) > 2:
            break
    else:
        pytest.fail("no stop fell part-way through a step")
    kept = [Step.from_dict(json.loads(json.dumps(s.to_dict()))) for s in stored.values()]
    before = dict(series.given)
    series.fail_after = None
    resumed = bisect(COMMITS, series, SETTINGS, steps=kept)
    assert resumed.first_bad == whole.first_bad == "r061"
    assert resumed.steps == whole.steps
    # every pair measured is in exactly one step of the answer
    assert sum(series.given.values()) == resumed.pairs
    assert all(series.given[c] >= before.get(c, 0) for c in before)


def test_refuses_to_resume_from_another_bisections_steps() -> None:
    result = bisect(COMMITS, Series(COMMITS, 37), SETTINGS)
    with pytest.raises(BisectError, match="Resume"):
        bisect(COMMITS[:50], Series(COMMITS[:50], 20), SETTINGS, steps=result.steps)


def test_good_and_bad_that_do_not_differ_stop_the_bisection() -> None:
    series = Series(COMMITS, 1000)  # no commit is slower
    with pytest.raises(BisectError, match="do not differ"):
        bisect(COMMITS, series, BisectSettings(cap=40))
