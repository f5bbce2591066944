"""The factorial answer of ``lab compare``: which factor moves a metric, when a workload's
variants are the cells of a factorial study (:mod:`lab.core.cells`).

A workload whose every variant is a cell of the same two or more factors, by the lab's own
factors (``lab up --pair page-1g.prealloc-on,...``) or an import's ``factor.NAME`` columns,
is a factorial: its samples are fitted together (:mod:`lab.stats.effects`), each factor's
level per sample read from its variant's name. Where the cells ran in blocks (a pair of
cells at a time on a 2-CPU host, each pair a run), the run is the block, a fixed effect of
the model, so that what differs between the blocks' times does not pass for an effect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lab.core.cells import cell_levels
from lab.core.errors import LabError
from lab.stats.series import Series
from lab.store import Store

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


def factorial_data(runs: dict[str, list[Series]]) -> FactorialData | None:
    """The factorial of one workload · metric's series by run key, or None where its
    variants are not all cells of the same factors (two or more)."""
    series = [s for found in runs.values() for s in found]
    if not series:
        return None
    parsed = {s.variant: cell_levels(s.variant) for s in series}
    names = {tuple(sorted(levels)) if levels else () for levels in parsed.values()}
    if len(names) != 1 or len(next(iter(names))) < MIN_FACTORS:
        return None
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
    return FactorialData(
        study=s0.study, workload=s0.workload, metric=s0.metric, unit=s0.unit,
        direction=s0.direction, factors=factors, values=np.concatenate(values),
        levels={f: np.concatenate(parts) for f, parts in levels.items()},
        blocks=np.concatenate(blocks) if len(runs) > 1 else None,
        cells=tuple(dict.fromkeys(s.variant for s in series)),
    )  # fmt: skip


def factorial_workloads(store: Store, study: str | None) -> set[tuple[str, str]]:
    """(study, workload) whose every guest, over all their runs, is a cell of the same two or
    more factors: a factorial, whose runs are its blocks (never pooled pairwise)."""
    variants: dict[tuple[str, str], set[str]] = {}
    for run in store.runs(study):
        found = variants.setdefault((run.study, run.workload), set())
        found.update(g.variant for g in store.run_progress(run.id))
    return {key for key, names in variants.items() if _factors_of(names) is not None}


def _factors_of(variants: set[str]) -> tuple[str, ...] | None:
    """The factors every variant's name spells (two or more, the same in each), else None."""
    parsed = [cell_levels(v) for v in variants]
    names = {tuple(sorted(levels)) if levels is not None else () for levels in parsed}
    if len(variants) < 2 or len(names) != 1 or len(next(iter(names))) < MIN_FACTORS:
        return None
    return next(iter(names))


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
            }  # fmt: skip
        return found


def level_order(factor: str, seen: np.ndarray) -> list[str]:
    """A factor's levels low first: the lab's own factor's declared order (thp before 1g, off
    before on), else in natural order, numbers by value (4M before 16M, 1K before 2K: as Jain
    codes memory and cache sizes)."""
    from lab.guests.factors import FACTORS  # deferred: only for a factorial

    present = list(dict.fromkeys(seen.tolist()))
    if factor in FACTORS and all(level in FACTORS[factor].levels for level in present):
        return [level for level in FACTORS[factor].levels if level in present]
    return sorted(present, key=_natural)


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
            levels={f: level_order(f, data.levels[f]) for f in data.factors},
            blocks=None if data.blocks is None else data.blocks.tolist(),
            confidence=confidence, correction=correction,
        )  # fmt: skip
    except LabError as err:
        return FactorialAnswer(data, None, err.message)
    return FactorialAnswer(data, effects, None)


def factorial_answers(
    store: Store, study: str | None, workload: str | None, metric: str | None,
    confidence: float, correction: str = "bonferroni",
) -> list[FactorialAnswer]:  # fmt: skip
    """Every factorial workload · metric of the selection, its runs the blocks."""
    answers = []
    for st, wl in sorted(factorial_workloads(store, study)):
        if workload not in (None, wl):
            continue
        by_metric: dict[str, dict[str, list[Series]]] = {}
        for run in store.runs(st):
            if run.workload != wl:
                continue
            for s in store.values(wl, metric, st, run.key):
                by_metric.setdefault(s.metric, {}).setdefault(run.key, []).append(s)
        for runs in by_metric.values():
            data = factorial_data(runs)
            if data is not None:
                answers.append(answer(data, confidence, correction))
    return answers
