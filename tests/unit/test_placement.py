"""The placement model against cell means, pooled variances and scipy's t quantiles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lab.core.errors import UsageError
from lab.stats.placement import placement_effects


def design(sizes: dict[tuple[str, str], int], seed: int) -> tuple[np.ndarray, list[str], list[str]]:
    """Samples of every (variant, placement) cell: thp 100, shp1g 2 lower, placement b +1."""
    rng = np.random.default_rng(seed)
    values, variants, places = [], [], []
    for (variant, place), m in sizes.items():
        mean = (
            100
            - 2 * (variant == "shp1g")
            + 1 * (place == "b")
            + 0.5 * (variant == "shp1g" and place == "b")
        )
        values.extend(rng.normal(mean, 1, m))
        variants.extend([variant] * m)
        places.extend([place] * m)
    return np.array(values), variants, places


BALANCED = {("thp", "a"): 40, ("shp1g", "a"): 40, ("thp", "b"): 40, ("shp1g", "b"): 40}


def cell(values: np.ndarray, variants: list[str], places: list[str], v: str, p: str) -> np.ndarray:
    return values[(np.array(variants) == v) & (np.array(places) == p)]


def test_balanced_effects_are_differences_of_cell_means() -> None:
    y, v, p = design(BALANCED, 1)
    got = placement_effects(y, v, p, 95)
    m = {(a, b): cell(y, v, p, a, b) for a in ("thp", "shp1g") for b in ("a", "b")}
    mean = {k: x.mean() for k, x in m.items()}
    variant = (
        (mean["shp1g", "a"] - mean["thp", "a"]) + (mean["shp1g", "b"] - mean["thp", "b"])
    ) / 2
    place = ((mean["thp", "b"] - mean["thp", "a"]) + (mean["shp1g", "b"] - mean["shp1g", "a"])) / 2
    inter = (mean["shp1g", "b"] - mean["thp", "b"]) - (mean["shp1g", "a"] - mean["thp", "a"])
    assert got.variant.estimate == pytest.approx(variant)
    assert got.placement.estimate == pytest.approx(place)
    assert got.interaction is not None and got.interaction.estimate == pytest.approx(inter)
    # SEs from the pooled within-cell variance: σ²/m for main effects, 4σ²/m for the interaction
    pooled = np.mean([x.var(ddof=1) for x in m.values()])
    assert got.df == 156 and got.residual_sd == pytest.approx(math.sqrt(pooled))
    assert got.variant.se == pytest.approx(math.sqrt(pooled / 40))
    assert got.interaction.se == pytest.approx(math.sqrt(4 * pooled / 40))
    half = stats.t.ppf(0.975, 156) * math.sqrt(pooled / 40)
    assert got.placement.ci == pytest.approx((place - half, place + half))
    assert got.variant.p == pytest.approx(
        2 * stats.t.sf(abs(variant) / math.sqrt(pooled / 40), 156)
    )
    assert got.variant.percent == pytest.approx(
        variant / ((mean["thp", "a"] + mean["thp", "b"]) / 2) * 100
    )
    assert got.cells[("shp1g", "b")] == 40 and got.variant.name == "shp1g − thp"


def test_intervals_cover_the_true_effects_95_percent_of_the_time() -> None:
    truth = {"variant": -1.75, "placement": 1.25, "interaction": 0.5}  # see design()
    covered = dict.fromkeys(truth, 0)
    for seed in range(400):
        y, v, p = design({k: 50 for k in BALANCED}, 100 + seed)
        got = placement_effects(y, v, p, 95)
        for name, value in truth.items():
            effect = getattr(got, name)
            covered[name] += effect.ci[0] < value < effect.ci[1]
    for count in covered.values():
        assert stats.binomtest(count, 400, 0.95).pvalue > 0.001


def test_unbalanced_cells_use_the_mean_of_simple_effects() -> None:
    sizes = {("thp", "a"): 50, ("shp1g", "a"): 20, ("thp", "b"): 10, ("shp1g", "b"): 30}
    y, v, p = design(sizes, 3)
    got = placement_effects(y, v, p, 95, baseline="thp", first_placement="a")
    m = {k: cell(y, v, p, *k) for k in sizes}
    mean = {k: x.mean() for k, x in m.items()}
    variant = (
        (mean["shp1g", "a"] - mean["thp", "a"]) + (mean["shp1g", "b"] - mean["thp", "b"])
    ) / 2
    within = sum(((x - x.mean()) ** 2).sum() for x in m.values()) / (110 - 4)
    assert got.variant.estimate == pytest.approx(variant)
    assert got.variant.se == pytest.approx(
        math.sqrt(within / 4 * sum(1 / n for n in sizes.values()))
    )


def test_additive_model_has_one_more_degree_of_freedom() -> None:
    y, v, p = design(BALANCED, 4)
    full, additive = placement_effects(y, v, p, 95), placement_effects(y, v, p, 95, additive=True)
    assert additive.interaction is None and additive.df == full.df + 1
    assert additive.variant.estimate == pytest.approx(full.variant.estimate)  # balanced
    assert "additive" in additive.method


def test_baseline_order_flips_the_sign() -> None:
    y, v, p = design(BALANCED, 5)
    a = placement_effects(y, v, p, 95, baseline="thp")
    b = placement_effects(y, v, p, 95, baseline="shp1g", first_placement="b")
    assert b.variant.estimate == pytest.approx(-a.variant.estimate)
    assert b.placement.estimate == pytest.approx(-a.placement.estimate)


def test_a_missing_cell_says_to_swap() -> None:
    y, v, p = design({("thp", "a"): 5, ("shp1g", "a"): 5, ("thp", "b"): 5, ("shp1g", "b"): 5}, 6)
    with pytest.raises(UsageError, match="shp1g on placement b") as err:
        placement_effects(y[:15], v[:15], p[:15], 95)
    assert "Swap the CPU sets" in str(err.value)
    with pytest.raises(UsageError, match="exactly two variants"):
        placement_effects(y, ["x"] * 5 + v[5:], p, 95)
    with pytest.raises(UsageError, match="no variant 'nope'"):
        placement_effects(y, v, p, 95, baseline="nope")
