"""The report's THP coverage against the host's age (issue 42): which twins of a store's runs
were backed by transparent huge pages, with their RAM and the evidence the figure pairs
(``lab.report.ageplot``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from lab.report.ageplot import AGE_METRICS, UNUSABLE, Coverage, CoverageGuest, coverage_points
from lab.run.backing import DECLARED, DEFAULT_DECLARED, HUGETLB_DECLARED, MEMORY, kib_fact
from lab.store import RunRecord, Store

HUGETLB_SERIES = "backing.qemu_hugetlb_kib"


def thp_backed(facts: Mapping[str, str], hugetlb: tuple[np.ndarray, np.ndarray] | None) -> bool:
    """Whether a twin's RAM was left to transparent huge pages: its domain declared no
    hugetlb pages, or, where that was not recorded, its QEMU held none at any iteration."""
    declared = facts.get(DECLARED)
    if declared in (HUGETLB_DECLARED, DEFAULT_DECLARED):
        return declared == DEFAULT_DECLARED
    return hugetlb is None or not bool(np.any(hugetlb[1] > 0))


def thp_coverage(
    store: Store,
    runs: Sequence[RunRecord],
    now: Mapping[str, Mapping[tuple[str, str], Mapping[str, str]]],
) -> Coverage:
    """The THP-backed twins' coverage against their host's unusable index over ``runs`` that
    recorded both (``now``: run key -> (scope, name) -> facts at the run's last start)."""
    variants = {(g.study, g.name): g.variant for g in store.guests()}
    guests = []
    for run in runs:
        if not {m.name for m in run.metrics} >= set(AGE_METRICS):
            continue
        facts = {name: f for (scope, name), f in now.get(run.key, {}).items() if scope == "guest"}
        found = store.metric_series(run.id, AGE_METRICS)
        known = (HUGETLB_DECLARED, DEFAULT_DECLARED)
        undeclared = any(facts.get(name, {}).get(DECLARED) not in known for name in found)
        hugetlb = store.metric_series(run.id, (HUGETLB_SERIES,)) if undeclared else {}
        for name, series in found.items():
            own = facts.get(name, {})
            held = hugetlb.get(name, {}).get(HUGETLB_SERIES)
            if UNUSABLE not in series or not thp_backed(own, held):
                continue
            variant = own.get("variant") or variants.get((run.study, name), name)
            guests.append(CoverageGuest(run.key, variant, kib_fact(own, MEMORY) or 0, series))
    return coverage_points(guests)
