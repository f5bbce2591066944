"""``lab run``'s action: one workload's iterations on the twins, every sample stored.

:func:`run_workload` is what ``lab run``, ``lab study run`` and ``lab demo`` call; a run
that stopped (Ctrl-C, a lost guest) resumes when the same request is run again.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lab.app.stores import store_path
from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.inventory import LOCAL
from lab.core.sweeps import Axis
from lab.guests.labstate import GuestRecord, guest_named
from lab.guests.sites import guests_of, require_up
from lab.guests.ssh import GuestShell
from lab.host.agelevels import age_index, check_host_age, host_index
from lab.host.aging import aged_fact
from lab.run.lock import run_lock
from lab.run.placement import check_swap_plan, check_swap_schedule
from lab.run.sweep import SweepPlan, plan_sweep
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
    schedule: str = "sync"
    until: str | None = None
    confidence: float = 99.99
    threshold: str = "1%"
    swap_every: int | None = None
    reboot_every: int | None = None  # power-cycle the guests every K iterations
    warmup: str | None = None  # K or "auto", stored with the run
    counters: str = "all"  # perf events per iteration (sync, alternate): none, software, all
    guests: tuple[str, ...] = ()  # empty: every guest that is up
    hosts: str | None = None  # None: every host where a lab is up
    max_failures: int = 10
    sweep: tuple[Axis, ...] = ()  # one run per point of these axes' product (lab.run.sweep)
    sweep_order: str = "interleaved"  # or "blocked"
    guest_timeout: float | None = None  # None: the `guest_timeout` of lab.toml
    adopt: bool = False  # take up iterations the guests journalled for a run the store lacks
    host_age: str | None = None  # the host's age level (fresh, f80): checked, part of the key
    replicate: int = 1  # the k-th run of the same settings: part of the key when above 1


@dataclass(frozen=True)
class RunOutcome:
    workload: str
    key: str  # the run's key in the store (a sweep's: the sweep's key)
    n: int
    guests: int
    db: str
    interrupted: bool = False  # Ctrl-C: the runners were stopped, the samples so far kept
    completed: int | None = None  # with a stopping rule that stopped: iterations per guest
    decision: Any = None  # lab.stats.sequential.Decision once a rule stopped the run
    sweep: tuple[tuple[str, str], ...] = ()  # a sweep's runs: (value, run key), in its order


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
    """The `lab run` command as typed (near enough): for a second run that is refused, and
    as the command that resumes this one (everything its key and its store depend on)."""
    argv = ["lab", "run", request.workload, "--n", str(request.n), "--study", request.study]
    for key, value in request.params:
        argv += ["-p", f"{key}={value}"]
    argv += ["--schedule", request.schedule] if request.schedule != "sync" else []
    argv += ["--until", request.until] if request.until else []
    argv += ["--swap-every", str(request.swap_every)] if request.swap_every is not None else []
    argv += ["--reboot-every", str(request.reboot_every)] if request.reboot_every else []
    argv += ["--db", request.db] if request.db else []
    argv += ["--warmup", request.warmup] if request.warmup is not None else []
    for axis in request.sweep:
        argv += ["--sweep", f"{axis.key}={','.join(axis.values)}"]
    argv += ["--sweep-order", request.sweep_order] if request.sweep else []
    argv += ["--hosts", request.hosts] if request.hosts else []
    argv += ["--host-age", request.host_age] if request.host_age else []
    argv += ["--replicate", str(request.replicate)] if request.replicate > 1 else []
    return argv + (["--guests", ",".join(request.guests)] if request.guests else [])


def check_request(request: RunRequest, workloads: Mapping[str, Workload] | None = None) -> Workload:
    """Refuse what no lab could run (before any lab is needed); returns the workload, one of
    ``workloads`` (by default the shipped ones)."""
    if request.n < 1:
        raise UsageError(f"--n must be 1 or more, not {request.n}", hint="e.g. --n 30")
    if request.max_failures < 0:
        raise UsageError(f"--max-failures must be 0 or more, not {request.max_failures}")
    if request.guest_timeout is not None and not request.guest_timeout > 0:
        raise UsageError(
            f"--guest-timeout must be above 0 seconds, not {request.guest_timeout}",
            hint="e.g. --guest-timeout 300",
        )
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
    if request.replicate < 1:
        raise UsageError(f"--replicate {request.replicate}: replicates count from 1",
                         hint="Leave it out for a run's first replicate")  # fmt: skip
    workload = get_workload(request.workload, workloads)
    workload.resolve(dict(request.params))
    if request.host_age is not None:
        age_index(request.host_age)
        if request.sweep:
            raise UsageError(
                "--host-age runs one run at one host age, not a sweep",
                hint="Run each value at each age as its own run, or drop --host-age",
            )
    check_sweep(request, workload)
    return workload


def check_sweep(request: RunRequest, workload: Workload) -> SweepPlan | None:
    """The request's sweep checked against the workload (None without one)."""
    if not request.sweep:
        return None
    if request.until:
        raise UsageError(
            "--until stops one run on its verdict; a sweep's values are read together, with"
            " their verdicts corrected for each other",
            hint="Drop --until and give --n (lab plan --from-store --sweep says how many from a"
            " pilot sweep)",
        )
    return plan_sweep(workload, request.params, request.sweep, request.sweep_order)


