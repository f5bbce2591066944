"""``lab study run``'s action: a whole study from its study file (:mod:`lab.app.study`).

:func:`run_study` brings the twins up when no lab is up, runs every ``[[workload]]`` in
file order (:func:`lab.app.run.run_workload`), then writes the report
(:func:`lab.app.report.report`), all in this process with the one :class:`Context`. Each
run resumes by itself, so running the same study again after any stop continues it where
it stopped. The plan's steps are also shown as the ``lab`` commands a user would type.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lab.app.analyse import AnalyseRequest, Selection
from lab.app.design import Design, design_from_json, design_json
from lab.app.report import ReportRequest, ReportResult, report
from lab.app.run import RunOutcome, RunRequest, check_request, run_workload
from lab.app.show import Show
from lab.app.study import Study, StudyWorkload
from lab.app.studydone import block_done
from lab.core import units
from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.text import cell
from lab.guests.labstate import LabState, load_state
from lab.guests.plan import TwinRequest
from lab.host.agelevels import FRESH, age_index
from lab.run.lock import run_lock
from lab.run.workload import get_workload, workloads_for
from lab.store import Store

if TYPE_CHECKING:
    # lab.app.up imports libvirt (the guests' bring-up), and `lab study check` reads this
    # module in the analysis install, which has no libvirt: imported where a study runs.
    from lab.app.up import UpOutcome, UpRequest

INTERRUPTED = 130  # a run stopped by Ctrl-C (128 + SIGINT), as `lab run` exits


# -- the plan: pure functions of the study ---------------------------------------------------


def param_text(value: object) -> str:
    """A parameter value as ``-p KEY=VALUE`` takes it."""
    return str(value)


def run_request(study: Study, workload: StudyWorkload, db: str) -> RunRequest:
    """What one step of the study asks ``run_workload`` for (at a host age of the design's:
    ``dataclasses.replace(..., host_age=level)``)."""
    ruled = workload.until is not None
    return RunRequest(
        workload=workload.name, n=workload.n, schedule=workload.schedule, study=study.name,
        db=db, params=tuple((k, param_text(v)) for k, v in workload.params.items()),
        until=workload.until, confidence=study.confidence if ruled else RunRequest.confidence,
        threshold=study.threshold if ruled else RunRequest.threshold,
        swap_every=workload.swap_every, warmup=workload.warmup, sweep=workload.sweep,
        sweep_order=workload.sweep_order, reboot_every=workload.reboot_every,
    )  # fmt: skip


def run_argv(
    study: Study, workload: StudyWorkload, db: str, host_age: str | None = None,
    replicate: int = 1,
) -> list[str]:  # fmt: skip
    """The ``lab run`` command line (without ``lab``) a user would type for one step."""
    argv = ["run", workload.name, "--n", str(workload.n), "--schedule", workload.schedule,
            "--study", study.name, "--db", db]  # fmt: skip
    for key, value in workload.params.items():
        argv += ["-p", f"{key}={param_text(value)}"]
    if workload.until is not None:
        argv += ["--until", workload.until, "--confidence", str(study.confidence),
                 "--threshold", study.threshold]  # fmt: skip
    if workload.swap_every is not None:
        argv += ["--swap-every", str(workload.swap_every)]
    if workload.reboot_every is not None:
        argv += ["--reboot-every", str(workload.reboot_every)]
    if workload.warmup is not None:
        argv += ["--warmup", workload.warmup]
    for axis in workload.sweep:
        argv += ["--sweep", f"{axis.key}={','.join(axis.values)}"]
    if workload.sweep:
        argv += ["--sweep-order", workload.sweep_order]
    if host_age is not None:
        argv += ["--host-age", host_age]
    if replicate > 1:
        argv += ["--replicate", str(replicate)]
    return argv


def report_dir(study: Study, db: str) -> Path:
    """Where the study's report goes: a folder beside the store, named after the study."""
    return Path(db).parent / f"report-{study.name}"


def report_request(study: Study, db: str) -> ReportRequest:
    """What the study's last step asks ``report`` for."""
    selection = Selection(db=db, study=study.name, baseline=study.variants)
    analysis = AnalyseRequest(selection, study.confidence, study.threshold)
    return ReportRequest(analysis, out=str(report_dir(study, db)))


def report_argv(study: Study, db: str) -> list[str]:
    """The ``lab report`` command line (without ``lab``) a user would type for the last step."""
    return ["report", "--db", db, "--study", study.name, "--out", str(report_dir(study, db)),
            "--confidence", str(study.confidence), "--threshold", study.threshold,
            "--baseline", ",".join(study.variants)]  # fmt: skip


