"""``lab plan`` for a factorial (issue 41), the math of lab.stats.factorialplan: checked against
the textbook variance of a balanced incomplete block design, an AR(1) simulation, and 300
simulated studies fitted with statsmodels OLS (block + factors, sum-to-zero) whose power must
match the promised one within a Monte Carlo band."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from patsy import dmatrix
from scipy import stats

from lab.core.errors import UsageError
from lab.stats.factorialplan import (
    contrast_power,
    layout_of,
    plan_factorial,
    sd_from_cv,
    variance_factor,
)
from lab.stats.pairblocks import pair_blocks

CELLS_2X2 = ["A-lo.B-lo", "A-lo.B-hi", "A-hi.B-lo", "A-hi.B-hi"]
FACTORS_2X2 = {"A": ["lo", "hi"], "B": ["lo", "hi"]}


def layout_2x2() -> object:
    return layout_of(FACTORS_2X2, pair_blocks(CELLS_2X2, seed=3))


def test_the_variance_of_a_main_effect_is_the_bibd_textbook_one() -> None:
    """A BIBD with k = 2, λ = 1 over v cells: Var(Σcᵢτᵢ) = kσ²/(λv)·Σcᵢ² (Montgomery, "Design
    and Analysis of Experiments", §4.4); q_A = ¼(τ_hh + τ_hl − τ_lh − τ_ll) has Σc² = ¼, so
    Var(q̂_A) = 2/4 · ¼ = 0.125 σ² with one sample per cell per block. Unblocked (one block of
    all four cells, each once) it is σ²/4 (Jain's 2² design: σ²/2^k)."""
    plan = plan_factorial(layout_2x2(), 1.05, 0.02, 0.95, 0.8, terms=["A", "B", "A:B"])
    assert [t.variance for t in plan.terms] == pytest.approx([0.125] * 3)
    assert plan.family == 3 and plan.reported == ("A", "B", "AB") and plan.blocks == 6
    assert plan.units == 12 and plan.cell_blocks == (3, 3, 3, 3)
    one_block = plan_factorial(layout_of(FACTORS_2X2, [CELLS_2X2]), 1.05, 0.02, 0.95, 0.8)
    assert [t.variance for t in one_block.terms] == pytest.approx([0.25, 0.25])


def test_an_incomplete_design_loses_its_interaction_and_counts_the_family_compare_reports() -> None:
    """page × prealloc as the lab runs it: 1 GiB pages on demand are left out, three cells in
    three pair blocks; the interaction cannot be estimated, so compare reports m = 2 effects,
    and planning for the interaction is refused saying why."""
    cells = ["page-thp.prealloc-off", "page-thp.prealloc-on", "page-1g.prealloc-on"]
    layout = layout_of({"page": ["thp", "1g"], "prealloc": ["off", "on"]},
                       pair_blocks(cells, seed=1))  # fmt: skip
    plan = plan_factorial(layout, 1.05, 0.02, 99.99, 0.9)
    assert plan.not_estimable == ("page:prealloc",) and plan.family == 2
    assert [t.term for t in plan.terms] == ["page", "prealloc"]
    with pytest.raises(UsageError, match="not estimable"):
        plan_factorial(layout, 1.05, 0.02, 99.99, 0.9, terms=["page:prealloc"])
    with pytest.raises(UsageError, match="no term of the design"):
        plan_factorial(layout, 1.05, 0.02, 99.99, 0.9, terms=["memory"])


def test_the_planned_n_is_the_smallest_that_reaches_the_power() -> None:
    plan = plan_factorial(layout_2x2(), 1.02, 0.02, 99, 0.9)
    (a, b) = plan.terms
    assert a.n == b.n == plan.n > 2 and a.power >= 0.9
    below = contrast_power(plan.n - 1, a.variance, math.log(1.02) / 2, 0.02, plan.units, 9,
                           plan.family, 0.99)  # fmt: skip
    assert below < 0.9
    # a 2 % effect needs about (ln 1.02 / ln 1.01)² ≈ 4 times fewer samples than a 1 % one
    small = plan_factorial(layout_2x2(), 1.01, 0.02, 99, 0.9).n
    assert 3.5 < small / plan.n < 4.5


def test_the_promised_power_is_what_300_simulated_studies_deliver() -> None:
    """Studies of the 2 × 2 in six pair blocks with block offsets, A changing the metric by 2 %
    (B and AB none), n samples per cell per block, fitted with statsmodels OLS (block + A*B,
    sum-to-zero) on log values: P(the Bonferroni interval of q_A at 99 % over m = 3 lies above
    0) matches contrast_power within 3.5 Monte Carlo SEs, at the planned n and at half of it."""
    plan = plan_factorial(layout_2x2(), 1.02, 0.02, 99, 0.9)
    term = plan.terms[0]
    rng = np.random.default_rng(41)
    for n in (plan.n, max(2, plan.n // 2)):
        rows = [(b, cell) for b, block in enumerate(plan_blocks()) for cell in block
                for _ in range(n)]  # fmt: skip
        frame = pd.DataFrame({
            "blk": [str(b) for b, _ in rows],
            "A": [c.split(".")[0] for _, c in rows], "B": [c.split(".")[1] for _, c in rows],
        })  # fmt: skip
        x = dmatrix("C(blk, Sum) + C(A, Sum) * C(B, Sum)", frame, return_type="dataframe")
        column = next(c for c in x.columns if c.startswith("C(A, Sum)") and ":" not in c)
        sign = 1.0 if "A-hi" in column else -1.0  # Sum's column is +1 at its first level
        high = (frame["A"] == "A-hi").to_numpy()
        offsets = rng.normal(0, 0.05, 6)
        crit = stats.t.ppf(1 - 0.01 / (2 * 3), len(rows) - 9)
        hits = 0
        for _ in range(300):
            y = (offsets[frame["blk"].astype(int)] + np.where(high, math.log(1.02), 0.0)
                 + rng.normal(0, 0.02, len(rows)))  # fmt: skip
            fit = sm.OLS(y, x).fit()
            hits += sign * fit.params[column] / fit.bse[column] > crit
        promised = contrast_power(n, term.variance, term.effect_log, 0.02, plan.units, 9,
                                  plan.family, 0.99)  # fmt: skip
        band = 3.5 * math.sqrt(promised * (1 - promised) / 300) + 0.01
        assert abs(hits / 300 - promised) < band, (n, hits / 300, promised)


def plan_blocks() -> list[tuple[str, str]]:
    return pair_blocks(CELLS_2X2, seed=3)


def test_the_ar1_factor_is_the_variance_of_a_simulated_mean() -> None:
    rng = np.random.default_rng(5)
    r, n = 0.5, 20
    e = rng.normal(0, 1, (40_000, n))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0]
    for i in range(1, n):  # stationary AR(1) with unit marginal variance
        x[:, i] = r * x[:, i - 1] + math.sqrt(1 - r * r) * e[:, i]
    assert variance_factor(n, r) == pytest.approx(x.mean(axis=1).var() * n, rel=0.03)
    assert variance_factor(n, 0.0) == variance_factor(n, -0.3) == 1.0
    # autocorrelation costs samples
    plan = plan_factorial(layout_2x2(), 1.02, 0.02, 99, 0.9)
    assert plan_factorial(layout_2x2(), 1.02, 0.02, 99, 0.9, autocorrelation=0.5).n > plan.n


def test_a_multilevel_factor_is_planned_at_its_least_powerful_level() -> None:
    """page (thp, 2m, 1g) × prealloc on: every level's effect is reported, each its own
    contrast; E is the ratio compare prints for a level (exp(q)), so q = ln E."""
    cells = [f"page-{p}.prealloc-{a}" for p in ("thp", "2m", "1g") for a in ("off", "on")]
    layout = layout_of({"page": ["thp", "2m", "1g"], "prealloc": ["off", "on"]},
                       pair_blocks(cells, seed=2))  # fmt: skip
    plan = plan_factorial(layout, 1.05, 0.02, 99.99, 0.9)
    page = plan.terms[0]
    assert page.levels == ("thp", "2m", "1g") and page.effect_log == pytest.approx(math.log(1.05))
    assert plan.family == 3 + 1 + 3  # page ×3 levels, prealloc, page:prealloc ×3


def test_cv_is_turned_into_the_log_scale_sd() -> None:
    assert sd_from_cv(0.02) == pytest.approx(0.02, rel=1e-3)
    assert sd_from_cv(1.0) == pytest.approx(math.sqrt(math.log(2)))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"effect": 1.0}, "no effect to plan for"),
        ({"effect": 0.0}, "no effect to plan for"),
        ({"sd_log": 0.0}, "sd 0 must be above 0"),
        ({"power": 1.0}, "power 1 must lie between"),
        ({"autocorrelation": 1.0}, "autocorrelation 1 must lie"),
    ],
)
def test_a_plan_of_nothing_is_refused(kwargs: dict[str, float], message: str) -> None:
    args: dict[str, float] = {"effect": 1.05, "sd_log": 0.02, "power": 0.9}
    args.update(kwargs)
    with pytest.raises(UsageError, match=message):
        plan_factorial(layout_2x2(), args.pop("effect"), args.pop("sd_log"), 99,  # type: ignore[arg-type]
                       args.pop("power"), **args)  # fmt: skip
