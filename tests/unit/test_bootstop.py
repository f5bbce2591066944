"""The boot-level stop rule: wrong stops on A/A twins stay at or below alpha at any look."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from lab.stats.bootstop import boot_look, look_confidence, planned_looks

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "bootstop_errors.py"
_spec = importlib.util.spec_from_file_location("bootstop_errors", _BENCH)
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_alpha_is_split_over_the_looks_from_the_second_boot():
    assert planned_looks(10) == 9
    assert look_confidence(0.95, 10) == pytest.approx(1 - 0.05 / 9)


def test_one_boot_does_not_decide():
    look = boot_look(np.array([1.0]), np.array([5.0]), 0.95, 10)
    assert look.difference is None and not look.excludes_zero


def test_look_matches_scipy_welch():
    a, b = np.array([10.0, 11.0, 10.5]), np.array([12.0, 12.5, 11.8])
    look = boot_look(a, b, 0.95, 4)
    ref = stats.ttest_ind(b, a, equal_var=False).confidence_interval(1 - 0.05 / 3)
    assert look.difference is not None
    assert look.difference.diff_ci == pytest.approx((ref.low, ref.high))


@pytest.mark.parametrize("icc", [0.0, 0.5])
def test_wrong_stops_at_or_below_alpha(icc):
    streams = 400
    tolerance = 3 * np.sqrt(0.05 * 0.95 / streams)  # three binomial standard errors
    rate = bench.wrong_stop_rate(streams, icc, swap=False, max_boots=8, seed=7, iters=10)
    assert rate <= 0.05 + tolerance


def test_too_few_boots_for_a_verdict_are_said_before_the_run() -> None:
    # issue 40 §2: "at 99.99 % with 4 boots the t quantile is about 9"
    from lab.stats.bootstop import too_few_boots

    said = too_few_boots(400, 100, 99.99, until=False)
    assert said is not None and "4 boots" in said and "±9.1 standard errors" in said
    assert "6 degrees of freedom" in said
    ruled = too_few_boots(400, 100, 99.99, until=True)  # each look at 1 - alpha/3
    assert ruled is not None and "99.9967 %" in ruled
    assert too_few_boots(400, 10, 95, until=True) is None  # 40 boots: t about 3
    one = too_few_boots(40, 40, 95, until=False)
    assert one is not None and "needs two in each twin" in one


def test_a_halfwidth_rule_on_a_run_with_boots_reads_the_boot_level_interval() -> None:
    """--until 'ci-halfwidth<X' with --reboot-every stops on the boot means' interval (the
    unit compare reads), not on iterations: 3 boot means of spread 1 give a Welch half-width
    of several units at 95 % split over the looks, so a limit of 1 holds the run, 10 stops it."""
    from lab.stats.bootstop import boot_decision
    from lab.stats.sequential import parse_until

    a, b = [10.0, 11.0, 12.0], [10.5, 11.5, 12.5]
    ref = stats.ttest_ind(b, a, equal_var=False).confidence_interval(look_confidence(0.95, 6))
    half = (ref.high - ref.low) / 2
    assert 1.0 < half < 10.0
    held = boot_decision(a, b, 0.95, 6, 0.01, rule=parse_until("ci-halfwidth<1", 100))
    stopped = boot_decision(a, b, 0.95, 6, 0.01, rule=parse_until("ci-halfwidth<10", 100))
    assert not held.stop and f"half-width {half:.4g} is not below 1" in held.reason
    assert stopped.stop and "boot-level interval's half-width" in stopped.reason
    assert stopped.interval.halfwidth == pytest.approx(half)
