"""The variant effect and the placement effect of a counterbalanced CPU-set swap, separately.

Twins pinned to different CPU sets differ by their variant *and* by where they run (a core
nearer the memory controller, a sibling busy with interrupts). Swapping the CPU sets part-way
through (placement "a" before, "b" after) lets a two-way linear model tell the two apart:

    y = μ + β_v·v + β_p·p + β_vp·v·p + ε,   v = ∓½ for variant A/B, p = ∓½ for placement a/b.

With these ±½ codes β_v is the variant effect averaged over the two placements (the mean of
the B − A differences of cell means), β_p the placement effect averaged over the variants,
and β_vp how much the variant effect changes with the placement. It is fitted by ordinary
least squares (``numpy.linalg.lstsq``); each effect's interval is β ± t(1−α/2, n−4)·SE with
SE from σ̂²(XᵀX)⁻¹, the textbook normal linear model (e.g. D. C. Montgomery, "Design and
Analysis of Experiments", ch. 5, the two-factor factorial). Cells may be of unequal size;
every one of the four must have a sample. ``additive=True`` drops the interaction term.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from lab.core.errors import UsageError
from lab.stats.descriptive import check_confidence

METHOD = "two-way linear model (variant × placement), least squares, ±½ effect coding"


@dataclass(frozen=True)
class Effect:
    name: str
    estimate: float
    ci: tuple[float, float]
    se: float
    p: float
    percent: float  # in percent of A's mean (the mean of A's two cell means)


@dataclass(frozen=True)
class PlacementEffects:
    confidence: float
    n: int
    df: int
    residual_sd: float
    cells: dict[tuple[str, str], int]  # (variant, placement) -> samples
    cell_means: dict[tuple[str, str], float]
    variant: Effect  # B − A, averaged over placements
    placement: Effect  # second placement − first, averaged over variants
    interaction: Effect | None  # (B − A under the second) − (B − A under the first)
    method: str


def _levels(labels: np.ndarray, first: str | None, what: str) -> tuple[str, str]:
    seen = list(dict.fromkeys(labels.tolist()))
    if len(seen) != 2:
        raise UsageError(
            f"the placement model needs exactly two {what}s, not {len(seen)} ({', '.join(seen)})",
            hint=f"Pass the samples of two {what}s",
        )
    if first is not None:
        if first not in seen:
            raise UsageError(f"no {what} {first!r} among {', '.join(seen)}",
                             hint=f"Name one of: {', '.join(seen)}")  # fmt: skip
        seen.remove(first)
        seen.insert(0, first)
    return seen[0], seen[1]


def placement_effects(
    values: Sequence[float] | np.ndarray,
    variants: Sequence[str] | np.ndarray,
    placements: Sequence[str] | np.ndarray,
    confidence: float,
    *,
    baseline: str | None = None,
    first_placement: str | None = None,
    additive: bool = False,
) -> PlacementEffects:
    """Fit the model; A is ``baseline`` (else the first variant seen), likewise the placement."""
    y = np.asarray(values, dtype=np.float64)
    var = np.asarray(variants, dtype=str)
    place = np.asarray(placements, dtype=str)
    if not y.size == var.size == place.size:
        raise ValueError("values, variants and placements must have the same length")
    level = check_confidence(confidence)
    a, b = _levels(var, baseline, "variant")
    first, second = _levels(place, first_placement, "placement")
    cells = {
        (v, p): int(np.sum((var == v) & (place == p))) for v in (a, b) for p in (first, second)
    }
    empty = [f"{v} on placement {p}" for (v, p), n in cells.items() if n == 0]
    if empty:
        raise UsageError(
            f"no samples of {', '.join(empty)}: the variant and placement effects cannot be"
            " told apart",
            hint="Swap the CPU sets and run again so that each variant runs on both",
        )
    v_code = np.where(var == b, 0.5, -0.5)
    p_code = np.where(place == second, 0.5, -0.5)
    columns = [np.ones_like(y), v_code, p_code] + ([] if additive else [v_code * p_code])
    x = np.column_stack(columns)
    df = y.size - x.shape[1]
    if df < 1:
        raise UsageError(
            f"{y.size} samples are too few for the placement model ({x.shape[1]} parameters)",
            hint="Run more iterations on each placement",
        )
    beta, _, _, _ = np.linalg.lstsq(x, y, rcond=None)
    residuals = y - x @ beta
    sigma2 = float(residuals @ residuals) / df
    cov = sigma2 * np.linalg.inv(x.T @ x)
    t_crit = float(stats.t.ppf(0.5 + level / 2, df))
    means = {k: float(y[(var == k[0]) & (place == k[1])].mean()) for k in cells}
    mean_a = (means[(a, first)] + means[(a, second)]) / 2

    def effect(i: int, name: str) -> Effect:
        se = math.sqrt(float(cov[i, i]))
        est = float(beta[i])
        p = float(2 * stats.t.sf(abs(est / se), df)) if se > 0 else math.nan
        pct = est / mean_a * 100 if mean_a else math.nan
        return Effect(name, est, (est - t_crit * se, est + t_crit * se), se, p, pct)

    return PlacementEffects(
        confidence=level,
        n=int(y.size),
        df=df,
        residual_sd=math.sqrt(sigma2),
        cells=cells,
        cell_means=means,
        variant=effect(1, f"{b} − {a}"),
        placement=effect(2, f"placement {second} − {first}"),
        interaction=None if additive else effect(3, "interaction"),
        method=METHOD + (", additive" if additive else ""),
    )
