"""The confidence sequence against closed forms and numerical integration; the stopping rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from lab.core.errors import UsageError
from lab.stats.sequential import (
    StopRule,
    check_stop,
    classic_obrien_fleming,
    confidence_sequence,
    crossing_probability,
    obrien_fleming_boundaries,
    parse_until,
    radius,
    tuning,
)


def mixture_by_integration(y: np.ndarray, a: float) -> float:
    """Lai's mixture likelihood ratio, integrated numerically (Simpson's rule on a grid).

    The ratio of the densities of the scale-invariant statistic of y (Wijsman's integral over
    the scale c, with c^(t−1) dc) under a shift δ·σ, mixed over δ ~ N(0, 1/a), and under no
    shift; Σ(c·yᵢ − δ)² is expanded as c²·Σy² − 2cδ·Σy + tδ².
    """
    t, total, squares = y.size, float(y.sum()), float(np.dot(y, y))
    c = np.linspace(1e-9, 12 * math.sqrt(t / squares), 3001)[:, None]
    delta = np.linspace(-12, 12, 3001)[None, :]

    def log_density(shifted: np.ndarray) -> np.ndarray:
        return (t - 1) * np.log(c) - shifted / 2

    peak = float(np.max(log_density(c**2 * squares)))  # keeps exp() finite
    shifted = c**2 * squares - 2 * c * delta * total + t * delta**2
    inner = np.exp(log_density(shifted) - peak) * stats.norm.pdf(delta, 0, 1 / math.sqrt(a))
    numerator = integrate.simpson(integrate.simpson(inner, x=delta[0], axis=1), x=c[:, 0])
    denominator = integrate.simpson(np.exp(log_density(c**2 * squares) - peak)[:, 0], x=c[:, 0])
    return float(numerator / denominator)


@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_the_interval_ends_where_the_mixture_reaches_one_over_alpha(confidence: float) -> None:
    rng = np.random.default_rng(7)
    a_values, b_values = rng.normal(10, 1, 8), rng.normal(10.5, 1, 8)
    seq = confidence_sequence(a_values, b_values, confidence, tuned_for=6, batch_size=1)
    d = b_values - a_values
    prior_precision = tuning(confidence, 6)
    for end in seq.diff_ci:
        ratio = mixture_by_integration(d - end, prior_precision)
        assert ratio == pytest.approx(1 / (1 - confidence), rel=1e-5)
    inside = mixture_by_integration(d - seq.diff, prior_precision)
    assert inside < 1 / (1 - confidence)


def test_large_n_is_robbins_normal_mixture() -> None:
    """For large t the variance is known in effect: Robbins' √(2(t+a)/t²·log(√((t+a)/a)/α))."""
    for t, tuned in ((10**6, 10**5), (10**7, 10**6)):
        a = tuning(0.99, tuned)
        robbins = math.sqrt(2 * (t + a) / t**2 * math.log(math.sqrt((t + a) / a) / 0.01))
        assert float(radius(t, 0.99, tuned)) == pytest.approx(robbins, rel=1e-3)


def test_always_wider_than_the_fixed_n_t_interval() -> None:
    t = np.arange(2, 2001)
    for confidence in (0.95, 0.9999):
        fixed = stats.t.ppf(0.5 + confidence / 2, t - 1) / np.sqrt(t)
        assert np.all(radius(t, confidence, 100) > fixed)


def test_tightest_near_the_tuned_n() -> None:
    at = float(radius(200, 0.95, 200))
    assert at < float(radius(200, 0.95, 50)) and at < float(radius(200, 0.95, 800))


def test_unbounded_until_enough_samples() -> None:
    r = radius(np.arange(1, 40), 0.9999, 200)
    assert np.isinf(r[0]) and np.isinf(r[1])  # n = 1 and 2 at α = 10⁻⁴
    assert np.all(np.isfinite(r[-5:])) and np.all(np.diff(r[np.isfinite(r)]) < 0)


