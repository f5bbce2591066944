"""Runs as things to list, pick, inspect and remove (``lab runs``), and the store's own check
(``lab store check``). A run is picked by its key or any prefix of it that is unique and at
least 4 characters long, as git picks a commit; an empty key picks nothing.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from lab.core.config import Config
from lab.core.errors import UsageError
from lab.core.units import iso_timestamp
from lab.guests.variants import find_variant, variants_for
from lab.run.environment import changes, latest, twin_differences
from lab.store import Store
from lab.store.records import FailedAttempt, GuestProgress, RunRecord, SweepRecord

TAIL_CHARS = 600  # of each failed attempt's output that `lab runs show` prints


@dataclass(frozen=True)
class RunSummary:
    """One line of ``lab runs``: what was asked and how far it got."""

    key: str
    study: str
    workload: str
    params: dict[str, Any]
    schedule: str | None
    target_n: int | None
    created: float | None
    guests: tuple[GuestProgress, ...]
    stopped: str | None  # why its --until rule stopped it, if one did (early or at its n)
    sweep: str | None = None  # the key of the sweep it is a value of (lab run --sweep)

    @property
    def state(self) -> str:
        """A run its rule stopped at its n did every iteration: it is complete, not "stopped
        early" (the rule records a stop at the maximum n too)."""
        target = self.target_n or 0
        if self.guests and all(g.done >= target for g in self.guests):
            return "complete"
        return "stopped early" if self.stopped else "incomplete"

    @property
    def finished(self) -> bool:
        """Nothing left to run: every iteration done, or its rule stopped it."""
        return self.state != "incomplete"

    def to_json(self) -> dict[str, Any]:
        """As ``lab runs --json`` prints it: its moments in ISO 8601 (``iso_timestamp``)."""
        guests = [
            {**asdict(g), "first": iso_timestamp(g.first), "last": iso_timestamp(g.last)}
            for g in self.guests
        ]
        return {
            **asdict(self), "created": iso_timestamp(self.created), "guests": guests,
            "state": self.state,
        }  # fmt: skip


@dataclass(frozen=True)
class RunDetail:
    """Everything ``lab runs show`` says about one run."""

    summary: RunSummary
    metrics: tuple[dict[str, str], ...]
    warmup: str | None
    placements: dict[str, dict[str, int]]  # guest -> {"own": k, "swapped": m}
    failures: tuple[FailedAttempt, ...]  # the last ones, oldest first
    command: str  # the `lab run` command that makes (or resumes) it
    environment: dict[str, dict[str, str]]  # "host NAME" / "guest NAME" -> facts, last start
    environment_changes: tuple[str, ...]  # what changed between starts
    twins_differ: tuple[str, ...]  # facts the guests differ in beyond their variant

    def to_json(self) -> dict[str, Any]:
        return {
            **self.summary.to_json(),
            "metrics": list(self.metrics),
            "warmup": self.warmup,
            "placements": self.placements,
            "failures": [{**asdict(f), "started": iso_timestamp(f.started)} for f in self.failures],
            "command": self.command,
            "environment": self.environment,
            "environment_changes": list(self.environment_changes),
            "twins_differ": list(self.twins_differ),
        }


def open_existing(db: Path) -> Store:
    return Store.open(db, create=False)


def summaries(store: Store, study: str | None = None) -> list[RunSummary]:
    """Every run's summary, of ``study`` only when given: a study the store does not hold
    is refused (its empty list read "no runs stored yet" of a store full of them)."""
    if study is not None:
        known = [s.name for s in store.studies()]
        if study not in known:
            raise UsageError(
                f"no study {study!r} in {store.path}",
                hint=f"Its studies: {', '.join(known[:8])} (--study takes one of them)"
                if known
                else "It holds no study yet: `lab run` or `lab import` makes one",
            )
    sweeps = _sweeps_of(store, study)
    return [_summary(store, run, sweeps.get(run.key)) for run in store.runs(study)]


def _sweeps_of(store: Store, study: str | None) -> dict[str, SweepRecord]:
    """Run key -> the sweep it is a value of."""
    return {r.run_key: sw for sw in store.sweeps(study) for r in sw.runs}


def _summary(store: Store, run: RunRecord, sweep: SweepRecord | None = None) -> RunSummary:
    return RunSummary(
        run.key, run.study, run.workload, run.params, run.schedule, run.target_n, run.created,
        tuple(store.run_progress(run.id)), store.stop_reason(run.id),
        sweep.key if sweep else None,
    )  # fmt: skip


def find_run(store: Store, prefix: str, study: str | None = None) -> RunRecord:
    """The run whose key is ``prefix`` or starts with it; an error names the candidates."""
    return _by_key(store.runs(study), prefix, "run", store.path)


K = TypeVar("K", RunRecord, SweepRecord)
MIN_PREFIX = 4  # characters of a key that pick it, unless they are the whole key


