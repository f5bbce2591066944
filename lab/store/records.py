"""The store's records: small immutable values going in and coming out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from lab.core.errors import StoreError
from lab.stats.series import Direction

EVIDENCE_PREFIX = "backing."  # metrics of what backed the memory: evidence, not performance


def is_evidence(metric: str) -> bool:
    """Whether ``metric`` is evidence (``backing.*``), stored with no direction."""
    return metric.startswith(EVIDENCE_PREFIX)


@dataclass(frozen=True)
class MetricInfo:
    """What a run measures: ``direction`` says which way is better ('lower' or 'higher'),
    or None for evidence rather than performance (``backing.*``: what backed the memory),
    which is stored and exported but never compared for a verdict."""

    name: str
    unit: str
    direction: Direction | None

    def __post_init__(self) -> None:
        if self.direction not in ("lower", "higher", None):
            raise StoreError(
                f"metric {self.name!r}: direction {self.direction!r} is neither 'lower' nor"
                " 'higher'",
                hint="Say whether a lower value (times) or a higher value (throughput) is better",
            )


@dataclass(frozen=True)
class IterationRecord:
    """One attempt at one iteration; ``metrics`` are stored only when ``ok``."""

    iteration: int
    attempt: int
    ok: bool
    started: float | None = None
    ended: float | None = None
    wall: float | None = None
    user: float | None = None
    sys: float | None = None
    exit_status: int | None = None
    boot_id: str | None = None
    output_tail: str | None = None
    source: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StudyRecord:
    id: int
    name: str
    created: float | None
    description: str
    study_file: str | None
    study_hash: str | None


@dataclass(frozen=True)
class GuestRecord:
    id: int
    study: str
    name: str
    variant: str
    host: str
    domain_xml: str | None
    host_facts: dict[str, Any] | None
    guest_facts: dict[str, Any] | None
    created: float | None


@dataclass(frozen=True)
class RunRecord:
    id: int
    study: str
    key: str
    workload: str
    params: dict[str, Any]
    schedule: str | None
    target_n: int | None
    created: float | None
    metrics: tuple[MetricInfo, ...]


EXPORT_COLUMNS = (
    "study", "run", "workload", "params", "schedule", "variant", "guest", "host", "iteration",
    "attempt",
    "metric", "unit", "direction", "value", "started", "ended", "source", "boot", "placement",
    "cpus", "ok", "exit_status", "wall", "user", "sys", "error",
)  # fmt: skip


@dataclass(frozen=True)
class ExportRow:
    """One sample with all its context and what the iteration table holds of its successful
    attempt (``ok`` 1), as ``lab export`` writes it; or one failed attempt (``ok`` 0), which
    has no metric, unit, direction or value but the same of its attempt and its error (the
    iteration table's ``output_tail``: the error, then the end of the output)."""

    study: str
    run: str
    workload: str
    params: str
    schedule: str | None
    variant: str
    guest: str
    host: str
    iteration: int
    attempt: int
    metric: str | None
    unit: str | None
    direction: str | None
    value: float | None
    started: float | None
    ended: float | None
    source: str | None
    boot: str | None = None  # the iteration's boot id
    placement: str | None = None  # its CPU placement ("own", "swapped"), if it had one
    cpus: str | None = None  # that placement's host CPU of each vCPU
    ok: int = 1  # 1: a sample of a successful attempt; 0: a failed attempt, no sample
    exit_status: int | None = None  # the attempt's command's exit status
    wall: float | None = None  # the attempt's times, as the iteration table holds them
    user: float | None = None
    sys: float | None = None
    error: str | None = None  # a failed attempt's error, then the end of its output

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in EXPORT_COLUMNS}


@dataclass(frozen=True)
class GuestProgress:
    """One guest's part of one run, as stored."""

    guest: str
    variant: str
    host: str
    done: int  # iterations with a successful attempt
    failed: int  # failed attempts
    first: float | None  # the first attempt's start
    last: float | None  # the last attempt's end


@dataclass(frozen=True)
class EnvironmentRecord:
    """One host's or guest's facts at one start of a run (``lab.run.environment``)."""

    scope: str  # "host" or "guest"
    name: str
    facts: dict[str, str]
    recorded: float | None


@dataclass(frozen=True)
class FailedAttempt:
    guest: str
    iteration: int
    attempt: int
    started: float | None
    exit_status: int | None
    output_tail: str  # the error first, then the end of the command's output


EvidenceSeries: TypeAlias = dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]
"""guest -> evidence metric -> (iterations, values), ordered by iteration
(``Store.evidence_series``)"""


@dataclass(frozen=True)
class EvidenceSummary:
    """One guest's samples of one evidence metric of a run (``Store.evidence``)."""

    guest: str
    metric: str
    unit: str
    n: int
    mean: float
    low: float
    high: float


@dataclass(frozen=True)
class SweepRunRecord:
    """One value of a sweep: its place, its run and the swept parameters' values."""

    position: int  # from 0, in the order the sweep makes its runs
    run_id: int
    run_key: str
    point: dict[str, Any]


@dataclass(frozen=True)
class SweepRecord:
    """A parameter sweep (``lab run --sweep``): its runs, one per point of its axes."""

    id: int
    study: str
    key: str
    workload: str
    axes: tuple[tuple[str, tuple[str, ...]], ...]  # (key, values), as given
    order: str  # "interleaved" or "blocked"
    created: float | None
    runs: tuple[SweepRunRecord, ...]  # by position
