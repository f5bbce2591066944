"""The summary agrees with the verdict beside it (issue 32, item 5), each against scipy or a
simulation written here."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from lab.report.summary import arm_margin, summary_rows
from lab.stats.analysis import analyse
from lab.store import Series


def series(variant: str, values: np.ndarray, study: str = "s") -> Series:
    return Series(
        study=study, workload="w", metric="time_s", unit="s", direction="lower",
        variant=variant, guest=f"lab-{variant}", host="local",
        iterations=np.arange(1, values.size + 1), values=np.asarray(values, dtype=float),
    )  # fmt: skip


def ar1(rng: np.random.Generator, shape: tuple[int, int], r: float) -> np.ndarray:
    """Stationary AR(1) rows with unit marginal variance."""
    e = rng.standard_normal(shape) * np.sqrt(1 - r**2)
    x = np.empty(shape)
    x[:, 0] = rng.standard_normal(shape[0])
    for i in range(1, shape[1]):
        x[:, i] = r * x[:, i - 1] + e[:, i]
    return x


def test_the_summary_margin_at_two_samples_is_t_not_z() -> None:
    a, b = np.array([10.0, 11.0]), np.array([12.0, 13.0])
    (c,) = analyse([series("a", a), series("b", b)], 99.99, 0.01, order=["a", "b"])
    low, high = stats.t.interval(0.9999, 1, loc=a.mean(), scale=stats.sem(a))
    assert arm_margin(c.arms[0]) == pytest.approx((high - low) / 2)  # 3183, z said 1.95
    (row,) = summary_rows([c])
    assert "± 3,183 s (n=2)" in row.a


def test_the_summary_margin_covers_an_autocorrelated_mean() -> None:
    # lag-1 r 0.5: the mean's variance is 3·σ²/n, so z·s/√n covers ~74 % at a nominal 95 %
    rng = np.random.default_rng(7)
    x = ar1(rng, (400, 400), 0.5)
    covered = 0
    z_covered = 0
    for row in x:
        (c,) = analyse([series("a", row), series("b", row + 1)], 95, 0.01, order=["a", "b"])
        covered += abs(row.mean()) <= arm_margin(c.arms[0])
        z_covered += abs(row.mean()) <= c.arms[0].summary.margin
    assert z_covered / len(x) < 0.85  # the old margin, for contrast
    assert covered / len(x) > 0.91
