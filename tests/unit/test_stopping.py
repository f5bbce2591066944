"""What a stopping rule may look at (balanced points, a settled warm-up), and the interval a
run stopped on as ``lab compare``'s primary one: each defect reproduced by simulation first."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lab.stats.analysis import analyse, with_stops
from lab.stats.sequential import check_stop, confidence_sequence, parse_until
from lab.stats.series import Series
from lab.stats.stopping import StoppedInterval, rule_view
from lab.stats.verdict import Outcome

SWAP = 50  # the study: swap_every = 50, until = "verdict", 99.9 %


def placed_pairs(rng: np.random.Generator, n: int, cpu_effect: float) -> tuple[np.ndarray, ...]:
    """A and B with no variant effect, on CPU sets whose own difference is ``cpu_effect``
    (in % of the mean): A starts on the slower set, and the twins trade sets every SWAP."""
    it = np.arange(1, n + 1)
    swapped = ((it - 1) // SWAP) % 2 == 1
    slow = 100.0 * (1 + cpu_effect / 100)
    a = np.where(swapped, 100.0, slow) + rng.normal(0, 1, n)
    b = np.where(swapped, slow, 100.0) + rng.normal(0, 1, n)
    return it, a, b


def test_before_the_first_swap_the_rule_may_not_look() -> None:
    it, a, b = placed_pairs(np.random.default_rng(1), 43, cpu_effect=3.0)
    view = rule_view(it, a, b, swap_every=SWAP)
    assert not view.ready and "0 whole block pairs of 100" in view.why
    # the old rule, on every pair: stopped at once on the CPU set, calling it the variant
    old = check_stop(parse_until("verdict", 400), a, b, 0.999, 0.01, batch_size=1)
    assert old.stop and old.verdict.outcome == Outcome.FASTER


def test_at_balanced_points_a_cpu_set_effect_is_no_variant_effect() -> None:
    """3 % between the CPU sets, no variant effect: looking at every pair, the rule calls a
    variant faster in nearly every study; at balanced points, on block means, no more often
    than α (the placement effect cancels within each block)."""
    rng = np.random.default_rng(7)
    studies, n, level = 300, 1000, 0.95
    rule = parse_until("verdict", n)
    wrong_old = wrong_new = 0
    for _ in range(studies):
        it, a, b = placed_pairs(rng, n, cpu_effect=3.0)
        for m in range(2, SWAP + 1):  # the old rule (every pair, unbatched), before the swap
            d = check_stop(rule, a[:m], b[:m], level, 0.01, batch_size=1)
            if d.stop:
                wrong_old += d.verdict.outcome in (Outcome.FASTER, Outcome.SLOWER)
                break
        blocks = rule_view(it, a, b, swap_every=SWAP)
        per = blocks.per_observation
        shrunk = parse_until("verdict", n // per, tuned_for=max(2, rule.tuning_n // per))
        for k in range(2, blocks.a.size + 1):  # every balanced point
            d = check_stop(shrunk, blocks.a[:k], blocks.b[:k], level, 0.01, unit=blocks.unit,
                           batch_size=1)  # fmt: skip
            if d.stop:
                wrong_new += d.verdict.outcome in (Outcome.FASTER, Outcome.SLOWER)
                break
    tolerance = 3 * math.sqrt(0.05 * 0.95 / studies)
    print(f"wrong verdicts: every pair {wrong_old / studies:.3f}, balanced points"
          f" {wrong_new / studies:.3f} (α 0.05 + {tolerance:.3f})")  # fmt: skip
    assert wrong_old / studies > 0.9
    assert wrong_new / studies <= 0.05 + tolerance


def test_block_means_are_the_means_of_whole_block_pairs() -> None:
    it = np.arange(1, 11)
    a, b = it * 1.0, it * 10.0
    view = rule_view(it, a, b, swap_every=2)  # blocks 1–4, 5–8; 9–10 is not whole
    assert view.ready and view.unit == "balanced blocks" and view.per_observation == 4
    assert view.a.tolist() == [2.5, 6.5] and view.b.tolist() == [25.0, 65.0]
    assert view.observations.startswith("2 balanced blocks of 4 iterations")
    # a warm-up of 5 leaves out the blocks it touches whole: only 9–12 would count
    assert not rule_view(it, a, b, swap_every=2, warmup="5").ready
    # without swaps, a declared warm-up leaves out its iterations
    plain = rule_view(it, a, b, warmup="3")
    assert plain.a.tolist() == [4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]


def test_with_warmup_auto_the_rule_waits_until_the_warmup_is_settled() -> None:
    rng = np.random.default_rng(3)
    n = 120
    it = np.arange(1, n + 1)
    warm = np.where(it <= 30, 20.0, 0.0)  # both twins 20 % slow for 30 iterations
    a = 100 + warm + rng.normal(0, 1, n)
    b = 100 + warm + rng.normal(0, 1, n)
    first = rule_view(it[:15], a[:15], b[:15], warmup="auto")
    assert not first.ready and "20 needed first" in first.why
    ending = rule_view(it[:36], a[:36], b[:36], warmup="auto")  # the mean falls at 30 of 36
    assert not ending.ready and "not settled" in ending.why
    late = rule_view(it, a, b, warmup="auto")
    assert late.ready
    kept = int(late.observations.split()[0])
    assert n - 35 <= kept <= n - 30  # the warm-up (and no more than a few beyond) left out
    assert late.a.mean() == pytest.approx(100, abs=0.5)


def fixed_n_covers(a: np.ndarray, b: np.ndarray, truth: float, level: float) -> bool:
    ci = stats.ttest_ind(b, a, equal_var=False).confidence_interval(level)
    return bool(ci.low <= truth <= ci.high)


def test_after_an_early_stop_only_the_sequence_keeps_its_coverage() -> None:
    """Studies stopped by --until verdict: the fixed-n Welch interval at the stopping time
    (scipy's) misses the true difference more often than 5 %; the confidence sequence the
    rule stopped on does not. This is why it is the primary interval after an early stop."""
    rng = np.random.default_rng(11)
    studies, n, level, truth = 250, 120, 0.95, 1.2
    rule = parse_until("verdict", n)
    missed_fixed = missed_sequence = 0
    for _ in range(studies):
        a = rng.normal(100, 2, n)
        b = rng.normal(100 + truth, 2, n)
        for m in range(2, n + 1):
            d = check_stop(rule, a[:m], b[:m], level, 0.01)
            if d.stop:
                break
        low, high = d.interval.diff_ci
        missed_sequence += not low <= truth <= high
        missed_fixed += not fixed_n_covers(a[:m], b[:m], truth, level)
    tolerance = 3 * math.sqrt(0.05 * 0.95 / studies)
    print(f"missed the truth after the stop: fixed-n {missed_fixed / studies:.3f}, sequence"
          f" {missed_sequence / studies:.3f} (nominal 0.05 + {tolerance:.3f})")  # fmt: skip
    assert missed_fixed / studies > 0.05
    assert missed_sequence / studies <= 0.05 + tolerance


def series(variant: str, values: np.ndarray) -> Series:
    return Series("s", "w", "time", "s", "lower", variant, "local", f"lab-{variant}",
                  np.arange(1, values.size + 1), values)  # fmt: skip


def test_a_stopped_runs_interval_and_verdict_replace_the_fixed_n_ones() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.normal(100, 1, 40), rng.normal(95, 1, 40)
    seq = confidence_sequence(a, b, 0.99, 20)
    stop = StoppedInterval("time", seq.method, "40 pairs", 0.99, True, seq.diff, seq.diff_ci,
                           seq.percent, seq.percent_ci, "after 40 pairs: …")  # fmt: skip
    assert StoppedInterval.from_json(stop.to_json()) == stop
    [plain] = analyse([series("thp", a), series("shp1g", b)], 99, 0.01, order=["thp", "shp1g"])
    [stopped] = with_stops([plain], {("s", "w"): stop})
    assert stopped.stopped == stop
    verdict = stopped.pairs[0].verdict
    assert verdict.outcome == Outcome.FASTER and "anytime-valid" in verdict.text
    # the sequence's interval is the wider one, and the verdict reads it, not Welch's
    lo, hi = verdict.benefit_ci
    assert (-hi, -lo) == pytest.approx(seq.percent_ci)
    assert seq.percent_ci[0] < plain.pairs[0].difference.percent_ci[0]
    # another metric, or another workload, keeps its fixed-n verdict
    assert with_stops([plain], {("s", "other"): stop})[0].stopped is None