def test_interval_by_hand() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(100, 2, 51), rng.normal(99, 2, 50)  # the 51st A sample waits for its B
    seq = confidence_sequence(a.tolist(), b.tolist(), 99, tuned_for=25, batch_size=1)
    d = b - a[:50]
    half = d.std(ddof=1) * float(radius(50, 0.99, 25))
    assert seq.n == 50 and seq.confidence == 0.99
    assert seq.diff_ci == pytest.approx((d.mean() - half, d.mean() + half))
    ma, mb = a[:50].mean(), b.mean()
    log_half = float(radius(50, 0.99, 25)) * np.std(b / mb - a[:50] / ma, ddof=1)
    expected = [100 * math.expm1(math.log(mb / ma) + s * log_half) for s in (-1, 1)]
    assert seq.percent_ci == pytest.approx(expected)
    assert seq.percent == pytest.approx((mb / ma - 1) * 100)
    assert seq.method == "Lai's t confidence sequence at 99 %, tuned for n=25"
    # by default on means of batches: 4 pairs a batch (4³ ≥ 50), 12 batches, 48 pairs
    batched = confidence_sequence(a.tolist(), b.tolist(), 99, tuned_for=25)
    means = d[:48].reshape(12, 4).mean(axis=1)
    half = means.std(ddof=1) * float(radius(12, 0.99, 25 // 4))
    assert (batched.batch_size, batched.batches) == (4, 12)
    assert batched.diff_ci == pytest.approx((means.mean() - half, means.mean() + half))
    assert batched.method == (
        "Lai's t confidence sequence on means of batches of 4 pairs at 99 %, tuned for n=25"
    )


def test_too_few_or_constant_samples_give_no_interval() -> None:
    assert math.isnan(confidence_sequence([1.0], [2.0], 95, 10).diff)
    flat = confidence_sequence([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], 95, 10)
    assert flat.diff == 1.0 and math.isinf(flat.halfwidth)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("verdict", StopRule("verdict", 200)),
        ("ci-halfwidth<0.5%", StopRule("ci-halfwidth", 200, 0.005, True)),
        (" ci-halfwidth < 2 % ", StopRule("ci-halfwidth", 200, 0.02, True)),
        ("ci-halfwidth<0.25", StopRule("ci-halfwidth", 200, 0.25, False)),
    ],
)
def test_parse_until(text: str, rule: StopRule) -> None:
    got = parse_until(text, 200)
    assert (got.kind, got.max_n, got.relative) == (rule.kind, rule.max_n, rule.relative)
    assert got.limit == pytest.approx(rule.limit) if rule.limit else got.limit is None
    assert got.tuning_n == 100


@pytest.mark.parametrize("text", ["verdicts", "ci-halfwidth>1%", "ci-halfwidth<0", "sd<1%", ""])
def test_parse_until_refuses_with_the_forms(text: str) -> None:
    with pytest.raises(UsageError, match="until") as err:
        parse_until(text, 100)
    assert "ci-halfwidth<0.5%" in str(err.value)


def test_parse_until_needs_a_maximum() -> None:
    with pytest.raises(UsageError, match="--n"):
        parse_until("verdict", 1)


def test_stop_on_a_verdict_names_the_method() -> None:
    rng = np.random.default_rng(11)
    a, b = rng.normal(100, 1, 200), rng.normal(95, 1, 200)  # B 5 % lower: faster
    rule = parse_until("verdict", 200)
    first = next(n for n in range(1, 201) if check_stop(rule, a[:n], b[:n], 95, 0.01).stop)
    decision = check_stop(rule, a[:first], b[:first], 95, 0.01, "lower", ("thp", "shp1g"))
    assert decision.stop and decision.verdict.outcome == "faster"
    assert first < 30 and decision.interval.n == first  # 24: batches of 3 pairs
    assert decision.method.startswith("stopped by an anytime-valid confidence sequence (Lai")
    assert "shp1g is faster than thp" in decision.reason
    before = check_stop(rule, a[: first - 1], b[: first - 1], 95, 0.01)
    assert not before.stop and "inconclusive" in before.reason