def twin_request(study: Study, ctx: Context, pair: tuple[str, str] | None = None) -> TwinRequest:
    """What ``lab up`` is asked for the study's pair, or for ``pair`` (a block of its design)."""
    reserve = study.reserve_host_cpus
    return TwinRequest(
        variants=list(pair or study.variants),
        vcpus=study.vcpus,
        memory=study.memory,
        reserve_host_cpus=ctx.config.reserve_host_cpus if reserve is None else reserve,
    )


def check_lab(state: LabState, study: Study, pair: tuple[str, str] | None = None) -> None:
    """Refuse a lab that is up with other variants (than ``pair``, a block of the study's
    design, or the study's pair), another guest size or another image."""
    up = sorted(g.variant for g in state.guests)
    wanted = pair or study.variants
    hint = "Run `lab down`, then `lab study run` again: it brings the study's pair up"
    if up != sorted(wanted):
        raise UsageError(
            f"a lab is up with variants {','.join(up)}; the study {study.name!r} needs"
            f" {','.join(wanted)}",
            hint=hint,
        )
    sizes = sorted({len(g.vcpu_cpus) for g in state.guests})
    if sizes != [study.vcpus]:
        raise UsageError(
            f"the lab that is up has {'/'.join(map(str, sizes))} vCPUs per guest; the study"
            f" {study.name!r} asks for {study.vcpus}",
            hint=hint,
        )
    if study.image is not None and state.image != study.image:
        raise UsageError(
            f"the lab that is up runs image {state.image!r}; the study {study.name!r} asks"
            f" for {study.image!r}",
            hint=hint,
        )


def record_study(store: Store, study: Study) -> int:
    """Store the study file's text and sha256 with the study (refused if it changed), and a
    factorial study's design (:func:`record_design`)."""
    study_id = store.ensure_study(
        study.name, description=study.description, study_file=study.text,
        study_hash=study.sha256,
    )  # fmt: skip
    record_design(store, study_id, study)
    return study_id


def record_design(store: Store, study_id: int, study: Study) -> None:
    """Store the design of a factorial study (its cells, blocks in run order, seed, a
    fraction's aliases) as it runs; a study of two variants has none."""
    if study.design is not None:
        store.record_design(study_id, design_json(study.design))


def estimate_seconds(
    workload: StudyWorkload, per_iteration: float | None, seconds: Mapping[str, float] | None = None
) -> float | None:
    """How long a step may take from the median time of one iteration (None: unknown).

    ``alternate`` runs the two guests one after the other; ``concurrent`` and ``sync`` at
    once. With a stopping rule it is the longest the run may take. A sweep makes a run per
    value, each timed by its own stored run where ``seconds`` has one (:func:`run_time_key`),
    else by ``per_iteration``.
    """
    guests_in_turn = 2 if workload.schedule == "alternate" else 1
    points = workload.sweep_plan.params if workload.sweep_plan else [None]
    total = 0.0
    for params in points:
        own = (seconds or {}).get(run_time_key(workload.name, params)) if params else None
        each = own if own is not None else per_iteration
        if each is None:
            return None
        total += workload.n * each * guests_in_turn
    return total


def run_time_key(workload: str, params: Mapping[str, object]) -> str:
    """The key of one stored run's median iteration in :func:`stored_seconds`."""
    return f"{workload} {json.dumps(dict(params), sort_keys=True)}"


def format_duration(seconds: float | None) -> str:
    return "unknown" if seconds is None else units.format_duration(seconds)


# -- the side effects, passed in -------------------------------------------------------------


@dataclass(frozen=True)
class StudyActions:
    """What running a study does to the world; tests hand in fakes."""

    lab_state: Callable[[], LabState | None]
    up: Callable[[UpRequest], UpOutcome]
    run: Callable[[RunRequest], RunOutcome]
    report: Callable[[ReportRequest], ReportResult]
    down: Callable[[], object] | None = None  # between the blocks of a factorial design
    # the host held at an age level (fresh: given back), before a block of a design with an
    # age factor is brought up (lab.app.aging.hold_age)
    age: Callable[[str], object] | None = None
    # whether the store holds every run of a block done (lab.app.studydone), so that it is
    # not brought up again; None: every block runs (and its runs resume)
    done: Callable[[tuple[str, str], list[RunRequest]], bool] | None = None


def block_done_in_store(ctx: Context, pair: tuple[str, str], requests: list[RunRequest]) -> bool:
    """:func:`lab.app.studydone.block_done` for the block whose runs ``requests`` ask for."""
    workloads = workloads_for(ctx.config)  # checked once, before the study's first block
    asked = [(request, get_workload(request.workload, workloads)) for request in requests]
    return block_done(requests[0].db or "", pair, asked)


