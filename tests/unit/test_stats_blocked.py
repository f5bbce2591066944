"""`lab compare --by host`: checked against scipy's Welch test and statsmodels' meta-analysis.

One host must give exactly Welch's interval and p (scipy); several hosts the fixed-effect
estimate, standard error and Cochran's Q of statsmodels' ``combine_effects``, and with
many samples per host its normal interval.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects

from lab.stats.blocked import block_difference, by_host, combine
from lab.stats.series import Series

RNG = np.random.default_rng(20261123)


def series(host: str, variant: str, values: np.ndarray, guest: str = "") -> Series:
    return Series(
        study="s", workload="sysbench-memory", metric="throughput_mib_s", unit="MiB/s",
        direction="higher", variant=variant, guest=guest or f"lab-{host}-{variant}", host=host,
        iterations=np.arange(1, values.size + 1), values=values,
    )  # fmt: skip


def test_one_host_is_exactly_welch() -> None:
    a, b = RNG.normal(100, 5, 12), RNG.normal(104, 9, 7)
    blocks = [block_difference("local", a, b, 99.0)]
    diff, se, df, ci, p, _, _ = combine(blocks, 99.0)
    welch = stats.ttest_ind(b, a, equal_var=False)
    interval = welch.confidence_interval(0.99)
    assert diff == pytest.approx(b.mean() - a.mean())
    assert df == pytest.approx(welch.df)
    assert ci == pytest.approx((interval.low, interval.high))
    assert p == pytest.approx(welch.pvalue)
    assert se == pytest.approx(np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size))


def test_several_hosts_match_statsmodels_fixed_effect() -> None:
    arms = [(RNG.normal(m, s, n), RNG.normal(m + 3, s, n)) for m, s, n in
            [(100, 4, 8), (250, 10, 15), (80, 2, 6)]]  # fmt: skip
    blocks = [block_difference(f"h{i}", a, b, 95.0) for i, (a, b) in enumerate(arms)]
    diff, se, _, _, _, q, q_p = combine(blocks, 95.0)
    ref = combine_effects(
        np.array([b.difference for b in blocks]), np.array([b.se**2 for b in blocks])
    )
    assert diff == pytest.approx(ref.mean_effect_fe)
    assert se == pytest.approx(ref.sd_eff_w_fe)
    assert q == pytest.approx(ref.q)
    assert q_p == pytest.approx(stats.chi2.sf(ref.q, len(blocks) - 1))


def test_with_many_samples_the_interval_is_the_normal_one() -> None:
    arms = [(RNG.normal(10, 1, 4000), RNG.normal(10.1, 1.5, 4000)) for _ in range(3)]
    blocks = [block_difference(f"h{i}", a, b, 99.0) for i, (a, b) in enumerate(arms)]
    _, _, df, ci, _, _, _ = combine(blocks, 99.0)
    ref = combine_effects(
        np.array([b.difference for b in blocks]), np.array([b.se**2 for b in blocks]),
        alpha=0.01,
    )  # fmt: skip
    low, high = ref.conf_int(alpha=0.01, use_t=False)[0][:2]
    assert df > 10000
    assert ci[0] == pytest.approx(low, abs=1e-4)
    assert ci[1] == pytest.approx(high, abs=1e-4)


def test_a_host_effect_does_not_hide_the_variant_effect() -> None:
    """Host 'big' is 5x faster for both variants: pooled, its spread swamps a 2% effect;
    blocked by host, the effect is found on each and combined."""
    found = []
    for host, level in (("local", 100.0), ("big", 500.0)):
        a = RNG.normal(level, level * 0.002, 20)
        b = RNG.normal(level * 1.02, level * 0.002, 20)
        found += [series(host, "thp", a), series(host, "shp1g", b)]
    (result,) = by_host(found, ["thp", "shp1g"], 99.0)
    assert (result.a, result.b) == ("thp", "shp1g")
    assert [b.block for b in result.blocks] == ["big", "local"]
    assert result.percent == pytest.approx(2.0, abs=0.3)
    assert result.ci[0] > 0 and result.p < 1e-6
    pooled = stats.ttest_ind(
        np.concatenate([s.values for s in found if s.variant == "shp1g"]),
        np.concatenate([s.values for s in found if s.variant == "thp"]),
        equal_var=False,
    )
    assert pooled.pvalue > 0.5  # the host's spread hides it when the hosts are pooled


def test_a_host_without_both_variants_is_left_out_and_said() -> None:
    found = [
        series("local", "thp", RNG.normal(1, 0.1, 5)),
        series("local", "shp1g", RNG.normal(1, 0.1, 5)),
        series("loop", "thp", RNG.normal(1, 0.1, 5)),
        series("loop", "shp1g", np.array([1.0])),
    ]
    (result,) = by_host(found, ["thp", "shp1g"], 95.0)
    assert [b.block for b in result.blocks] == ["local"]
    assert result.skipped == ("loop: 5 samples of thp, 1 of shp1g",)


def test_two_guests_of_a_variant_on_one_host_are_pooled() -> None:
    a1, a2, b = RNG.normal(5, 1, 4), RNG.normal(5, 1, 6), RNG.normal(6, 1, 5)
    found = [series("h", "thp", a1, "g1"), series("h", "thp", a2, "g2"), series("h", "shp1g", b)]
    (result,) = by_host(found, ["thp", "shp1g"], 95.0)
    assert result.blocks[0].n_a == 10
    assert result.blocks[0].mean_a == pytest.approx(np.concatenate([a1, a2]).mean())


def test_a_host_with_constant_arms_is_weighted_equally_not_divided_by_zero() -> None:
    """Issue 19: one host's arms constant (se 0) made 1/se² divide by zero. The hosts are then
    weighted equally: with a constant host and one other, the combined interval is
    (d₁ + Welch's interval of the other host) / 2, checked against scipy's Welch test."""
    a, b = RNG.normal(10, 1, 8), RNG.normal(11, 1.5, 9)
    found = [
        series("h1", "thp", np.full(5, 10.0)), series("h1", "shp1g", np.full(6, 11.0)),
        series("h2", "thp", a), series("h2", "shp1g", b),
    ]  # fmt: skip
    (result,) = by_host(found, ["thp", "shp1g"], 95.0)
    welch = stats.ttest_ind(b, a, equal_var=False)
    interval = welch.confidence_interval(0.95)
    assert result.difference == pytest.approx((1.0 + b.mean() - a.mean()) / 2)
    assert result.ci == pytest.approx(((1.0 + interval.low) / 2, (1.0 + interval.high) / 2))
    assert result.df == pytest.approx(welch.df)
    assert result.p == pytest.approx(stats.t.sf(abs(result.difference) / result.se, welch.df) * 2)
    assert np.isnan(result.q) and np.isnan(result.q_p)
    assert result.percent == pytest.approx(100 * result.difference / ((10.0 + a.mean()) / 2))
    assert "weighted equally" in result.weighting and "h1" in result.weighting


def test_every_host_constant_gives_the_exact_difference() -> None:
    found = [series(h, v, np.full(4, x)) for h in ("h1", "h2") for v, x in (("a", 3.0), ("b", 5.0))]
    (result,) = by_host(found, ["a", "b"], 95.0)
    assert (result.difference, result.se, result.ci, result.p) == (2.0, 0.0, (2.0, 2.0), 0.0)


def test_a_count_that_never_moved_on_a_has_no_percent_and_the_host_table_says_none() -> None:
    """perf.cpu_migrations is 0 on A's every iteration on both hosts (seen on the real pairs):
    the difference stands, a percent of 0 does not (it raised ZeroDivisionError in lab report)."""
    from lab.report.hosts import host_table

    found = [series(h, "a", np.zeros(5)) for h in ("h1", "h2")]
    found += [series(h, "b", np.array([0.0, 1.0, 0.0, 0.0, 1.0])) for h in ("h1", "h2")]
    (result,) = by_host(found, ["a", "b"], 95.0)
    assert result.difference == pytest.approx(0.4) and math.isnan(result.percent)
    _, _, rows = host_table(result, "perf.cpu_migrations")
    assert rows[-1][5] == "+0.4"