def test_equivalent_also_stops_and_the_maximum_always_does() -> None:
    rng = np.random.default_rng(12)
    a, b = rng.normal(100, 0.5, 400), rng.normal(100, 0.5, 400)
    rule = parse_until("verdict", 400)
    stops = [n for n in range(2, 401) if check_stop(rule, a[:n], b[:n], 95, 0.01).stop]
    assert stops and check_stop(rule, a[: stops[0]], b[: stops[0]], 95, 0.01).verdict.outcome == (
        "equivalent"
    )
    tight = parse_until("verdict", 30)
    last = check_stop(tight, a[:30], b[:30], 95, 0.001)
    assert last.stop and last.method.startswith("stopped at the maximum n")
    assert "higher --n" in last.reason


def test_halfwidth_rule_relative_and_absolute() -> None:
    rng = np.random.default_rng(13)
    a, b = rng.normal(100, 1, 300), rng.normal(100, 1, 300)
    rule = parse_until("ci-halfwidth<0.5%", 300)
    n = next(n for n in range(2, 301) if check_stop(rule, a[:n], b[:n], 95, 0.01).stop)
    seq = confidence_sequence(a[:n], b[:n], 95, 150)
    prev = confidence_sequence(a[: n - 1], b[: n - 1], 95, 150)
    assert seq.percent_halfwidth < 0.5 <= prev.percent_halfwidth
    assert "below 0.5 %" in check_stop(rule, a[:n], b[:n], 95, 0.01).reason
    absolute = parse_until("ci-halfwidth<0.5", 300)
    m = next(n for n in range(2, 301) if check_stop(absolute, a[:n], b[:n], 95, 0.01).stop)
    assert m == n or abs(m - n) <= 3  # 0.5 % of a mean of 100 is 0.5 units
    assert not check_stop(rule, [1.0], [1.0], 95, 0.01).stop


def test_lan_demets_obrien_fleming_boundaries_are_the_published_ones() -> None:
    """K = 5 equal looks, α = 0.05 two-sided: DeMets & Lan (1994) Table 1, gsDesign sfLDOF."""
    got = obrien_fleming_boundaries(5, 95)
    assert got == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=1e-3)
    assert crossing_probability(got, 5) == pytest.approx(0.05, abs=1e-6)


def test_classic_obrien_fleming_boundaries_are_the_published_ones() -> None:
    """C_B(5, 0.05) = 2.040 (Jennison & Turnbull 2000, Table 2.3), times √(5/k)."""
    got = classic_obrien_fleming(5, 95)
    assert got == pytest.approx([4.562, 3.226, 2.634, 2.281, 2.040], abs=2e-3)


def test_boundaries_spend_alpha_on_simulated_brownian_paths() -> None:
    """Monte Carlo, independent of the recursion: Z_k = S(t_k)/√t_k for Brownian motion S."""
    fractions = [0.3, 0.55, 0.8, 1.0]
    bounds = obrien_fleming_boundaries(fractions, 99)
    rng = np.random.default_rng(8)
    steps = rng.standard_normal((400_000, 4)) * np.sqrt(np.diff([0.0, *fractions]))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    crossed = int(np.any(np.abs(z) >= bounds, axis=1).sum())
    assert stats.binomtest(crossed, 400_000, 0.01).pvalue > 0.001
    assert crossing_probability(bounds, fractions) == pytest.approx(0.01, abs=1e-6)


def test_looks_must_increase() -> None:
    with pytest.raises(UsageError, match="increasing information fractions"):
        obrien_fleming_boundaries([0.5, 0.4, 1.0], 95)


def test_a_stop_at_the_maximum_gives_the_verdict_once_and_the_maximum_in_the_rules_unit() -> None:
    # issue 40 §3: it gave the inconclusive interval twice and called 40 balanced blocks
    # "the maximum of 40 iterations"
    rng = np.random.default_rng(3)
    a, b = rng.normal(100, 5, 40), rng.normal(100, 5, 40)
    rule = parse_until("verdict", 40)
    decision = check_stop(rule, a, b, 99.99, 0.01, "lower", ("thp", "shp1g"), "balanced blocks")
    assert decision.stop and decision.verdict.outcome == "inconclusive"
    assert decision.reason.count(decision.verdict.text) == 1
    assert "the most balanced blocks the run can give, 40, are reached" in decision.reason
    assert "iterations is reached" not in decision.reason
