"""``lab study check|run FILE``: a whole study from its study file (:mod:`lab.app.study`).

``run`` brings the twins up when no lab is up, runs every ``[[workload]]`` in file order as
the ``lab run`` command a user would type (parsed by the real command line and run in this
process), then writes the report. Each ``lab run`` resumes by itself, so running the same
``lab study run FILE`` again after any stop continues the study where it stopped.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.core import units
from lab.core.context import Context
from lab.store.cli import add_db_argument

if TYPE_CHECKING:
    from lab.app.study import Study, StudyWorkload
    from lab.guests.labstate import LabState
    from lab.guests.plan import TwinRequest
    from lab.store import Store


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "study",
        help="check or run a study file: the twins, the workloads in order, the report",
        description="A study file (TOML, see studies/*.toml) holds a whole design: the"
        " variants, the guests' size and image, the confidence and threshold of the verdicts"
        " and the workloads with their parameters, iteration counts or stopping rules and"
        " schedules, run in file order.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="validate a study file and print its plan",
        description="Validate FILE (unknown keys, wrong types, unknown workloads or"
        " parameters, bad stopping rules are refused, naming the key) and print the plan:"
        " each step's `lab run` command, and how long it may take when the store has timed"
        " that workload in this study already.",
    )
    check.add_argument("file", metavar="FILE", help="the study file")
    check.add_argument("--json", action="store_true", help="print the plan as JSON")
    add_db_argument(check)
    check.set_defaults(run=run_check)
    run = actions.add_parser(
        "run",
        help="run a study file (brings the twins up when no lab is up); resumes",
        description="Bring the twins up if no lab is up, store the study file and its sha256"
        " with the results, run every workload in order with `lab run`, then write the report"
        " into a folder beside the store named after the study. Run the same command again"
        " to continue a study that stopped; a changed study file is refused (give it a new"
        " name). A lab that is up with other variants or another size is refused: run"
        " `lab down` first.",
    )
    run.add_argument("file", metavar="FILE", help="the study file")
    add_db_argument(run)
    run.set_defaults(run=run_run)


# -- the plan: pure functions of the study ---------------------------------------------------


def param_text(value: object) -> str:
    """A parameter value as ``-p KEY=VALUE`` takes it."""
    return str(value)


def run_argv(study: Study, workload: StudyWorkload, db: str) -> list[str]:
    """The ``lab run`` command line (without ``lab``) of one step of the study."""
    argv = ["run", workload.name, "--n", str(workload.n), "--schedule", workload.schedule,
            "--study", study.name, "--db", db]  # fmt: skip
    for key, value in workload.params.items():
        argv += ["-p", f"{key}={param_text(value)}"]
    if workload.until is not None:
        argv += ["--until", workload.until, "--confidence", str(study.confidence),
                 "--threshold", study.threshold]  # fmt: skip
    if workload.swap_every is not None:
        argv += ["--swap-every", str(workload.swap_every)]
    if workload.warmup is not None:
        argv += ["--warmup", workload.warmup]
    return argv


def report_dir(study: Study, db: str) -> Path:
    """Where the study's report goes: a folder beside the store, named after the study."""
    return Path(db).parent / f"report-{study.name}"


def report_argv(study: Study, db: str) -> list[str]:
    return ["report", "--db", db, "--study", study.name, "--out", str(report_dir(study, db)),
            "--confidence", str(study.confidence), "--threshold", study.threshold,
            "--baseline", ",".join(study.variants)]  # fmt: skip


def twin_request(study: Study, ctx: Context) -> TwinRequest:
    from lab.guests.plan import TwinRequest

    reserve = study.reserve_host_cpus
    return TwinRequest(
        variants=list(study.variants),
        vcpus=study.vcpus,
        memory=study.memory,
        reserve_host_cpus=ctx.config.reserve_host_cpus if reserve is None else reserve,
    )