def _by_key(found: list[K], prefix: str, kind: str, path: Path) -> K:
    """The one of ``found`` whose key is ``prefix`` or starts with it, as git picks a
    commit; an error names the candidates (``kind``: "run" or "sweep")."""
    if not prefix.strip():  # an unset shell variable: it must not pick the first run
        raise UsageError(
            f"an empty {kind} key names no {kind}",
            hint=f"Give a {kind}'s key or at least {MIN_PREFIX} characters of it (`lab runs`"
            " lists them)",
        )
    exact = [x for x in found if x.key == prefix]
    if not exact and len(prefix) < MIN_PREFIX:
        raise UsageError(
            f"{kind} key prefix {prefix!r} is shorter than {MIN_PREFIX} characters",
            hint=f"Give the whole key or at least {MIN_PREFIX} characters of it (`lab runs`"
            " lists them)",
        )
    matches = exact or [x for x in found if x.key.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        known = ", ".join(x.key for x in found[:8]) or "none"
        raise UsageError(
            f"no {kind} {prefix!r} in {path}", hint=f"See `lab runs`; its {kind}s: {known}"
        )
    raise UsageError(
        f"{prefix!r} names {len(matches)} {kind}s: {', '.join(x.key for x in matches[:8])}",
        hint="Give more of the key",
    )


def declared_by_variants(
    config: Config | None, now: dict[tuple[str, str], dict[str, str]]
) -> tuple[frozenset[str], dict[str, tuple[str, ...]]]:
    """What the variants of a start's guests (``now``, as ``latest`` gives it) declare they
    change: the guest facts, and per variant the parts of the domain. A variant that no
    longer loads declares nothing, so what it changed shows as a difference."""
    if config is None:
        return frozenset(), {}
    variants = variants_for(config)
    found = [find_variant(facts.get("variant", ""), variants)
             for (scope, _), facts in now.items() if scope == "guest"]  # fmt: skip
    chosen = [variant for variant in found if variant is not None]
    return (
        frozenset(fact for variant in chosen for fact in variant.guest_facts),
        {variant.name: variant.changes for variant in chosen},
    )


def find_sweep(store: Store, prefix: str, study: str | None = None) -> SweepRecord:
    """The sweep whose key is ``prefix`` or starts with it; an error names the candidates."""
    return _by_key(store.sweeps(study), prefix, "sweep", store.path)


def detail(
    store: Store, prefix: str, study: str | None = None, config: Config | None = None
) -> RunDetail:
    """One run whole; with ``config``, its variants' declared changes are not differences."""
    run = find_run(store, prefix, study)
    sweep = _sweeps_of(store, run.study).get(run.key)
    env = store.environment(run.id)
    declared_facts, _ = declared_by_variants(config, latest(env))
    placements: dict[str, dict[str, int]] = {}
    for (guest, label), count in store.placement_counts(run.id).items():
        placements.setdefault(guest, {})[label] = count
    failures = tuple(
        FailedAttempt(f.guest, f.iteration, f.attempt, f.started, f.exit_status,
                      f.output_tail[-TAIL_CHARS:])
        for f in store.failed_attempts(run.id)
    )  # fmt: skip
    return RunDetail(
        summary=_summary(store, run, sweep),
        metrics=tuple(
            {"name": m.name, "unit": m.unit, "direction": m.direction or "neither"}
            for m in run.metrics
        ),
        warmup=store.warmup_declarations(run.study).get(run.id),
        placements=placements,
        failures=failures,
        command=run_command(run, store.path, sweep),
        environment={f"{scope} {name}": facts for (scope, name), facts in latest(env).items()},
        environment_changes=tuple(changes(env)),
        twins_differ=tuple(d.text for d in twin_differences(env, declared_facts)),
    )


def run_command(run: RunRecord, db: Path, sweep: SweepRecord | None = None) -> str:
    """A `lab run` command for this run's workload, n, study, schedule and parameters (add
    the --until, --swap-every or --guests it had, if any, to give the very same key); for a
    value of a sweep, the command of the whole sweep, which makes (or resumes) it."""
    swept = {key for key, _ in sweep.axes} if sweep else set()
    params = [
        f"-p {shlex.quote(f'{k}={v}')}"
        for k, v in sorted(run.params.items())
        if v is not None and k not in swept
    ]
    words = ["lab run", run.workload, f"--n {run.target_n}", f"--study {shlex.quote(run.study)}"]
    if run.schedule and run.schedule != "sync":
        words.append(f"--schedule {run.schedule}")
    if sweep:
        for key, values in sweep.axes:
            words.append("--sweep " + shlex.quote(key + "=" + ",".join(values)))
        words.append(f"--sweep-order {sweep.order}")
    return " ".join([*words, *params, f"--db {shlex.quote(str(db))}"])


def delete(store: Store, prefix: str, study: str | None = None) -> tuple[RunRecord, int]:
    """Remove the run ``prefix`` names; returns it and the number of samples removed."""
    run = find_run(store, prefix, study)
    return run, store.delete_run(run.id)


@dataclass(frozen=True)
class StoreCheck:
    path: str
    integrity: tuple[str, ...]  # SQLite's answer: ("ok",) when sound
    counts: dict[str, int]
    orphans: dict[str, int]

    @property
    def ok(self) -> bool:
        return self.integrity == ("ok",) and not any(self.orphans.values())

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def check_store(store: Store) -> StoreCheck:
    integrity, counts, orphans = store.check()
    return StoreCheck(str(store.path), tuple(integrity), counts, orphans)
