"""The study's table: constructed samples with its n, mean and sd give its printed margins."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lab.core.errors import UsageError
from lab.stats.descriptive import check_confidence, margin_of_error, summarize, z_value


def constructed(n: int, mean: float, sd: float, seed: int = 0) -> np.ndarray:
    """n values whose sample mean and sample sd (n−1) are exactly ``mean`` and ``sd``."""
    z = np.random.default_rng(seed).standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    return mean + sd * z


# (benchmark, variant, n, mean, sd, published margin) from the reference study's tables 3–5
STUDY = [
    ("sysbench", "THP", 5000, 131.55, 4.38, 0.24),
    ("sysbench", "1GiB SHP", 5000, 128.34, 4.2, 0.23),
    ("iperf3", "THP", 37000, 29.74, 1.58, 0.03),
    ("iperf3", "1GiB SHP", 37000, 29.85, 1.4, 0.03),
    ("gdb", "THP", 24000, 147.08, 14.53, 0.36),
    ("gdb", "1GiB SHP", 24000, 145.43, 14.42, 0.36),
]


@pytest.mark.parametrize(("bench", "variant", "n", "mean", "sd", "margin"), STUDY)
def test_margin_reproduces_the_study(
    bench: str, variant: str, n: int, mean: float, sd: float, margin: float
) -> None:
    summary = summarize(constructed(n, mean, sd), 99.99)
    assert summary.n == n
    assert summary.mean == pytest.approx(mean, abs=1e-9)
    assert summary.sd == pytest.approx(sd, abs=1e-9)
    assert round(summary.margin, 2) == margin
    assert summary.confidence == 0.9999
    assert summary.ci == pytest.approx((mean - summary.margin, mean + summary.margin))


def test_z_values_match_published_normal_table() -> None:
    # two-sided critical values from any normal table
    assert z_value(95) == pytest.approx(1.959964, abs=1e-6)
    assert z_value(0.99) == pytest.approx(2.575829, abs=1e-6)
    assert z_value(99.99) == pytest.approx(3.890592, abs=1e-6)


def test_margin_closed_form() -> None:
    assert margin_of_error(2.0, 16, 95) == pytest.approx(1.959964 * 2 / 4, abs=1e-6)
    assert math.isnan(margin_of_error(2.0, 0, 95))


def test_summary_of_small_sample_by_hand() -> None:
    s = summarize(np.array([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), 95)
    assert (s.n, s.mean, s.min, s.max, s.median) == (8, 5.0, 2.0, 9.0, 4.5)
    assert s.sd == pytest.approx(math.sqrt(32 / 7))


@pytest.mark.parametrize("bad", [0, 100, 150, -1])
def test_confidence_out_of_range_refused(bad: float) -> None:
    with pytest.raises(UsageError, match="confidence level"):
        check_confidence(bad)


def test_empty_sample_refused() -> None:
    with pytest.raises(UsageError, match="no samples"):
        summarize(np.array([]), 95)