def check_lab(state: LabState, study: Study) -> None:
    """Refuse a lab that is up with other variants, another guest size or another image."""
    from lab.core.errors import UsageError

    up = sorted(g.variant for g in state.guests)
    hint = "Run `lab down`, then `lab study run` again: it brings the study's pair up"
    if up != sorted(study.variants):
        raise UsageError(
            f"a lab is up with variants {','.join(up)}; the study {study.name!r} needs"
            f" {','.join(study.variants)}",
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
    """Store the study file's text and sha256 with the study (refused if it changed)."""
    return store.ensure_study(
        study.name, description=study.description, study_file=study.text,
        study_hash=study.sha256,
    )  # fmt: skip


def estimate_seconds(workload: StudyWorkload, per_iteration: float | None) -> float | None:
    """How long a step may take from the median time of one iteration (None: unknown).

    ``alternate`` runs the two guests one after the other; ``concurrent`` and ``sync`` at
    once. With a stopping rule it is the longest the run may take.
    """
    if per_iteration is None:
        return None
    guests_in_turn = 2 if workload.schedule == "alternate" else 1
    return workload.n * per_iteration * guests_in_turn


def format_duration(seconds: float | None) -> str:
    return "unknown" if seconds is None else units.format_duration(seconds)


# -- the side effects, passed in -------------------------------------------------------------


@dataclass(frozen=True)
class StudySteps:
    """What ``lab study run`` does to the world; tests hand in fakes.

    ``command`` runs one ``lab`` command line (``["run", ...]``, ``["report", ...]``) and
    returns its exit status; ``parse`` only checks that it would be accepted.
    """

    lab_state: Callable[[], LabState | None]
    bring_up: Callable[[TwinRequest], None]
    parse: Callable[[list[str]], object]
    command: Callable[[list[str]], int]


class InProcessCli:
    """`lab` command lines parsed by the real parser and run in this process."""

    def __init__(self, ctx: Context) -> None:
        from lab.cli import build_parser

        self.ctx = ctx
        self.parser = build_parser()

    def parse(self, argv: list[str]) -> argparse.Namespace:
        from lab.core.errors import UsageError

        try:
            return self.parser.parse_args(argv)
        except SystemExit as exit_:  # argparse has printed why, on stderr
            if exit_.code in (0, None):
                raise
            raise UsageError(
                f"this lab's command line refuses the step `lab {shlex.join(argv)}`",
                hint="See the message above; `lab run --help` lists what it accepts",
            ) from None

    def __call__(self, argv: list[str]) -> int:
        args = self.parse(argv)
        return int(args.run(args, self.ctx) or 0)


def real_steps(ctx: Context) -> StudySteps:
    cli = InProcessCli(ctx)

    def lab_state() -> LabState | None:
        from lab.guests.labstate import load_state

        return load_state(Path(ctx.config.state_dir))

    def up(request: TwinRequest) -> None:
        from lab.commands.up import PHASES
        from lab.core.progress import PhaseBoard
        from lab.guests.bringup import bring_up
        from lab.guests.memory import check_host_memory

        check_host_memory(ctx, request)
        with PhaseBoard(ctx.err, PHASES) as board:
            result = bring_up(ctx, request, board.update)
        ctx.out.print(
            f"up: {', '.join(f'{g.name} ({g.variant})' for g in result.state.guests)},"
            f" {result.state.accelerator}, verified",
            highlight=False,
        )

    return StudySteps(lab_state=lab_state, bring_up=up, parse=cli.parse, command=cli)


def run_study(ctx: Context, study: Study, db: str, steps: StudySteps) -> int:
    """Every step of ``study`` in order; the first that fails stops the study (its status).

    Every ``lab run`` step is parsed before the first one starts, so a step this lab's
    command line refuses stops the study before anything is brought up or run.
    """
    from lab.store import Store

    plan = [run_argv(study, w, db) for w in study.workloads] + [report_argv(study, db)]
    for argv in plan:
        steps.parse(argv)
    with Store.open(db) as store:
        record_study(store, study)
    state = steps.lab_state()
    if state is None:
        ctx.err.rule(f"lab up --pair {','.join(study.variants)} (from {study.name})")
        steps.bring_up(twin_request(study, ctx))
    else:
        check_lab(state, study)
        ctx.note(f"using the lab that is up ({', '.join(g.name for g in state.guests)})")
    for number, argv in enumerate(plan, 1):
        ctx.err.rule(f"{study.name} {number}/{len(plan)}: lab {shlex.join(argv)}")
        status = steps.command(argv)
        if status != 0:
            ctx.err.print(
                f"[bold red]lab study: `lab {shlex.join(argv)}` stopped ({status}).[/bold red]"
                " Every finished iteration is stored: run `lab study run` with the same file"
                " to continue.",
                highlight=False,
            )
            return status
    ctx.out.print(
        f"study {study.name}: {len(study.workloads)} workloads stored in {db}; report in"
        f" {report_dir(study, db) / 'index.html'}",
        highlight=False,
        soft_wrap=True,
    )
    return 0


# -- the commands ----------------------------------------------------------------------------


def _stored_seconds(db: Path, study: Study) -> dict[str, float]:
    """Median seconds of one iteration per workload of this study, from an existing store."""
    import numpy as np

    from lab.store import Store

    if not db.is_file():
        return {}
    found = {}
    with Store.open(db) as store:
        for workload in study.workloads:
            seconds = store.iteration_seconds(workload.name, study.name)
            if len(seconds):
                found[workload.name] = float(np.median(seconds))
    return found


def _stored_hash(db: Path, study: Study) -> str | None:
    from lab.store import Store

    if not db.is_file():
        return None
    with Store.open(db) as store:
        return next((s.study_hash for s in store.studies() if s.name == study.name), None)


def _time_text(workload: StudyWorkload, estimate: float | None) -> str:
    if estimate is None:
        return "time unknown"
    return f"{'at most ' if workload.until else 'about '}{format_duration(estimate)}"


def describe_plan(
    study: Study, db: str, seconds: dict[str, float], default_image: str = "(lab.toml)"
) -> list[str]:
    """The plan as lines of text: the design, then each step with its command and time."""
    lines = [
        f"study {study.name} ({study.path or 'study file'}, sha256 {study.sha256[:16]})",
        f"  {study.description}" if study.description else "",
        f"  twins: {' vs '.join(study.variants)} (A = {study.variants[0]}),"
        f" {study.vcpus} vCPU{'s' if study.vcpus > 1 else ''} and {study.memory} each,"
        f" image {study.image or default_image}",
        f"  verdicts at {study.confidence:g} % confidence, threshold {study.threshold}",
    ]
    estimates, total = step_estimates(study, seconds)
    for number, (workload, estimate) in enumerate(estimates, 1):
        params = " ".join(f"{k}={param_text(v)}" for k, v in workload.params.items())
        lines += [
            f"  {number}. {workload.name} {params or '(default parameters)'}:"
            f" {workload.describe()}, {workload.schedule};"
            f" {_time_text(workload, estimate)}",
            f"     lab {shlex.join(run_argv(study, workload, db))}",
        ]
    lines += [
        f"  {len(study.workloads) + 1}. lab {shlex.join(report_argv(study, db))}",
        f"  estimated time: {format_duration(total)}"
        + ("" if total is not None else " (known once the store has timed every workload)"),
    ]
    return [line for line in lines if line]


def step_estimates(
    study: Study, seconds: dict[str, float]
) -> tuple[list[tuple[StudyWorkload, float | None]], float | None]:
    """Each step with its estimated seconds, and their total (None where any is unknown)."""
    estimates = [(w, estimate_seconds(w, seconds.get(w.name))) for w in study.workloads]
    known = [e for _, e in estimates if e is not None]
    return estimates, sum(known) if len(known) == len(estimates) else None


def plan_json(study: Study, db: str, seconds: dict[str, float], image: str) -> str:
    """The plan as ``lab study check --json`` prints it: the design, each step's command and
    estimated seconds (null until the store has timed that workload), and the total."""
    steps: list[dict[str, object]] = []
    estimates, total = step_estimates(study, seconds)
    for workload, estimate in estimates:
        steps.append(
            {
                "workload": workload.name,
                "params": dict(workload.params),
                "n": workload.n,
                "schedule": workload.schedule,
                "until": workload.until,
                "swap_every": workload.swap_every,
                "warmup": workload.warmup,
                "argv": ["lab", *run_argv(study, workload, db)],
                "estimated_s": estimate,
            }
        )
    return json.dumps(
        {
            "name": study.name,
            "file": str(study.path) if study.path else None,
            "sha256": study.sha256,
            "description": study.description,
            "variants": list(study.variants),
            "vcpus": study.vcpus,
            "memory": study.memory,
            "image": study.image or image,
            "confidence": study.confidence,
            "threshold": study.threshold,
            "steps": steps,
            "report_argv": ["lab", *report_argv(study, db)],
            "estimated_s": total,
        },
        indent=2,
    )


def run_check(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.study import load_study
    from lab.store.cli import store_path

    study = load_study(args.file)
    db = store_path(args, ctx)
    image = f"{ctx.config.image} (lab.toml)"
    cli = InProcessCli(ctx)
    for workload in study.workloads:
        cli.parse(run_argv(study, workload, str(db)))
    if args.json:
        text = plan_json(study, str(db), _stored_seconds(db, study), ctx.config.image)
        ctx.out.out(text, highlight=False)
        return 0
    for line in describe_plan(study, str(db), _stored_seconds(db, study), image):
        ctx.out.print(line, highlight=False, soft_wrap=True, markup=False)
    stored = _stored_hash(db, study)
    if stored and stored != study.sha256:
        ctx.warn(
            f"{db} holds study {study.name!r} from another version of this file (sha256"
            f" {stored[:16]}): `lab study run` will refuse it; give the changed study a new name"
        )
    ctx.out.print(f"{args.file}: valid", highlight=False)
    return 0


def run_run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.study import load_study
    from lab.run.lock import run_lock
    from lab.store.cli import store_path

    study = load_study(args.file)
    if study.image is not None:
        ctx.config = replace(ctx.config, image=study.image)
    db = str(store_path(args, ctx))
    argv: Sequence[str] = ["lab", "study", "run", args.file]
    # Held for the whole study (its `lab run` steps take it again): a `lab run`, a demo or
    # a second study started meanwhile is refused instead of sharing this pair.
    with run_lock(Path(ctx.config.state_dir), argv, ctx.warn):
        return run_study(ctx, study, db, real_steps(ctx))