def real_actions(ctx: Context) -> StudyActions:
    from lab.app.aging import hold_age
    from lab.app.down import DownRequest, down  # deferred: libvirt (see the imports)
    from lab.app.up import up

    return StudyActions(
        lab_state=lambda: load_state(Path(ctx.config.state_dir)),
        up=partial(up, ctx),
        run=partial(run_workload, ctx),
        report=partial(report, ctx),
        down=partial(down, ctx, DownRequest()),
        age=partial(hold_age, ctx),
        done=partial(block_done_in_store, ctx),
    )


@dataclass(frozen=True)
class StudyResult:
    """How far the study got: 0 when every step ran, else the status of the one that stopped."""

    status: int
    runs: tuple[RunOutcome, ...]
    report: ReportResult | None = None


def run_study(
    ctx: Context, study: Study, db: str, show: Show, actions: StudyActions | None = None
) -> StudyResult:
    """Every step of ``study`` in order; the first that stops stops the study.

    Every run is checked before the first one starts, so a step this lab would refuse
    stops the study before anything is brought up or run.
    """
    actions = actions or real_actions(ctx)
    ages = {age for _, age in study.steps}
    workloads = workloads_for(ctx.config)
    for age in ages:
        for w in study.workloads:
            check_request(replace(run_request(study, w, db), host_age=age), workloads)
    with Store.open(db) as store:
        record_study(store, study)
    done: list[RunOutcome] = []
    steps = len(study.steps) * len(study.workloads) + 1
    number = 0
    held: str | None = None  # the host age level set by this study so far
    seen: dict[tuple[tuple[str, str], str | None], int] = {}  # step -> its runs so far
    for block, (pair, age) in enumerate(study.steps, 1):
        replicate = seen[(pair, age)] = seen.get((pair, age), 0) + 1
        requests = [replace(run_request(study, w, db), host_age=age, replicate=replicate)
                    for w in study.workloads]  # fmt: skip
        if actions.done is not None and actions.done(pair, requests):
            number += len(requests)
            where = f"block {block} of {len(study.steps)}" if study.design else "the pair"
            at = f" at host age {age}" if age is not None else ""
            ctx.note(f"{where} ({', '.join(pair)}{at}): every run is done in {db}; not brought"
                     " up again")  # fmt: skip
            continue
        if replicate > 1 and study.steps[block - 2] == (pair, age):
            # a replicate right after its first: a run of its own (its key), on a new boot
            # and, aged, a host aged anew, or it would only repeat the block before it
            held = None
            if age is not None and age_index(age) is not None and actions.age is not None:
                actions.age(FRESH)
        if age is not None and age != held:
            hold_host_age(ctx, study, age, actions, block)
            held = age
        bring_up(ctx, study, pair, actions, show, block)
        for workload, request in zip(study.workloads, requests, strict=True):
            number += 1
            argv = run_argv(study, workload, db, age, replicate)
            ctx.err.rule(cell(f"{study.name} {number}/{steps}: lab {shlex.join(argv)}"))
            outcome = actions.run(request)
            show.run(outcome)
            done.append(outcome)
            if outcome.interrupted:
                ctx.err.print(
                    f"[bold red]lab study: `lab {shlex.join(argv)}` stopped ({INTERRUPTED})."
                    "[/bold red] Every finished iteration is stored: run `lab study run` with"
                    " the same file to continue.",
                    highlight=False,
                )
                return StudyResult(INTERRUPTED, tuple(done))
    if held is not None and age_index(held) is not None and actions.age is not None:
        ctx.err.rule(cell(f"lab host age --undo: {study.name}'s last block ran at {held}"))
        actions.age(FRESH)  # the host given back: what is run next expects it so
    ctx.err.rule(cell(f"{study.name} {steps}/{steps}: lab {shlex.join(report_argv(study, db))}"))
    written = actions.report(report_request(study, db))
    show.report(written)
    return StudyResult(0, tuple(done), written)


