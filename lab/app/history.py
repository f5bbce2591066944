"""``lab history``'s action: one metric's runs in the order they were made, each with the
versions it ran (QEMU, libvirt, the host's and the guest's kernel, the image recipe, the lab,
the user's sources a workload builds), and where its level changes.

Every run records those versions as it starts (``lab.run.evidence``: the host's and each
guest's facts), so a store that has followed a host through upgrades is a history already.
A point is one run of one variant: its samples' mean and interval. The change points are
found over the points' samples (:mod:`lab.stats.changes`), and each comes with the ratio of
the level after it to the level before it, with its interval, and the versions that differ
across it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lab.core.errors import UsageError
from lab.core.units import iso_timestamp
from lab.store import Store
from lab.store.records import EnvironmentRecord, RunRecord

if TYPE_CHECKING:
    from lab.stats.changes import ChangePoint

# a version's name -> where the run's facts hold it: (scope, fact)
VERSIONS: dict[str, tuple[str, str]] = {
    "qemu": ("host", "qemu_version"),
    "libvirt": ("host", "libvirt_version"),
    "kernel": ("host", "kernel"),
    "guest-kernel": ("guest", "kernel"),
    "image": ("host", "image_hash"),
    "lab": ("host", "lab_commit"),
    "source": ("guest", "source_revision"),  # a user's repository or tarball (lab.run.sources)
}
HASHES = ("image", "lab", "source")  # shown cut to SHORT characters
SHORT = 12  # characters of a hash shown


@dataclass(frozen=True)
class HistoryRequest:
    db: Path
    workload: str
    metric: str | None = None
    variant: str | None = None
    study: str | None = None
    confidence: float = 0.95


@dataclass(frozen=True)
class Point:
    """One run of one variant: when, with which versions, and its samples."""

    run: str
    created: float | None
    variant: str
    versions: dict[str, str]
    values: np.ndarray = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run, "created": iso_timestamp(self.created), "variant": self.variant,
            "versions": self.versions, "n": int(self.values.size),
            "mean": float(np.mean(self.values)) if self.values.size else None,
        }  # fmt: skip


def run_versions(
    environment: Sequence[EnvironmentRecord], variant: str | None = None
) -> dict[str, str]:
    """The versions a run's first start recorded (a fact missing from the facts is left out;
    hashes cut to :data:`SHORT` characters); a guest's fact is ``variant``'s guest's where
    it has one (twins of the revision workload run different revisions)."""
    found: dict[str, str] = {}
    for name, (scope, fact) in VERSIONS.items():
        records = [r for r in environment if r.scope == scope and fact in r.facts]
        own = [r for r in records if variant is not None and r.facts.get("variant") == variant]
        for record in own[:1] or records[:1]:
            text = record.facts[fact]
            if name == "source" and text.startswith("sha256:"):
                text = text.removeprefix("sha256:")
            found[name] = text[:SHORT] if name in HASHES else text
    return found


def changed_versions(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    """The versions that differ between two points: name -> [before, after]."""
    return {name: [before.get(name, "-"), after.get(name, "-")]
            for name in VERSIONS if before.get(name) != after.get(name)}  # fmt: skip


def first_metric(run: RunRecord) -> str | None:
    """A run's first metric of performance: not the evidence (backing.*, perf.*)."""
    names = [m.name for m in run.metrics]
    return next((n for n in names if not n.startswith(("backing.", "perf."))), None)


def history_points(store: Store, request: HistoryRequest) -> tuple[list[Point], RunRecord]:
    """The points of ``request``'s workload and metric, in the order the runs were made."""
    runs = [r for r in store.runs(request.study) if r.workload == request.workload]
    if not runs:
        raise UsageError(
            f"no run of {request.workload!r} in {store.path}",
            hint="`lab runs` lists the stored runs and their workloads",
        )
    runs.sort(key=lambda r: (r.created or 0.0, r.id))
    metric = request.metric or first_metric(runs[-1])
    points = []
    for run in runs:
        environment = store.environment(run.id)
        for series in store.values(run.workload, metric, run.study, run.key):
            if request.variant is None or series.variant == request.variant:
                versions = run_versions(environment, series.variant)
                points.append(Point(run.key, run.created, series.variant, versions,
                                    np.asarray(series.values)))  # fmt: skip
    if not points:
        raise UsageError(
            f"no samples of {request.workload} · {metric}"
            + (f" on variant {request.variant!r}" if request.variant else ""),
            hint="Name a metric the workload records (--metric) and a variant it ran (--variant)",
        )
    return points, runs[-1]


@dataclass(frozen=True)
class Change:
    """A change point between two runs of a variant, and what differs across it."""

    point: ChangePoint
    versions: dict[str, list[str]]  # what differs between the runs either side of it


@dataclass(frozen=True)
class History:
    """One metric's history for each variant: its points, and its change points."""

    workload: str
    metric: str
    unit: str
    variants: dict[str, list[Point]]
    changes: dict[str, list[Change]]
    method: str

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload, "metric": self.metric, "unit": self.unit,
            "method": self.method,
            "variants": {
                v: {"points": [p.to_json() for p in points],
                    "changes": [{"run": c.point.version, "index": c.point.index,
                                 "ratio": c.point.ratio, "ratio_ci": list(c.point.ratio_ci),
                                 "percent": c.point.percent, "confidence": c.point.confidence,
                                 "samples_before": c.point.n_before,
                                 "samples_after": c.point.n_after,
                                 "selective": c.point.selective, "versions": c.versions}
                                for c in self.changes.get(v, [])]}
                for v, points in self.variants.items()
            },
        }  # fmt: skip


def history(store: Store, request: HistoryRequest) -> History:
    """``lab history``: the points of each variant in run order, and where each changes."""
    from lab.stats.changes import METHOD, change_points  # deferred: ruptures

    points, last = history_points(store, request)
    by_variant: dict[str, list[Point]] = {}
    for p in points:
        by_variant.setdefault(p.variant, []).append(p)
    changes: dict[str, list[Change]] = {}
    for variant, found in by_variant.items():
        usable = [p for p in found if p.values.size]
        if len(usable) < 2:
            continue
        cuts = change_points([(p.run, p.values.tolist()) for p in usable], request.confidence)
        changes[variant] = [
            Change(c, changed_versions(usable[c.index - 1].versions, usable[c.index].versions))
            for c in cuts
        ]
    name = request.metric or first_metric(last) or ""
    info = next((m for m in last.metrics if m.name == name), None)
    return History(
        workload=request.workload, metric=name, unit=info.unit if info and info.unit else "",
        variants=by_variant, changes=changes, method=METHOD,
    )  # fmt: skip


def lab_history(request: HistoryRequest) -> History:
    """``lab history``'s action: :func:`history` of the store ``request.db`` (read only)."""
    with Store.open(request.db, create=False) as store:
        return history(store, request)
