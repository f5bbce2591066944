"""lab.stats.changes: Fieller's interval against scipy's Welch test and a coverage simulation,
and the change points of histories with a known shift, measured on the held-out samples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lab.core.errors import UsageError
from lab.stats.changes import change_points, fieller_welch, noise_sd


def test_fiellers_bounds_are_where_scipys_welch_test_of_after_vs_rho_before_gives_alpha() -> None:
    rng = np.random.default_rng(1)
    after, before = rng.normal(1.05, 0.02, 30), rng.normal(1.0, 0.04, 12)
    ratio, (low, high) = fieller_welch(after, before, 0.95)
    assert ratio == pytest.approx(after.mean() / before.mean())
    for rho in (low, high):
        p = stats.ttest_ind(after, rho * before, equal_var=False).pvalue
        assert p == pytest.approx(0.05, abs=1e-8)
    inside = stats.ttest_ind(after, (low + high) / 2 * before, equal_var=False).pvalue
    assert inside > 0.05
    assert low < ratio < high and high - ratio > ratio - low  # Fieller's skew to the right


def test_fieller_is_unbounded_when_the_mean_before_may_be_zero() -> None:
    rng = np.random.default_rng(2)
    _, interval = fieller_welch(rng.normal(1, 0.1, 10), rng.normal(0.01, 1, 10), 0.95)
    assert interval == (-math.inf, math.inf)
    assert math.isnan(fieller_welch(np.ones(1), np.ones(5), 0.95)[0])


def test_fieller_covers_the_true_ratio_at_its_level_in_a_simulation() -> None:
    rng = np.random.default_rng(3)
    reps, true = 600, 1.06 / 1.0
    covered = 0
    for _ in range(reps):
        after, before = rng.normal(1.06, 0.05, 6), rng.normal(1.0, 0.02, 15)
        _, (low, high) = fieller_welch(after, before, 0.9)
        covered += low <= true <= high
    se = math.sqrt(0.9 * 0.1 / reps)
    assert abs(covered / reps - 0.9) < 3.5 * se


def test_noise_sd_ignores_the_jumps_of_a_step_series() -> None:
    rng = np.random.default_rng(4)
    y = np.concatenate([rng.normal(1, 0.02, 400), rng.normal(1.5, 0.02, 400)])
    assert noise_sd(y) == pytest.approx(0.02, rel=0.15)
    assert np.std(y) > 0.2  # what a plain sd would say


def history(rng: np.random.Generator, shifts: dict[int, float], versions: int, samples: int):
    level = np.ones(versions)
    for at, factor in shifts.items():
        level[at:] *= factor
    return [(f"v{i}", rng.normal(level[i], 0.02 * level[i], samples)) for i in range(versions)]


def test_finds_two_known_shifts_and_measures_each_on_the_held_out_samples() -> None:
    rng = np.random.default_rng(5)
    h = history(rng, {60: 1.05, 130: 0.93}, 200, 5)
    found = change_points(h, 0.95)
    assert [abs(c.index - t) <= 2 for c, t in zip(found, (60, 130), strict=True)] == [True] * 2
    first = found[0]
    assert first.version == h[first.index][0] and not first.selective
    odd_before = np.concatenate([s[1::2] for _, s in h[first.before[0] : first.before[1]]])
    odd_after = np.concatenate([s[1::2] for _, s in h[first.after[0] : first.after[1]]])
    assert first.n_before == odd_before.size and first.after == (first.index, found[1].index)
    assert first.ratio == pytest.approx(odd_after.mean() / odd_before.mean())
    assert first.ratio_ci[0] < 1.05 < first.ratio_ci[1]
    assert found[1].ratio_ci[0] < 0.93 < found[1].ratio_ci[1]


def test_a_flat_history_has_no_change_and_single_samples_are_marked_selective() -> None:
    rng = np.random.default_rng(6)
    assert change_points(history(rng, {}, 150, 4)) == []
    single = change_points(history(rng, {40: 1.08}, 100, 1))
    assert len(single) == 1 and single[0].selective and abs(single[0].index - 40) <= 2
    assert change_points([]) == []


def test_a_version_without_samples_is_refused_by_name() -> None:
    with pytest.raises(UsageError, match="v1"):
        change_points([("v0", [1.0, 1.1]), ("v1", [])])
