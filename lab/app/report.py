"""``lab report``'s action: the analysis of :mod:`lab.app.analyse`, written as one offline
HTML page with the store's metadata (studies, runs, guests, images)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lab.app.analyse import (
    AnalyseRequest,
    SweepSamples,
    compare_samples,
    compare_sweeps,
    no_samples,
    no_sweep_samples,
    select_samples,
    select_sweeps,
    store_path,
)
from lab.app.effects import factorial_answers
from lab.app.environment import environment_report
from lab.app.thpcoverage import thp_coverage
from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.outputs import refuse_database
from lab.core.text import shown
from lab.report.images import image_summaries
from lab.run.backing import MEMORY, describe, kib_fact
from lab.run.environment import latest
from lab.store import RunRecord, Store
from lab.store.records import EvidenceSeries


@dataclass(frozen=True)
class ReportRequest:
    analysis: AnalyseRequest
    out: str | None = None  # None: a `report` folder beside the store
    embed: bool = True  # the figures inside the page (one file), not PNG files beside it


@dataclass(frozen=True)
class ReportResult:
    index: Path  # the page written


def report(ctx: Context, request: ReportRequest) -> ReportResult:
    """Write the report of the samples ``request`` selects; returns where its page is."""
    from lab.report.html import render  # deferred: heavy (matplotlib, scipy)
    from lab.report.metadata import ReportMeta  # deferred with it: its tables import lab.stats

    selection = request.analysis.selection
    path = store_path(ctx, selection)
    study = selection.study
    with Store.open(path, create=False) as store:
        samples = select_samples(store, selection)
        sweeps = select_sweeps(store, selection)
        factorials = (
            [] if selection.run is not None or selection.sweep is not None
            else factorial_answers(store, study, selection.workload, selection.metric,
                                   request.analysis.confidence / 100,
                                   request.analysis.effects_correction, selection.from_runs)
        )  # fmt: skip
        backing = sweep_backing(store, sweeps)
        guests, runs = store.guests(study), store.runs(study)
        now = {r.key: latest(store.environment(r.id)) for r in runs}
        meta = ReportMeta(
            store_path=str(path), studies=[s for s in store.studies() if study in (None, s.name)],
            guests=guests, runs=runs, attempts=store.attempt_counts(study),
            images=image_summaries(guests, Path(ctx.config.image_dir)),
            environment={key: {f"{scope} {name}": facts for (scope, name), facts in at.items()}
                         for key, at in now.items()},
            sweep_backing=backing, backing_series=backing_series(store, runs),
            guest_memory_kib={key: guest_memory_kib(at) for key, at in now.items()},
            thp_coverage=thp_coverage(store, runs, now),
        )  # fmt: skip
    if not samples.series and not any(sw.values for sw in sweeps) and not factorials:
        raise no_sweep_samples(sweeps) if sweeps else no_samples(selection)
    said = environment_report(ctx, selection)
    meta = replace(meta, evidence=said.notes, warnings=said.warnings)
    comparisons = compare_samples(samples, request.analysis) if samples.series else []
    compared = compare_sweeps(sweeps, request.analysis)
    out = Path(request.out) if request.out else path.parent / "report"
    refuse_database(out, store=path)  # `--out` naming the store: refused before any write
    try:
        index = render(comparisons, meta, out, embed=request.embed, sweeps=compared,
                       factorials=factorials)  # fmt: skip
    except OSError as err:
        message = f"cannot write the report to {shown(out)}: {err}"
        raise UsageError(message, hint="Pass another --out") from None
    return ReportResult(index)


def sweep_backing(store: Store, sweeps: list[SweepSamples]) -> dict[str, dict[str, str]]:
    """Run key -> guest -> what backed its memory at the run's last record (the end of the
    value's last round), for each value of each sweep (``lab.run.backing``)."""
    found: dict[str, dict[str, str]] = {}
    for sweep in sweeps:
        for r in sweep.sweep.runs:
            now = latest(store.environment(r.run_id))
            found[r.run_key] = {
                name: describe(name, facts) or "not recorded"
                for (scope, name), facts in now.items()
                if scope == "guest"
            }
    return found


def backing_series(store: Store, runs: Sequence[RunRecord]) -> dict[str, EvidenceSeries]:
    """Run key -> guest -> ``backing.*`` metric in KiB -> (iterations, values): what backed
    each twin's memory over the run, for the runs that recorded any (the report draws one
    figure for each; a run without them gets none)."""
    found = {r.key: store.evidence_series(r.id) for r in runs}
    return {key: series for key, series in found.items() if series}


def guest_memory_kib(now: Mapping[tuple[str, str], Mapping[str, str]]) -> dict[str, int]:
    """Guest -> its RAM in KiB (its domain's ``<memory>``) as a run's last start recorded
    it, for the guests that have it: the backing figure draws shares of it."""
    return {
        name: kib
        for (scope, name), facts in now.items()
        if scope == "guest" and (kib := kib_fact(facts, MEMORY))
    }
