"""The factorial answer of ``lab compare``: which factor moves a metric, when a workload's
variants are the cells of a factorial study (:mod:`lab.core.cells`).

A workload whose every variant is a cell of the same two or more factors, by the lab's own
factors (``lab up --pair page-1g.prealloc-on,...``) or an import's ``factor.NAME`` columns,
is a factorial: its samples are fitted together (:mod:`lab.stats.effects`), each factor's
level per sample read from its variant's name. Where the cells ran in blocks (a pair of
cells at a time on a 2-CPU host, each pair a run), the run is the block, a fixed effect of
the model, so that what differs between the blocks' times does not pass for an effect. A run
made with ``--reboot-every`` is a block per boot: the twins are power-cycled together, so the
k-th boot of each is one block, and what a boot changes (where the guest's memory landed)
drops out as a run's offset does.

**Factors of the runs** (issue 42). The host's age is set per run, not per guest: a study
whose ``[factors]`` has ``age`` runs each block once per age level, and each run records the
age it ran at (its ``host_aged`` fact, :mod:`lab.host.agelevels`). A sample's cell is then its
variant's cell plus ``age-LEVEL`` from its run (``page-1g.age-f80``). A plain pair's runs
(variants thp and shp1g) that differ in host age are answered so with ``lab compare
--factor-from-runs age``: each variant is then a level of a factor ``variant``. The runs stay
the blocks, and age, one level per run, is confounded with them (a split plot): its
interactions with the guests' factors are fitted within runs, free of what differs between
runs, and its main effect from the runs' means, its interval on the runs' own degrees of
freedom (:func:`lab.stats.effects.fit_effects`), so with one run per age level there is none.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import replace

import numpy as np

from lab.core.cells import CELL_SEPARATOR, LEVEL_SEPARATOR, cell_levels
from lab.core.errors import UsageError
from lab.guests.factors import FACTORS
from lab.host.agelevels import AGE_FACTOR, AGE_LEVELS, age_index, level_of_fact
from lab.stats.factorialdata import FactorialAnswer, answer, common_factors, factorial_data
from lab.stats.series import Series, series_key
from lab.store import RunRecord, Store
from lab.store.order import variant_order

# the lab's own factors' levels, low first (thp before 1g, off before on; fresh before f80)
DECLARED = {name: tuple(factor.levels) for name, factor in FACTORS.items()}
DECLARED[AGE_FACTOR] = AGE_LEVELS
RUN_FACTORS = (AGE_FACTOR,)  # what --factor-from-runs can name: what a run records
VARIANT_FACTOR = "variant"  # a plain pair's variants, as a factor beside a run's


def check_run_factors(names: Iterable[str]) -> tuple[str, ...]:
    """``--factor-from-runs``'s names, refused unless each is one a run records."""
    found = tuple(dict.fromkeys(names))
    unknown = [n for n in found if n not in RUN_FACTORS]
    if unknown:
        raise UsageError(
            f"--factor-from-runs {','.join(unknown)}: runs record no such factor",
            hint=f"Runs record: {', '.join(RUN_FACTORS)} (the host's age, lab host age)",
        )
    return found


def run_age(store: Store, run: RunRecord) -> str | None:
    """The host age level ``run`` ran at (``fresh``, ``f80``): the level it was run at
    (``lab run --host-age``, its ``host_age`` fact), else its hosts' ``host_aged`` facts; None
    where no start recorded one, or its starts differ."""
    levels = {_asked(e.facts.get("host_age")) or level_of_fact(e.facts.get("host_aged"))
              for e in store.environment(run.id) if e.scope == "host"}  # fmt: skip
    return levels.pop() if len(levels) == 1 else None


def _asked(level: str | None) -> str | None:
    """A run's ``host_age`` fact where it names a level (lab.host.agelevels), else None."""
    try:
        return level if level is not None and (age_index(level) or True) else None
    except UsageError:
        return None


def declared_run_factors(store: Store, study: str | None) -> dict[str, tuple[str, ...]]:
    """Study -> the factors of its runs its stored study file declares (``age`` in
    ``[factors]``); a study without a file, or with one that cannot be read, declares none."""
    found: dict[str, tuple[str, ...]] = {}
    for record in store.studies():
        if study not in (None, record.name) or not record.study_file:
            continue
        try:
            factors = tomllib.loads(record.study_file).get("factors")
        except tomllib.TOMLDecodeError:
            continue
        if isinstance(factors, dict) and AGE_FACTOR in factors:
            found[record.name] = (AGE_FACTOR,)
    return found


