"""``lab study check|run FILE``: a whole study from its study file (:mod:`lab.app.study`).

``check`` validates the file and prints the plan, each step as the ``lab`` command a user
would type; ``run`` runs it (:func:`lab.app.studyrun.run_study`), in this process. Running
the same ``lab study run FILE`` again after any stop continues the study where it stopped.
"""

from __future__ import annotations

import argparse
import json
import shlex
import textwrap
from dataclasses import replace
from typing import Any

from lab.app.catalogue import variants, workloads
from lab.app.stores import store_path
from lab.app.study import Study, StudyWorkload, key_reference, load_study
from lab.commands.show import ConsoleShow
from lab.commands.storeoptions import add_db_argument
from lab.core.context import Context
from lab.core.paths import STUDIES_DIR
from lab.core.text import cell


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "study",
        help="check or run a study file: the twins, the workloads in order, the report",
        description=textwrap.fill(
            "A study file (TOML) holds a whole design: the variants, the guests' size and"
            " image, the confidence and threshold of the verdicts and the workloads with"
            " their parameters, iteration counts or stopping rules and schedules, run in file"
            f" order. Examples to start from: {STUDIES_DIR}/*.toml",
            break_on_hyphens=False,  # the folder's path whole, to copy
            break_long_words=False,
        ),
        epilog=key_reference(),  # the table is laid out already: kept as it is
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        " to continue a study that stopped: a block whose runs are all done in the store is"
        " not brought up (nor the host aged) again; a changed study file is refused (give it a new"
        " name). A lab that is up with other variants or another size is refused: run"
        " `lab down` first.",
    )
    run.add_argument("file", metavar="FILE", help="the study file")
    add_db_argument(run)
    run.set_defaults(run=run_run)
    show = actions.add_parser(
        "show",
        help="print the design a factorial study ran with, as the store keeps it",
        description="Print the design stored when a factorial study ran: its factors and"
        " levels, a fraction's generators, defining relation and alias sets, its cells and"
        " those left out with why, its blocks in run order and their seed.",
    )
    show.add_argument("name", metavar="NAME", help="the study's name (`lab runs` lists them)")
    show.add_argument("--json", action="store_true", help="print the design as JSON")
    add_db_argument(show)
    show.set_defaults(run=run_show)


def _time_text(workload: StudyWorkload, estimate: float | None) -> str:
    from lab.app.studyrun import format_duration  # deferred: the parser is built for every command

    if estimate is None:
        return "time unknown"
    return f"{'at most ' if workload.until else 'about '}{format_duration(estimate)}"


def describe_plan(
    study: Study, db: str, seconds: dict[str, float], default_image: str = "(lab.toml)"
) -> list[str]:
    """The plan as lines of text: the design, then each step with its command and time."""
    from lab.app.studyrun import (  # deferred: the parser is built for every command
        format_duration,
        param_text,
        report_argv,
        run_argv,
        step_estimates,
    )

    twins = (
        f"{len(study.pairs)} pairs of cells in turn" if study.design is not None
        else f"{' vs '.join(study.variants)} (A = {study.variants[0]})"
    )  # fmt: skip
    lines = [
        f"study {study.name} ({study.path or 'study file'}, sha256 {study.sha256[:16]})",
        f"  {study.description}" if study.description else "",
        f"  twins: {twins}, {study.vcpus} vCPU{'s' if study.vcpus > 1 else ''} and"
        f" {study.memory} each, image {study.image or default_image}",
        *(f"  {line}" for line in (study.design.lines() if study.design else [])),
        f"  verdicts at {study.confidence:g} % confidence, threshold {study.threshold}",
    ]
    estimates, total = step_estimates(study, seconds)
    aged = "LEVEL" if study.design is not None and study.design.ages else None  # each block's
    for number, (workload, estimate) in enumerate(estimates, 1):
        params = " ".join(f"{k}={param_text(v)}" for k, v in workload.params.items())
        lines += [
            f"  {number}. {workload.name} {params or '(default parameters)'}:"
            f" {workload.describe()}, {workload.schedule};"
            f" {_time_text(workload, estimate)}",
            f"     lab {shlex.join(run_argv(study, workload, db, aged))}",
        ]
        if workload.sweep_plan is not None:
            plan = workload.sweep_plan
            lines.append(f"     sweep: {plan.describe()}, each {workload.describe()}:")
            lines += [f"       {i}. {text}" for i, text in enumerate(plan.labels(), 1)]
    lines += [
        f"  {len(study.workloads) + 1}. lab {shlex.join(report_argv(study, db))}",
        f"  estimated time: {format_duration(total)}"
        + (f" per block, {len(study.steps)} blocks" if study.design is not None else "")
        + ("" if total is not None else " (known once the store has timed every workload)"),
    ]
    return [line for line in lines if line]


