"""lab.stats.bootmodels against independent references: statsmodels' MixedLM (REML), dense
matrix algebra for REML's information and the contrast's variance, scipy's pooled and paired
t tests on boot means, and a small simulation of twins whose boots differ."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from lab.stats.bootmodels import (
    BootSummary,
    mixed_boots,
    mixed_summaries,
    paired_boots,
    paired_means,
    summarise,
)


def arm(rng: np.random.Generator, mean: float, sizes: list[int], between: float,
        within: float, tag: str) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Samples of boots of these sizes, each boot shifted by N(0, between²), and their labels."""
    values, labels = [], []
    for i, size in enumerate(sizes):
        values.append(mean + rng.normal(0, between) + rng.normal(0, within, size))
        labels += [f"{tag}{i}"] * size
    return np.concatenate(values), np.array(labels)


def statsmodels_fit(va: np.ndarray, la: np.ndarray, vb: np.ndarray, lb: np.ndarray):  # type: ignore[no-untyped-def]
    smf = pytest.importorskip("statsmodels.formula.api")
    import pandas as pd

    frame = pd.DataFrame({"y": np.r_[va, vb], "arm": ["A"] * va.size + ["B"] * vb.size,
                          "boot": np.r_[la, lb]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Powell's method: statsmodels' default (BFGS) stops short of the optimum on some sets
        return smf.mixedlm("y ~ arm", frame, groups=frame["boot"]).fit(reml=True, method="powell")


def dense(va: np.ndarray, la: np.ndarray, vb: np.ndarray, lb: np.ndarray, between: float,
          within: float) -> dict[str, object]:  # fmt: skip
    """The model written out on N × N matrices: V, P, Var(β̂_B − β̂_A) and REML's deviance."""
    y = np.r_[va, vb]
    x = np.c_[
        np.r_[np.ones(va.size), np.zeros(vb.size)], np.r_[np.zeros(va.size), np.ones(vb.size)]
    ]
    groups = np.r_[la, lb]
    z = (groups[:, None] == np.unique(groups)[None, :]).astype(float)
    v = within * np.eye(y.size) + between * z @ z.T
    vi = np.linalg.inv(v)
    xvx = x.T @ vi @ x
    beta = np.linalg.solve(xvx, x.T @ vi @ y)
    r = y - x @ beta
    cov = np.linalg.inv(xvx)
    p = vi - vi @ x @ cov @ x.T @ vi
    deviance = np.linalg.slogdet(v)[1] + np.linalg.slogdet(xvx)[1] + r @ vi @ r
    return {"zz": z @ z.T, "p": p, "phi": cov[0, 0] + cov[1, 1] - 2 * cov[0, 1],
            "deviance": float(deviance), "beta": beta}  # fmt: skip


@pytest.mark.parametrize("seed", [5, 11])
def test_unbalanced_fit_agrees_with_statsmodels_mixedlm(seed: int) -> None:
    rng = np.random.default_rng(seed)
    va, la = arm(rng, 10.0, [12, 20, 7, 15], 1.0, 1.0, "a")
    vb, lb = arm(rng, 11.0, [9, 18, 25], 1.0, 1.0, "b")
    fit = statsmodels_fit(va, la, vb, lb)
    found = mixed_boots(va, la, vb, lb, 0.95)
    assert found.estimate == pytest.approx(float(fit.fe_params.iloc[1]), rel=1e-5)
    assert found.mean_a == pytest.approx(float(fit.fe_params.iloc[0]), rel=1e-6)
    assert found.between == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=1e-3)
    assert found.within == pytest.approx(float(fit.scale), rel=1e-4)
    # statsmodels' bse inverts the whole observed Hessian (fixed and random parameters);
    # the model-based se, (XᵀV⁻¹X)⁻¹ at its components, is what Satterthwaite's df is for
    assert found.se == pytest.approx(float(fit.bse.iloc[1]), rel=2e-3)
    at_theirs = dense(va, la, vb, lb, float(fit.cov_re.iloc[0, 0]), float(fit.scale))
    assert found.se == pytest.approx(math.sqrt(float(at_theirs["phi"])), rel=1e-3)  # type: ignore[arg-type]
    # and ours is REML's optimum: no higher a deviance than at statsmodels' estimate
    ours = dense(va, la, vb, lb, found.between, found.within)
    assert ours["deviance"] <= float(at_theirs["deviance"]) + 1e-7  # type: ignore[arg-type]


def test_no_between_boot_spread_puts_the_component_on_the_boundary_as_statsmodels_does() -> None:
    rng = np.random.default_rng(5)
    va, la = arm(rng, 10.0, [12, 20, 7, 15], 0.0, 1.0, "a")
    vb, lb = arm(rng, 11.0, [9, 18, 25], 0.0, 1.0, "b")
    for _ in range(20):  # a set whose boot means spread less than the iterations say
        found = mixed_boots(va, la, vb, lb, 0.95)
        if found.between == 0:
            break
        va, la = arm(rng, 10.0, [12, 20, 7, 15], 0.0, 1.0, "a")
        vb, lb = arm(rng, 11.0, [9, 18, 25], 0.0, 1.0, "b")
    assert found.between == 0
    fit = statsmodels_fit(va, la, vb, lb)
    assert float(fit.cov_re.iloc[0, 0]) == pytest.approx(0, abs=1e-6)
    assert found.within == pytest.approx(float(fit.scale), rel=1e-5)
    assert found.estimate == pytest.approx(float(fit.fe_params.iloc[1]), rel=1e-6)
    # with no between-boot variance the arms are means of independent samples
    assert found.se == pytest.approx(math.sqrt(found.within * (1 / va.size + 1 / vb.size)))


def test_balanced_df_is_2b_minus_2_on_the_boundary_too() -> None:
    rng = np.random.default_rng(8)
    for _ in range(50):
        va, la = arm(rng, 0.0, [10] * 4, 0.0, 1.0, "a")
        vb, lb = arm(rng, 0.0, [10] * 4, 0.0, 1.0, "b")
        found = mixed_boots(va, la, vb, lb, 0.95)
        if found.between == 0:
            break
    assert found.between == 0
    assert found.df == pytest.approx(6, rel=1e-9)


@pytest.mark.parametrize("between", [0.6, 0.3])  # inside and on the boundary (σ̂²_between = 0)
def test_satterthwaite_df_agrees_with_dense_information_and_a_numeric_gradient(
    between: float,
) -> None:
    # small boots: the within-boot information moves the df (by 3e-5 at 0.6 if mistaken)
    rng = np.random.default_rng(7)
    va, la = arm(rng, 5.0, [2, 5, 3], between, 1.0, "a")
    vb, lb = arm(rng, 5.0, [4, 2, 6, 3], between, 1.0, "b")
    found = mixed_boots(va, la, vb, lb, 0.95)
    assert (found.between > 0) == (between > 0.5)
    at = dense(va, la, vb, lb, found.between, found.within)
    p, zz = at["p"], at["zz"]
    derivs = (zz, np.eye(p.shape[0]))  # type: ignore[union-attr]
    info = np.array([[0.5 * np.trace(p @ di @ p @ dj) for dj in derivs] for di in derivs])  # type: ignore[operator]
    step = 1e-6
    grad = np.array([
        (float(dense(va, la, vb, lb, found.between + step, found.within)["phi"])  # type: ignore[arg-type]
         - float(dense(va, la, vb, lb, found.between - step, found.within)["phi"])) / (2 * step),  # type: ignore[arg-type]
        (float(dense(va, la, vb, lb, found.between, found.within + step)["phi"])  # type: ignore[arg-type]
         - float(dense(va, la, vb, lb, found.between, found.within - step)["phi"])) / (2 * step),  # type: ignore[arg-type]
    ])  # fmt: skip
    phi = float(at["phi"])  # type: ignore[arg-type]
    df = 2 * phi**2 / float(grad @ np.linalg.solve(info, grad))
    assert found.df == pytest.approx(df, rel=1e-7)
    assert 2 < found.df < va.size + vb.size


def test_balanced_mixed_model_is_the_pooled_t_on_boot_means_with_2b_minus_2_df() -> None:
    rng = np.random.default_rng(3)
    boots, per_boot = 5, 30
    va, la = arm(rng, 10.0, [per_boot] * boots, 1.0, 1.0, "a")
    vb, lb = arm(rng, 10.5, [per_boot] * boots, 1.0, 1.0, "b")
    found = mixed_boots(va, la, vb, lb, 0.95)
    means_a, means_b = va.reshape(boots, per_boot).mean(1), vb.reshape(boots, per_boot).mean(1)
    # the ANOVA estimator, by hand: pooled over both arms
    ss = np.sum((va.reshape(boots, -1) - means_a[:, None]) ** 2)
    ss += np.sum((vb.reshape(boots, -1) - means_b[:, None]) ** 2)
    msw = ss / (2 * boots * (per_boot - 1))
    s2p = (np.var(means_a, ddof=1) + np.var(means_b, ddof=1)) / 2
    assert s2p * per_boot > msw  # the interior case the closed form is for
    assert found.within == pytest.approx(msw, rel=1e-6)
    assert found.between == pytest.approx(s2p - msw / per_boot, rel=1e-5)
    assert found.df == pytest.approx(2 * (boots - 1), rel=1e-6)
    pooled = stats.ttest_ind(means_b, means_a, equal_var=True)
    assert found.estimate / found.se == pytest.approx(pooled.statistic, rel=1e-6)
    ci = pooled.confidence_interval(0.95)
    assert found.interval == pytest.approx((ci.low, ci.high), rel=1e-6)


def test_summaries_give_the_same_fit_as_samples_and_integer_boot_codes_work() -> None:
    rng = np.random.default_rng(9)
    va, _ = arm(rng, 3.0, [10, 10, 10], 0.5, 1.0, "a")
    vb, _ = arm(rng, 3.0, [10, 10, 10], 0.5, 1.0, "b")
    codes = np.repeat(np.arange(3), 10)
    by_codes = mixed_boots(va, codes, vb, codes, 0.99)
    sa, sb = summarise(va, codes), summarise(vb, codes)
    assert isinstance(sa, BootSummary)
    assert mixed_summaries(sa, sb, 0.99) == by_codes
    assert by_codes.confidence == 0.99


def test_paired_boots_agree_with_scipy_paired_t_on_boot_means() -> None:
    rng = np.random.default_rng(4)
    shared = rng.normal(0, 2.0, 6)  # what both twins' boot i share under sync
    labels = np.repeat([f"r1/{i}" for i in range(6)], 8)
    va = np.repeat(shared, 8) + rng.normal(0, 1, 48)
    vb = np.repeat(shared, 8) + 0.7 + rng.normal(0, 1, 48)
    found = paired_boots(va, labels, vb, labels, 0.95)
    ma, mb = va.reshape(6, 8).mean(1), vb.reshape(6, 8).mean(1)
    ref = stats.ttest_rel(mb, ma)
    assert found.df == 5
    assert found.estimate == pytest.approx(float(np.mean(mb - ma)))
    assert found.estimate / found.se == pytest.approx(ref.statistic)
    ci = ref.confidence_interval(0.95)
    assert found.interval == pytest.approx((ci.low, ci.high))
    # the shared effect cancels: far narrower than the unpaired reading
    welch = stats.ttest_ind(mb, ma, equal_var=False).confidence_interval(0.95)
    assert found.interval[1] - found.interval[0] < (welch.high - welch.low) / 3


def test_paired_boots_need_as_many_boots_in_each_arm() -> None:
    with pytest.raises(ValueError, match="as many boots"):
        paired_means(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0]), 0.95)
    with pytest.raises(ValueError, match="two boots"):
        paired_means(np.array([1.0]), np.array([2.0]), 0.95)


