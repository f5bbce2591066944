"""The boot as the unit of replication (lab.stats.boots), checked against references written
here: a numpy one-way ANOVA, statsmodels' MixedLM, scipy's Welch test on boot means computed
here, and a simulation of twins whose boots differ."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from lab.stats.boots import boot_difference, boot_verdict, components
from lab.stats.verdict import Outcome, Threshold


def two_level(
    rng: np.random.Generator, sizes: list[int], between: float, within: float, mean: float = 100.0
) -> tuple[np.ndarray, np.ndarray]:
    """Values with boot effects of variance ``between`` and noise of variance ``within``,
    ``sizes[i]`` samples in boot i, and each sample's boot label."""
    effects = rng.normal(0, math.sqrt(between), len(sizes))
    labels = np.repeat([f"b{i}" for i in range(len(sizes))], sizes)
    values = mean + np.repeat(effects, sizes) + rng.normal(0, math.sqrt(within), sum(sizes))
    return values, labels


def test_balanced_components_are_the_textbook_anova() -> None:
    rng = np.random.default_rng(1)
    k, n = 12, 25
    values, labels = two_level(rng, [n] * k, between=4.0, within=1.0)
    table = values.reshape(k, n)  # the reference: the balanced ANOVA, by hand
    msb = n * table.mean(axis=1).var(ddof=1)
    msw = table.var(axis=1, ddof=1).mean()
    between = (msb - msw) / n
    found = components(values, labels)
    assert found.boots == k and found.samples == k * n and found.n0 == pytest.approx(n)
    assert found.within == pytest.approx(msw)
    assert found.between == pytest.approx(between)
    assert found.icc == pytest.approx(between / (between + msw))
    assert found.effective_samples == pytest.approx(k * n / (1 + (n - 1) * found.icc))
    np.testing.assert_allclose(found.means, table.mean(axis=1))


def test_unbalanced_components_agree_with_statsmodels_mixedlm() -> None:
    statsmodels = pytest.importorskip("statsmodels.formula.api")
    import pandas as pd

    rng = np.random.default_rng(2)
    sizes = list(rng.integers(15, 60, 30))
    values, labels = two_level(rng, sizes, between=2.0, within=3.0)
    frame = pd.DataFrame({"y": values, "boot": labels})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = statsmodels.mixedlm("y ~ 1", frame, groups=frame["boot"]).fit(reml=True)
    found = components(values, labels)
    # REML and the method of moments are different estimators of the same components
    assert found.within == pytest.approx(fit.scale, rel=0.02)
    assert found.between == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=0.1)


def test_the_icc_of_a_large_sample_is_the_true_one_including_zero() -> None:
    rng = np.random.default_rng(3)
    for between, within in ((1.0, 3.0), (0.0, 1.0), (9.0, 1.0)):
        values, labels = two_level(rng, [40] * 400, between, within)
        truth = between / (between + within)
        assert components(values, labels).icc == pytest.approx(truth, abs=0.03)


def test_one_boot_has_no_between_boot_variance() -> None:
    values = np.array([1.0, 2.0, 3.0, 4.0])
    found = components(values, ["x"] * 4)
    assert found.boots == 1 and math.isnan(found.between) and math.isnan(found.icc)
    assert found.within == pytest.approx(np.var(values, ddof=1))


def test_the_interval_is_welchs_on_the_boot_means() -> None:
    rng = np.random.default_rng(4)
    a, la = two_level(rng, [20, 30, 25, 20], between=4.0, within=1.0, mean=100)
    b, lb = two_level(rng, [25, 25, 40], between=4.0, within=1.0, mean=95)
    means_a = np.array([a[la == x].mean() for x in dict.fromkeys(la)])
    means_b = np.array([b[lb == x].mean() for x in dict.fromkeys(lb)])
    reference = stats.ttest_ind(means_b, means_a, equal_var=False)
    ci = reference.confidence_interval(0.95)
    found = boot_difference(components(a, la).means, components(b, lb).means, 0.95)
    assert (found.boots_a, found.boots_b) == (4, 3)
    assert found.diff_ci == pytest.approx((ci.low, ci.high))
    assert found.df == pytest.approx(reference.df)
    assert found.diff == pytest.approx(means_b.mean() - means_a.mean())


