"""``lab report``'s violins of samples whose spread is small beside their magnitude (a
counter near 1e15 that varies by units), or so large that it overflows: drawn, not refused
by numpy (lab report died on "Too many bins for data range")."""

from __future__ import annotations

import numpy as np

from lab.report.plots import violin_stats


def test_a_violin_of_samples_near_1e15_is_the_violin_of_their_spread() -> None:
    """2,048 bins over a span of about 60 at 1e15 are narrower than the step between
    doubles there (0.125): numpy raised ValueError."""
    spread = np.random.default_rng(3).normal(0, 10, 200).round()
    near, shifted = violin_stats(spread), violin_stats(1e15 + spread)
    assert np.all(np.isfinite(shifted["vals"])) and shifted["min"] == 1e15 + spread.min()
    # the same density, within what the coarser bins there change
    assert np.abs(shifted["vals"] - near["vals"]).max() < 0.02 * near["vals"].max()


def test_a_violin_of_samples_whose_spread_overflows_is_drawn_flat() -> None:
    """Near the largest double their sd is infinite, and so was the histogram's range."""
    with np.errstate(over="ignore", invalid="ignore"):
        found = violin_stats(1.7e308 - np.arange(30) * 2e306)
    assert found["vals"].tolist() == [1.0] + [0.0] * 99  # as for one value: no density
    assert found["max"] == 1.7e308