def run_workload(ctx: Context, request: RunRequest) -> RunOutcome:
    """Run (or resume) the iterations ``request`` asks for, storing every sample: one run,
    or a sweep's runs in the sweep's order."""
    # deferred: heavy (scipy, through the stopping rules and the progress display)
    from lab.guests.bringup import shell_for
    from lab.run.controller import STORE_CACHE_KIB, Controller, RunPlan
    from lab.run.hostside import host_side
    from lab.run.progress import RunProgress
    from lab.run.sweep import SweepRun, record_sweep, sweep_key
    from lab.store import Store

    workload = check_request(request, workloads_for(ctx.config))
    sweep = check_sweep(request, workload)
    if request.reboot_every:
        from lab.stats.bootstop import too_few_boots  # deferred: scipy

        ruled = request.until is not None and request.until.strip() == "verdict"
        few = too_few_boots(request.n, request.reboot_every, request.confidence, ruled)
        if few is not None:
            ctx.warn(few)
    up = require_up(ctx, request.hosts)
    if request.host_age is not None:
        check_host_age(
            request.host_age, aged_fact(Path(ctx.config.state_dir)), host_index(ctx.host.read_text)
        )
    state = next((st for site, st in up if not site.remote), up[0][1])
    everyone = guests_of(up)
    names = request.guests or tuple(g.name for g in everyone)
    guests = [guest_named(everyone, name) for name in names]
    _check_remote(workload, guests)
    if request.swap_every is not None:
        check_swap_plan(request.schedule, guests, request.swap_every)
    key = None
    if sweep is not None:
        key = sweep_key(request.study, workload.name, sweep.fixed, sweep.axes, names, request.n,
                        request.schedule, sweep.order, request.swap_every)  # fmt: skip
    plan = RunPlan(
        study=request.study,
        workload=workload,
        params=workload.resolve(dict(request.params)),
        n=request.n,
        schedule=request.schedule,
        max_failures=request.max_failures,
        until=request.until,
        confidence=request.confidence,
        threshold=parse_threshold(request.threshold),
        swap_every=request.swap_every,
        warmup=request.warmup,
        counters=request.counters,
        sweep=key,
        guest_timeout=request.guest_timeout or float(ctx.config.guest_timeout),
        resume=f"`{shlex.join(command_line(request))}`",
        adopt=request.adopt,
        reboot_every=request.reboot_every,
        host_age=request.host_age,
        replicate=request.replicate,
    )
    plans = [replace(plan, params=p) for p in sweep.params] if sweep else [plan]
    labels = sweep.labels() if sweep else [""]
    for each in plans:
        _check_specs(workload, each.params, up, guests, plan.runner_dir)
    db = str(store_path(ctx, request.db))
    local = [g for g in guests if g.host == LOCAL]
    shells: dict[str, GuestShell] = {}  # one connection per guest, whatever the values

    def shell(record: GuestRecord) -> GuestShell:
        if record.name not in shells:
            shells[record.name] = shell_for(ctx, record)
        return shells[record.name]

    with (
        run_lock(Path(ctx.config.state_dir), command_line(request), ctx.warn),
        Store.open(Path(db), cache_kib=STORE_CACHE_KIB) as store,
        host_side(ctx, workload, [p.params for p in plans], state, local, plan.runner_dir),
        RunProgress(ctx, request.n) as progress,
    ):
        controllers = [
            Controller(ctx, store, state, guests, each, shell, progress.update, sites=up)
            for each in plans
        ]  # fmt: skip
        for controller, label in zip(controllers, labels, strict=True):
            if request.warmup is not None:  # analysis, not identity: not part of the run's key
                store.record_warmup(controller.run_id, request.warmup)
            progress.start(controller, label)
        outcome = RunOutcome(workload.name, key or controllers[0].key, request.n, len(guests), db)
        if sweep is not None and key is not None:
            record_sweep(store, controllers[0].study_id, key, workload.name, sweep.axes,
                         sweep.order, [(c.run_id, dict(p)) for c, p in
                                       zip(controllers, sweep.points, strict=True)])  # fmt: skip
            outcome = replace(outcome, sweep=tuple(
                (label, c.key) for label, c in zip(labels, controllers, strict=True)))  # fmt: skip
        driver = SweepRun(controllers, sweep.order, request.n) if sweep else None
        try:
            if driver is not None:
                driver.run()
            else:
                controllers[0].run()
        except KeyboardInterrupt:
            running = driver.active if driver is not None else controllers[0]
            if running is not None:
                running.stop_runners()
            return replace(outcome, interrupted=True)
    decision = controllers[0].decision
    if decision is not None and decision.stop:
        done = min(len(g.completed) for g in controllers[0].guests)
        return replace(outcome, completed=done, decision=decision)
    return outcome


def _check_specs(
    workload: Workload, params: Mapping[str, Any], up: list[tuple[Any, Any]],
    guests: list[GuestRecord], work_dir: str,
) -> None:  # fmt: skip
    """What each guest would run, described now: a parameter its guest cannot take (stream's
    arrays, sysbench-oltp's buffer pool, against the guest's memory) is refused before the
    run is stored or anything starts, not at its first runner start."""
    from lab.run.hostside import guest_infos  # deferred, as in run_workload

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