def test_two_boots_are_needed_in_each_arm() -> None:
    with pytest.raises(ValueError, match="two boots"):
        boot_difference(np.array([1.0]), np.array([1.0, 2.0]), 0.95)


def simulate(
    rng: np.random.Generator, reps: int, boots: int, per_boot: int, icc: float
) -> tuple[np.ndarray, np.ndarray]:
    """``reps`` pairs of arms with the same true mean 100 (total variance 1): their samples,
    shape (reps, 2, boots, per_boot)."""
    shape = (reps, 2, boots, 1)
    effects = rng.normal(0, math.sqrt(icc), shape)
    noise = rng.normal(0, math.sqrt(1 - icc), (reps, 2, boots, per_boot))
    return 100 + effects + noise, np.repeat(np.arange(boots), per_boot)


def test_the_boot_unit_interval_covers_where_the_iteration_one_does_not() -> None:
    """Between-boot variance dominating (ICC 0.3, 6 boots of 40 per arm, no true difference):
    Welch's interval from iterations (computed here) covers 0 far less often than asked,
    while the lab's interval from boot means covers it at about the asked 95 %."""
    rng = np.random.default_rng(20131104)
    reps, boots, per_boot = 1000, 6, 40
    x, labels = simulate(rng, reps, boots, per_boot, icc=0.3)
    flat = x.reshape(reps, 2, boots * per_boot)
    # the iteration-level reference: Welch on every sample, vectorised
    m, v, n = flat.mean(axis=2), flat.var(axis=2, ddof=1), boots * per_boot
    se2 = v / n
    df = se2.sum(axis=1) ** 2 / (se2**2 / (n - 1)).sum(axis=1)
    half = stats.t.ppf(0.975, df) * np.sqrt(se2.sum(axis=1))
    iteration_covers = np.abs(m[:, 1] - m[:, 0]) <= half
    boot_covers = np.empty(reps, dtype=bool)
    ratio_covers = np.empty(reps, dtype=bool)
    for r in range(reps):
        a, b = (components(flat[r, j], labels) for j in (0, 1))
        found = boot_difference(a.means, b.means, 0.95)
        boot_covers[r] = found.diff_ci[0] <= 0 <= found.diff_ci[1]
        ratio_covers[r] = found.ratio_ci[0] <= 1 <= found.ratio_ci[1]
    assert iteration_covers.mean() < 0.6
    assert 0.93 <= boot_covers.mean() <= 0.97
    assert 0.93 <= ratio_covers.mean() <= 0.97


def test_the_boot_verdict_says_its_unit_and_can_be_inconclusive_where_iterations_are_not() -> None:
    rng = np.random.default_rng(6)
    a, la = two_level(rng, [50] * 3, between=25.0, within=1.0, mean=100)
    b, lb = two_level(rng, [50] * 3, between=25.0, within=1.0, mean=90)
    pair = boot_verdict(("A", components(a, la)), ("B", components(b, lb)), "lower",
                        Threshold(0.01), 0.9999)  # fmt: skip
    assert pair.verdict.outcome == Outcome.INCONCLUSIVE
    assert "[unit: boot, 3 and 3 boot means]" in pair.verdict.text
    # the same samples read as 150 independent iterations per arm: "faster"
    welch = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.9999)
    assert welch.high < -0.01 * a.mean()


def test_integer_codes_group_as_text_labels_do_and_unused_codes_are_no_boot() -> None:
    rng = np.random.default_rng(9)
    values, labels = two_level(rng, [5, 9, 7], between=2.0, within=1.0)
    codes = np.array([{"b0": 0, "b1": 2, "b2": 5}[x] for x in labels])  # 1, 3, 4: cut away
    by_text, by_code = components(values, labels), components(values, codes)
    assert by_code.boots == 3 and list(by_code.sizes) == [5, 9, 7]
    assert (by_code.between, by_code.within) == pytest.approx((by_text.between, by_text.within))