def test_the_mixed_model_needs_two_boots_and_within_boot_spread() -> None:
    with pytest.raises(ValueError, match="two boots"):
        mixed_boots(np.arange(10.0), np.zeros(10, dtype=int), np.arange(10.0),
                    np.repeat([0, 1], 5), 0.95)  # fmt: skip
    with pytest.raises(ValueError, match="within a boot"):
        mixed_boots(np.array([1.0, 2.0]), np.array([0, 1]), np.array([1.0, 2.0]),
                    np.array([0, 1]), 0.95)  # fmt: skip


def test_mixed_model_covers_at_three_boots_where_boots_differ() -> None:
    """A small version of bench/boot_models.py: 3 boots × 20 per arm, ICC 0.2, A/A twins."""
    rng = np.random.default_rng(40)
    studies, boots, per_boot, icc = 400, 3, 20, 0.2
    effects = rng.normal(0, math.sqrt(icc), (studies, 2, boots, 1))
    x = effects + rng.normal(0, math.sqrt(1 - icc), (studies, 2, boots, per_boot))
    means = x.mean(axis=3)
    ss = ((x - means[..., None]) ** 2).sum(axis=(2, 3))
    sizes = np.full(boots, per_boot)
    covered = 0
    for r in range(studies):
        fit = mixed_summaries(BootSummary(sizes, means[r, 0], float(ss[r, 0])),
                              BootSummary(sizes, means[r, 1], float(ss[r, 1])), 0.95)  # fmt: skip
        covered += fit.interval[0] <= 0 <= fit.interval[1]
    # binomial sd at 95 % over 400 studies: 1.1 %; the iterations' interval covers ~45 %
    assert 0.92 <= covered / studies <= 0.99