def plan_json(study: Study, db: str, seconds: dict[str, float], image: str) -> str:
    """The plan as ``lab study check --json`` prints it: the design, each step's command and
    estimated seconds (null until the store has timed that workload), and the total."""
    from lab.app.design import design_json
    from lab.app.studyrun import (  # deferred: the parser is built for every command
        report_argv,
        run_argv,
        step_estimates,
    )

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
                "sweep": {a.key: list(a.values) for a in workload.sweep} or None,
                "sweep_order": workload.sweep_order if workload.sweep else None,
                "runs": workload.runs,
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
            "design": None if study.design is None else design_json(study.design),
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
    # deferred: they load libvirt, lxml or numpy, and the parser is built for every command
    from lab.app.run import check_request
    from lab.app.studyrun import run_request, stored_hash, stored_seconds

    known = workloads(ctx)
    study = load_study(args.file, known, variants(ctx))
    db = store_path(ctx, args.db)
    image = f"{ctx.config.image} (lab.toml)"
    for workload in study.workloads:
        check_request(run_request(study, workload, str(db)), known)
    if args.json:
        text = plan_json(study, str(db), stored_seconds(db, study), ctx.config.image)
        ctx.out.out(text, highlight=False)
        return 0
    for line in describe_plan(study, str(db), stored_seconds(db, study), image):
        ctx.out.print(line, highlight=False, soft_wrap=True, markup=False)
    stored = stored_hash(db, study)
    if stored and stored != study.sha256:
        ctx.warn(
            f"{db} holds study {study.name!r} from another version of this file (sha256"
            f" {stored[:16]}): `lab study run` will refuse it; give the changed study a new name"
        )
    ctx.out.print(cell(f"{args.file}: valid"), highlight=False)  # a path: text, never markup
    return 0


def run_run(args: argparse.Namespace, ctx: Context) -> int:
    # deferred: they load libvirt, lxml or numpy, and the parser is built for every command
    from lab.app.studyrun import report_dir, run_study_holding_the_lab

    study = load_study(args.file, workloads(ctx), variants(ctx))
    if study.image is not None:
        ctx.config = replace(ctx.config, image=study.image)
    db = str(store_path(ctx, args.db))
    argv = ["lab", "study", "run", args.file]
    result = run_study_holding_the_lab(ctx, study, db, ConsoleShow(ctx), argv)
    if result.status == 0:
        ctx.out.print(
            cell(
                f"study {study.name}: {len(study.workloads)} workloads stored in {db}; report"
                f" in {report_dir(study, db) / 'index.html'}"
            ),
            highlight=False,
            soft_wrap=True,
        )
    return result.status


def run_show(args: argparse.Namespace, ctx: Context) -> int:
    # deferred: they load numpy, and the parser is built for every command
    from lab.app.design import design_json
    from lab.app.runs import open_existing
    from lab.app.studyrun import stored_design

    with open_existing(store_path(ctx, args.db)) as store:
        design = stored_design(store, args.name)
    if args.json:
        ctx.print_json({"study": args.name, "design": design_json(design)})
        return 0
    ctx.out.print(cell(f"study {args.name}"), highlight=False)
    for line in [design.lines()[0], f"  cells: {', '.join(design.cells)}", *design.lines()[1:]]:
        ctx.out.print(cell(f"  {line}"), highlight=False, soft_wrap=True)
    return 0
