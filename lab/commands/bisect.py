"""``lab bisect``: the first commit between GOOD and BAD that made a command slower, each step
a twin study with a verdict of its own (bad, good, or unknown: more pairs, and at the cap the
commit is skipped), the chance of naming a wrong commit bounded by --alpha."""

from __future__ import annotations

import argparse
import math
import shlex
from pathlib import Path
from typing import Any

from lab.app.stores import store_path
from lab.commands.storeoptions import add_db_argument
from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.text import cell

NOT_FOUND = 125  # as git bisect skips: skipped commits leave the first bad one open


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bisect",
        help="find the commit that made a command slower, a twin study at each step",
        description="Bisect GOOD..BAD of --repo on the pair that is up. Each step checks the"
        " candidate and GOOD out into the guests' NFS tree (git archive), runs --build there"
        " once, and times ARGV on both twins in sync, swapped between them at each"
        " measurement, reading the log ratio candidate/GOOD of each pair. BAD against GOOD"
        " first sets the gap; a candidate is bad when it is slower than GOOD by at least half"
        " the gap, good when within it, unknown while its anytime-valid interval straddles"
        " half the gap (--batch more pairs, up to --cap, then skipped). Each step spends"
        " alpha/(⌈log2(N−1)⌉+2), so the chance of naming a wrong commit is at most --alpha."
        " Every run is stored; every step in bisect-ID.jsonl beside the store, so the same"
        " command resumes. Exit 125 when skipped commits leave the first bad one open.",
    )  # fmt: skip
    parser.add_argument("--repo", required=True, metavar="DIR", help="the git repository")
    parser.add_argument("--good", required=True, metavar="REV", help="a commit that is fast")
    parser.add_argument("--bad", required=True, metavar="REV", help="a later commit, slower")
    parser.add_argument(
        "--build", default="", metavar="CMD",
        help="run in each checkout once per measurement, untimed (e.g. make)",
    )  # fmt: skip
    parser.add_argument(
        "--alpha", type=float, default=0.05,
        help="the chance of naming a wrong commit, at most (default: 0.05)",
    )  # fmt: skip
    parser.add_argument("--cap", type=int, default=300, help="pairs at most per step (300)")
    parser.add_argument(
        "--batch", type=int, default=10, metavar="N",
        help="pairs per measurement, a step's first and each further look (default: 10); each"
        " measurement is a run, whose start costs seconds in the guests, so where a step"
        " needs many pairs a larger batch is faster, at the price of coarser looks",
    )  # fmt: skip
    parser.add_argument("--study", default="bisect", help="the study its runs are stored in")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    add_db_argument(parser)
    parser.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- ARGV",
                        help="the command to time in the checkout, after --")  # fmt: skip
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.bisect import BisectRequest, lab_bisect  # deferred: the run machinery

    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        raise UsageError(
            "lab bisect needs the command to time after --",
            hint="e.g. lab bisect --repo . --good v1 --bad v2 --build make -- ./prog",
        )
    request = BisectRequest(
        repo=Path(args.repo), good=args.good, bad=args.bad, argv=shlex.join(argv),
        db=store_path(ctx, args.db), build=args.build, study=args.study, alpha=args.alpha,
        cap=args.cap, batch=args.batch,
    )  # fmt: skip
    found = lab_bisect(ctx, request, ctx.note)
    result = found.result
    if args.format == "json":
        ctx.print_json({**result.to_dict(), "commits": len(found.commits),
                        "steps_file": str(found.steps_file)})  # fmt: skip
    else:
        for step in result.steps:
            low, high = (math.expm1(x) * 100 for x in step.interval)
            ctx.out.print(cell(
                f"step {step.index} {step.commit[:12]} ({step.role}): {step.outcome},"
                f" {math.expm1(step.log_ratio) * 100:+.2f} % against GOOD [{low:+.2f}, {high:+.2f}]"
                f" after {step.n} pairs, α {step.alpha:.3g}"
            ))  # fmt: skip
        if result.first_bad is not None:
            ctx.out.print(cell(f"first bad commit: {result.first_bad}"))
        else:
            ctx.out.print(cell("skipped commits leave it open among: "
                               + " ".join(c[:12] for c in result.candidates)))  # fmt: skip
    return 0 if result.first_bad is not None else NOT_FOUND
