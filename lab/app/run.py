"""``lab run``'s action: one workload's iterations on the twins, every sample stored.

:func:`run_workload` is what ``lab run``, ``lab study run`` and ``lab demo`` call; a run
that stopped (Ctrl-C, a lost guest) resumes when the same request is run again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.inventory import LOCAL
from lab.guests.labstate import GuestRecord, guest_named
from lab.guests.sites import guests_of, require_up
from lab.run.lock import run_lock
from lab.run.placement import check_swap_plan, check_swap_schedule
from lab.run.workload import Workload, get_workload, workloads_for
from lab.stats.verdict import Threshold
from lab.stats.verdict import parse_threshold as read_threshold

DEFAULT_STUDY = "default"


@dataclass(frozen=True)
class RunRequest:
    """What ``lab run WORKLOAD --n N ...`` asks for; ``params`` as ``-p KEY=VALUE`` gives
    them, in order (the workload converts and checks the values)."""

    workload: str
    n: int
    params: tuple[tuple[str, str], ...] = ()
    study: str = DEFAULT_STUDY
    db: str | None = None  # None: the `store` of lab.toml
    schedule: str = "concurrent"
    until: str | None = None
    confidence: float = 99.99
    threshold: str = "1%"
    swap_every: int | None = None
    warmup: str | None = None  # K or "auto", stored with the run
    counters: str = "all"  # perf events per iteration (sync, alternate): none, software, all
    guests: tuple[str, ...] = ()  # empty: every guest that is up
    hosts: str | None = None  # None: every host where a lab is up
    max_failures: int = 10


@dataclass(frozen=True)
class RunOutcome:
    workload: str
    key: str  # the run's key in the store
    n: int
    guests: int
    db: str
    interrupted: bool = False  # Ctrl-C: the runners were stopped, the samples so far kept
    completed: int | None = None  # with a stopping rule that stopped: iterations per guest
    decision: Any = None  # lab.stats.sequential.Decision once a rule stopped the run


def parse_threshold(text: str) -> Threshold:
    """'1%' (of A's mean) or '0.5' (in the metric's unit), read as every command reads a
    threshold; above 0 for a stopping rule, which could otherwise never call two equivalent."""
    threshold = read_threshold(text, "--threshold")
    if threshold.relative and not 0 < threshold.value < 1:
        raise UsageError(f"--threshold {text!r} must lie above 0 % and below 100 %")
    if not threshold.relative and threshold.value <= 0:
        raise UsageError(f"--threshold {text!r} must be above 0, in the metric's unit")
    return threshold


def command_line(request: RunRequest) -> list[str]:
    """The `lab run` command as typed (near enough), for a second run that is refused."""
    argv = ["lab", "run", request.workload, "--n", str(request.n), "--study", request.study]
    for key, value in request.params:
        argv += ["-p", f"{key}={value}"]
    argv += ["--warmup", request.warmup] if request.warmup is not None else []
    argv += ["--hosts", request.hosts] if request.hosts else []
    return argv + (["--guests", ",".join(request.guests)] if request.guests else [])


def check_request(request: RunRequest, workloads: Mapping[str, Workload] | None = None) -> Workload:
    """Refuse what no lab could run (before any lab is needed); returns the workload, one of
    ``workloads`` (by default the shipped ones)."""
    if request.n < 1:
        raise UsageError(f"--n must be 1 or more, not {request.n}", hint="e.g. --n 30")
    if request.max_failures < 0:
        raise UsageError(f"--max-failures must be 0 or more, not {request.max_failures}")
    if request.warmup is not None:
        from lab.stats.discard import declared_warmup  # deferred: heavy (scipy)

        try:
            declared_warmup(request.warmup, request.n)
        except ValueError as err:
            raise UsageError(
                f"--warmup {request.warmup} {err}",
                hint="Declare a warm-up shorter than the run, or run more iterations",
            ) from None
    if request.swap_every is not None:
        check_swap_schedule(request.schedule, request.swap_every)
    parse_threshold(request.threshold)
    workload = get_workload(request.workload, workloads)
    workload.resolve(dict(request.params))
    return workload


def run_workload(ctx: Context, request: RunRequest) -> RunOutcome:
    """Run (or resume) the iterations ``request`` asks for, storing every sample."""
    # deferred: heavy (scipy, through the stopping rules and the progress display)
    from lab.guests.bringup import shell_for
    from lab.run.controller import STORE_CACHE_KIB, Controller, RunPlan
    from lab.run.hostside import host_side
    from lab.run.progress import RunProgress
    from lab.store import Store

    workload = check_request(request, workloads_for(ctx.config))
    up = require_up(ctx, request.hosts)
    state = next((st for site, st in up if not site.remote), up[0][1])
    everyone = guests_of(up)
    names = request.guests or tuple(g.name for g in everyone)
    guests = [guest_named(everyone, name) for name in names]
    _check_remote(workload, guests)
    if request.swap_every is not None:
        check_swap_plan(request.schedule, guests, request.swap_every)
    params = workload.resolve(dict(request.params))
    plan = RunPlan(
        study=request.study,
        workload=workload,
        params=params,
        n=request.n,
        schedule=request.schedule,
        max_failures=request.max_failures,
        until=request.until,
        confidence=request.confidence,
        threshold=parse_threshold(request.threshold),
        swap_every=request.swap_every,
        warmup=request.warmup,
        counters=request.counters,
    )
    _check_specs(workload, params, up, guests, plan.runner_dir)
    db = request.db or ctx.config.store
    with (
        run_lock(Path(ctx.config.state_dir), command_line(request), ctx.warn),
        Store.open(Path(db), cache_kib=STORE_CACHE_KIB) as store,
        host_side(
            ctx, workload, params, state, [g for g in guests if g.host == LOCAL], plan.runner_dir
        ),
        RunProgress(ctx, request.n) as progress,
    ):
        controller = Controller(
            ctx, store, state, guests, plan, lambda record: shell_for(ctx, record), progress.update,
            sites=up,
        )  # fmt: skip
        if request.warmup is not None:  # analysis, not identity: not part of the run's key
            store.record_warmup(controller.run_id, request.warmup)
        progress.start(controller)
        outcome = RunOutcome(workload.name, controller.key, request.n, len(guests), db)
        try:
            controller.run()
        except KeyboardInterrupt:
            controller.stop_runners()
            return replace(outcome, interrupted=True)
    decision = controller.decision
    if decision is not None and decision.stop:
        done = min(len(g.completed) for g in controller.guests)
        return replace(outcome, completed=done, decision=decision)
    return outcome


def _check_specs(
    workload: Workload, params: Mapping[str, Any], up: list[tuple[Any, Any]],
    guests: list[GuestRecord], work_dir: str,
) -> None:  # fmt: skip
    """What each guest would run, described now: a parameter its guest cannot take (stream's
    arrays, sysbench-oltp's buffer pool, against the guest's memory) is refused before the
    run is stored or anything starts, not at its first runner start."""
    from lab.run.hostside import guest_infos

    for _site, state in up:
        for info in guest_infos(state, [g for g in state.guests if g in guests], work_dir):
            workload.spec(params, info)


def _check_remote(workload: Workload, guests: list[GuestRecord]) -> None:
    """Servers and NFS exports are made on this machine only, for its own guests."""
    remote = sorted({g.host for g in guests if g.host != LOCAL})
    if not remote:
        return
    if workload.serves_from_host:
        raise UsageError(
            f"{workload.name} needs servers on the guests' host, which the lab starts only on"
            f" this machine, and guests on {', '.join(remote)} would use it",
            hint="Run it with --hosts local, or run a workload without host servers there"
            " (see `lab workloads`)",
        )