def bring_up(
    ctx: Context, study: Study, pair: tuple[str, str], actions: StudyActions, show: Show, block: int
) -> None:
    """Have ``pair`` up: the lab that is up when it is that pair (checked), else brought up,
    after the pair of another block of the design is brought down."""
    state = actions.lab_state()
    label = f" (block {block} of {len(study.steps)})" if study.design is not None else ""
    other = state is not None and sorted(g.variant for g in state.guests) != sorted(pair)
    if other and study.design is not None:
        if actions.down is None:
            raise UsageError("a block of the design needs another pair, and nothing can"
                             " bring the lab down here", hint="Run `lab down`")  # fmt: skip
        ctx.err.rule(cell(f"lab down{label}: the next block is {','.join(pair)}"))
        actions.down()
        state = None
    if state is None:
        ctx.err.rule(cell(f"lab up --pair {','.join(pair)} (from {study.name}{label})"))
        from lab.app.up import UpRequest  # deferred: libvirt (see the imports)

        show.up(actions.up(UpRequest(twin_request(study, ctx, pair))))
    else:
        check_lab(state, study, pair)
        ctx.note(f"using the lab that is up ({', '.join(g.name for g in state.guests)})")


def hold_host_age(ctx: Context, study: Study, age: str, actions: StudyActions, block: int) -> None:
    """Hold the host at ``age`` (a level of the design's age factor) for the next block: the
    lab brought down first (the guests' memory is left free while the host is aged), then
    ``lab host age --level`` (or ``--undo`` for fresh)."""
    if actions.age is None:
        raise UsageError("the design has an age factor, and nothing can age the host here",
                         hint="Run `lab host age` by hand, or drop age from [factors]")  # fmt: skip
    label = f" (block {block} of {len(study.steps)})"
    if actions.lab_state() is not None:
        if actions.down is None:
            raise UsageError("the host is aged with the lab down, and nothing can bring it"
                             " down here", hint="Run `lab down`")  # fmt: skip
        ctx.err.rule(cell(f"lab down{label}: the next block is at host age {age}"))
        actions.down()
    index = age_index(age)
    command = "lab host age --undo" if index is None else f"lab host age --level {index:g}"
    ctx.err.rule(cell(f"{command}{label}: host age {age}"))
    actions.age(age)


def run_study_holding_the_lab(
    ctx: Context, study: Study, db: str, show: Show, argv: list[str]
) -> StudyResult:
    """:func:`run_study` holding the run lock for the whole study (its runs take it again):
    a `lab run`, a demo or a second study started meanwhile is refused instead of sharing
    this pair; ``argv`` is the command it is shown."""
    with run_lock(Path(ctx.config.state_dir), argv, ctx.warn):
        return run_study(ctx, study, db, show)


# -- what `lab study check` reads of a store ---------------------------------------------------


def stored_seconds(db: Path, study: Study) -> dict[str, float]:
    """Median seconds of one iteration per workload of this study, from an existing store,
    and of each of its runs (keyed by :func:`run_time_key`: a sweep's values differ)."""
    if not db.is_file():
        return {}
    found = {}
    with Store.open(db, create=False) as store:  # reads only: also a read-only store
        for workload in study.workloads:
            seconds = store.iteration_seconds(workload.name, study.name)
            if len(seconds):
                found[workload.name] = float(np.median(seconds))
        for run in store.runs(study.name):
            seconds = store.iteration_seconds(run.workload, study.name, run=run.key)
            if len(seconds):
                found[run_time_key(run.workload, run.params)] = float(np.median(seconds))
    return found


def stored_hash(db: Path, study: Study) -> str | None:
    if not db.is_file():
        return None
    with Store.open(db, create=False) as store:
        return next((s.study_hash for s in store.studies() if s.name == study.name), None)


def step_estimates(
    study: Study, seconds: dict[str, float]
) -> tuple[list[tuple[StudyWorkload, float | None]], float | None]:
    """Each step with its estimated seconds, and their total (None where any is unknown)."""
    estimates = [(w, estimate_seconds(w, seconds.get(w.name), seconds)) for w in study.workloads]
    known = [e for _, e in estimates if e is not None]
    return estimates, sum(known) if len(known) == len(estimates) else None


def stored_design(store: Store, name: str) -> Design:
    """The design study ``name`` ran with, as the store keeps it (``lab study show``);
    refused, saying why, for a study the store lacks or one that has no stored design."""
    known = [s.name for s in store.studies()]
    if name not in known:
        raise UsageError(
            f"no study {name!r} in {store.path}",
            hint=f"Its studies: {', '.join(known[:8])}" if known
            else "It holds no study yet: `lab study run FILE` makes one",
        )  # fmt: skip
    document = store.study_design(name)
    if document is None:
        raise UsageError(
            f"study {name!r} in {store.path} has no stored design: it compares two variants,"
            " or it last ran before lab stored designs",
            hint="`lab study check FILE` prints a study file's design; `lab study run FILE`"
            " stores it",
        )
    return design_from_json(document)
