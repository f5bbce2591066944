"""The ratio of means' interval depends on the samples' relative spread only, whatever their
magnitude: squaring means below 1e-162 gave 0 (lab compare died dividing by it), and
squaring sds above 1e154 gave infinity."""

from __future__ import annotations

import pytest

from lab.stats.difference import ratio_of_means_ci


@pytest.mark.parametrize("scale", [1e-170, 1e-300, 1e170, 1e300])
def test_the_ratio_interval_is_the_same_at_any_scale(scale: float) -> None:
    unscaled = ratio_of_means_ci(1.0, 0.1, 30, 2.0, 0.3, 25, 0.9999)
    scaled = ratio_of_means_ci(scale, 0.1 * scale, 30, 2.0 * scale, 0.3 * scale, 25, 0.9999)
    assert scaled == pytest.approx(unscaled, rel=1e-12)
    assert 1.5 < unscaled[0] < 2.0 < unscaled[1] < 2.6
