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

from lab.guests.factors import FACTORS
from lab.stats.factorialdata import FactorialAnswer, answer, common_factors, factorial_data
from lab.stats.series import Series
from lab.store import Store

# the lab's own factors' levels, low first (thp before 1g, off before on)
DECLARED = {name: tuple(factor.levels) for name, factor in FACTORS.items()}


def factorial_workloads(store: Store, study: str | None) -> set[tuple[str, str]]:
    """(study, workload) whose every guest, over all their runs, is a cell of the same two or
    more factors: a factorial, whose runs are its blocks (never pooled pairwise)."""
    variants = store.workload_variants(study)
    return {key for key, names in variants.items()
            if len(names) > 1 and common_factors(names) is not None}  # fmt: skip


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
            data = factorial_data(runs, DECLARED)
            if data is not None:
                answers.append(answer(data, confidence, correction))
    return answers
