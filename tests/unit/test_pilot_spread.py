"""lab.app.pilot: the pooled SD, smallest arm and lag-1 autocorrelation `lab plan` plans from
(the action the command asked numpy for itself)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from lab.app.pilot import pilot_spread
from lab.stats.diagnostics import lag1_autocorrelation


def test_the_pooled_sd_weighs_each_arm_by_its_degrees_of_freedom() -> None:
    a, b = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [10.0, 14.0, 9.0]
    spread = pilot_spread([np.array(a), np.array(b)])
    pooled = (5 * statistics.variance(a) + 2 * statistics.variance(b)) / (5 + 2)
    assert spread.sd == pytest.approx(math.sqrt(pooled))
    assert spread.sd != pytest.approx(statistics.pstdev(a + b))  # not the arms thrown together
    assert spread.n == 3
    assert spread.r == pytest.approx(lag1_autocorrelation(np.array(a))) and spread.r > 0


def test_arms_that_alternate_have_no_positive_autocorrelation() -> None:
    arms = [np.array([1.0, 3.0, 1.0, 3.0, 1.0]), np.array([5.0, 2.0, 5.0, 2.0])]
    assert all(lag1_autocorrelation(a) < 0 for a in arms)
    assert pilot_spread(arms).r == 0.0