def with_run_levels(variant: str, levels: Mapping[str, str]) -> str | None:
    """The cell of a sample of ``variant`` in a run at ``levels`` (factor -> level): its
    variant's cell, or ``variant-NAME`` for a plain variant, then the run's levels; None where
    the variant can be neither (a dot or a dash in a plain name, a factor given twice)."""
    own = cell_levels(variant)
    if own is None:
        if CELL_SEPARATOR in variant or LEVEL_SEPARATOR in variant:
            return None
        own = {VARIANT_FACTOR: variant}
    if set(own) & set(levels):
        return None
    parts = [f"{f}{LEVEL_SEPARATOR}{v}" for f, v in (*own.items(), *levels.items())]
    return CELL_SEPARATOR.join(parts)


def _runs_with_levels(
    store: Store, study: str | None, from_runs: tuple[str, ...]
) -> dict[tuple[str, str], list[tuple[RunRecord, dict[str, str]]]]:
    """(study, workload) -> its runs, each with the levels of the factors of runs it takes
    (``from_runs``, and what its study file declares); only workloads whose runs all have a
    level of each and that take two or more levels of each."""
    declared = declared_run_factors(store, study)
    found: dict[tuple[str, str], list[tuple[RunRecord, dict[str, str]]]] = {}
    skipped: set[tuple[str, str]] = set()
    for run in store.runs(study):
        key = (run.study, run.workload)
        factors = tuple(dict.fromkeys((*from_runs, *declared.get(run.study, ()))))
        if not factors or key in skipped:
            continue
        age = run_age(store, run)
        if age is None:
            skipped.add(key)
            found.pop(key, None)
            continue
        found.setdefault(key, []).append((run, {AGE_FACTOR: age}))
    return {key: runs for key, runs in found.items()
            if all(len({levels[f] for _, levels in runs}) > 1 for f in runs[0][1])}  # fmt: skip


def factorial_workloads(
    store: Store, study: str | None, from_runs: tuple[str, ...] = ()
) -> set[tuple[str, str]]:
    """(study, workload) whose every guest, over all their runs, is a cell of the same two or
    more factors, counting the factors of its runs (``from_runs``, and those its study file
    declares): a factorial, whose runs are its blocks (never pooled pairwise)."""
    variants = store.workload_variants(study)
    found = {key for key, names in variants.items()
             if len(names) > 1 and common_factors(names) is not None}  # fmt: skip
    for key, runs in _runs_with_levels(store, study, from_runs).items():
        names = {with_run_levels(v, levels) for v in variants.get(key, ()) for _, levels in runs}
        if None not in names and common_factors(n for n in names if n) is not None:
            found.add(key)
    return found


def by_boot(
    run: str, series: Series, origins: tuple[np.ndarray, np.ndarray] | None
) -> list[tuple[str, Series]]:
    """``series`` as (block, its samples) of run ``run``: one block, the run, unless it was
    rebooted (several boot ids), then a block per boot, named by the boot's ordinal (the
    twins reboot together under --reboot-every, so their k-th boots are one block)."""
    if origins is None:
        return [(run, series)]
    boots = origins[1]
    order = list(dict.fromkeys(boots.tolist()))
    if len(order) < 2 or boots.size != series.values.size:
        return [(run, series)]
    return [
        (f"{run}#boot{k}", replace(series, values=series.values[boots == boot],
                                   iterations=series.iterations[boots == boot]))
        for k, boot in enumerate(order, 1)
    ]  # fmt: skip


def factorial_answers(
    store: Store, study: str | None, workload: str | None, metric: str | None,
    confidence: float, correction: str = "bonferroni", from_runs: tuple[str, ...] = (),
) -> list[FactorialAnswer]:  # fmt: skip
    """Every factorial workload · metric of the selection, its runs the blocks (or, with
    factors of the runs, each pair of variants over its runs a block)."""
    leveled = _runs_with_levels(store, study, from_runs)
    declared = DECLARED | {VARIANT_FACTOR: tuple(variant_order(store, study))}  # A low: thp
    answers = []
    for st, wl in sorted(factorial_workloads(store, study, from_runs)):
        if workload not in (None, wl):
            continue
        by_metric: dict[str, dict[str, list[Series]]] = {}
        runs = leveled.get((st, wl)) or [(r, {}) for r in store.runs(st) if r.workload == wl]
        for run, levels in runs:
            found = store.values(wl, metric, st, run.key)
            boots = store.sample_boots(wl, metric, st, run.key)
            for s in found:
                for block, part in by_boot(run.key, s, boots.get(series_key(s))):
                    if levels:
                        part = replace(part, variant=with_run_levels(s.variant, levels)
                                       or s.variant)  # fmt: skip
                    by_metric.setdefault(s.metric, {}).setdefault(block, []).append(part)
        for blocks in by_metric.values():
            data = factorial_data(blocks, declared)
            if data is not None:
                answers.append(answer(data, confidence, correction))
    return answers
