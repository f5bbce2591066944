"""A factorial's samples gathered for a fit, and the fit's answer (``lab compare``'s
factorial section, :mod:`lab.app.effects`): each sample's value, its factor levels read from
its variant's name (a cell, :mod:`lab.core.cells`) and its block (its run)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lab.core.cells import cell_levels
from lab.core.errors import LabError
from lab.stats.agelead import age_leads
from lab.stats.agelead import to_json as lead_json
from lab.stats.series import Series

if TYPE_CHECKING:
    from lab.stats.effects import FactorialEffects

MIN_FACTORS = 2  # one factor's "effects" are the pairwise comparison compare already gives


@dataclass(frozen=True)
class FactorialData:
    """One workload · metric of a factorial study, one entry per sample."""

    study: str
    workload: str
    metric: str
    unit: str
    direction: str
    factors: tuple[str, ...]
    values: np.ndarray
    levels: dict[str, np.ndarray]  # factor -> each sample's level
    blocks: np.ndarray | None  # each sample's run (block), None for one run
    cells: tuple[str, ...]  # the variants, in order of appearance
    orders: dict[str, tuple[str, ...]]  # factor -> its levels present, low first


def common_factors(variants: Iterable[str]) -> tuple[str, ...] | None:
    """The factors (sorted) every variant's name spells as a cell, two or more and the same in
    each; None where one is not a cell or they differ."""
    names = {tuple(sorted(levels)) if levels else () for levels in map(cell_levels, variants)}
    if len(names) != 1 or len(found := next(iter(names))) < MIN_FACTORS:
        return None
    return found


def factorial_data(
    runs: dict[str, list[Series]], declared: Mapping[str, Sequence[str]] | None = None
) -> FactorialData | None:
    """The factorial of one workload · metric's series by run key, or None where its
    variants are not all cells of the same factors (two or more). ``declared`` orders a
    factor's levels low first (the lab's own factors); others are ordered naturally
    (:func:`level_order`)."""
    series = [s for found in runs.values() for s in found]
    if not series:
        return None
    if common_factors({s.variant for s in series}) is None:
        return None
    parsed = {s.variant: cell_levels(s.variant) for s in series}
    first = parsed[series[0].variant]
    assert first is not None
    factors = tuple(first)
    values, blocks = [], []
    levels: dict[str, list[np.ndarray]] = {f: [] for f in factors}
    for key, found in runs.items():
        for s in found:
            cell = parsed[s.variant]
            assert cell is not None
            values.append(np.asarray(s.values, dtype=np.float64))
            blocks.append(np.full(s.values.size, key, dtype=object))
            for f in factors:
                levels[f].append(np.full(s.values.size, cell[f], dtype=object))
    s0 = series[0]
    joined = {f: np.concatenate(parts) for f, parts in levels.items()}
    return FactorialData(
        study=s0.study, workload=s0.workload, metric=s0.metric, unit=s0.unit,
        direction=s0.direction, factors=factors, values=np.concatenate(values),
        levels=joined,
        blocks=np.concatenate(blocks) if len(runs) > 1 else None,
        cells=tuple(dict.fromkeys(s.variant for s in series)),
        orders={f: level_order(joined[f], (declared or {}).get(f)) for f in factors},
    )  # fmt: skip


@dataclass(frozen=True)
class FactorialAnswer:
    """A factorial's effects on one metric, with what they were fitted from."""

    data: FactorialData
    effects: FactorialEffects | None
    why_not: str | None  # why no effects could be fitted (too few samples ...)

    def to_json(self) -> dict[str, Any]:
        d, e = self.data, self.effects
        found: dict[str, Any] = {
            "study": d.study, "workload": d.workload, "metric": d.metric, "unit": d.unit,
            "direction": d.direction, "factors": list(d.factors), "cells": list(d.cells),
            "blocks": None if d.blocks is None else len(set(d.blocks.tolist())),
            "samples": int(d.values.size), "why_not": self.why_not,
        }  # fmt: skip
        if e is not None:
            found |= {
                "confidence": e.confidence, "correction": str(e.correction),
                "df_error": e.df_error, "method": e.method, "mean": e.mean,
                "effects": [{"term": x.term, "level": x.level, "estimate": x.estimate,
                             "ci": list(x.ci), "ratio": x.ratio,
                             "ratio_ci": None if x.ratio_ci is None else list(x.ratio_ci),
                             "aliases": list(x.aliases)} for x in e.effects],
                "shares": [{"term": s.term, "df": s.df, "share": s.share} for s in e.shares],
                "not_estimable": list(e.not_estimable),
                "confounded": list(e.confounded), "df_between": e.df_between,
                "age_leads": [lead_json(x) for x in age_leads(d.factors, d.orders, e)],
            }  # fmt: skip
        return found


def level_order(seen: np.ndarray, declared: Sequence[str] | None = None) -> tuple[str, ...]:
    """A factor's levels present in ``seen``, low first: in ``declared``'s order where it
    names them all (the lab's own factor: thp before 1g, off before on), else naturally,
    numbers by value (4M before 16M, 1K before 2K: as Jain codes memory and cache sizes)."""
    present = list(dict.fromkeys(seen.tolist()))
    if declared is not None and all(level in declared for level in present):
        return tuple(level for level in declared if level in present)
    return tuple(sorted(present, key=_natural))


def _natural(text: str) -> list[tuple[int, float, str]]:
    """A sort key that orders the numbers in ``text`` by value: "4M" before "16M"."""
    return [(0, float(part), "") if part[:1].isdigit() else (1, 0.0, part)
            for part in re.findall(r"\d+(?:\.\d+)?|\D+", text)]  # fmt: skip


def answer(data: FactorialData, confidence: float, correction: str) -> FactorialAnswer:
    """The effects of ``data``'s factors, or why they cannot be fitted."""
    from lab.stats.effects import fit_effects  # deferred: statsmodels

    try:
        effects = fit_effects(
            data.values, {f: levels.tolist() for f, levels in data.levels.items()},
            levels=data.orders,
            blocks=None if data.blocks is None else data.blocks.tolist(),
            confidence=confidence, correction=correction,
        )  # fmt: skip
    except LabError as err:
        return FactorialAnswer(data, None, err.message)
    return FactorialAnswer(data, effects, None)
