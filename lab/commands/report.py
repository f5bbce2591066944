"""``lab report``: the study report as one offline HTML page with its figures."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lab.commands.options import THRESHOLD_HELP, selection
from lab.commands.show import print_report
from lab.commands.storeoptions import (
    add_db_argument,
    add_factor_from_runs_argument,
    add_run_argument,
    add_study_argument,
    add_sweep_argument,
    add_warmup_argument,
)
from lab.core.context import Context

if TYPE_CHECKING:
    from lab.app.report import ReportRequest


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report", help="write the study report (HTML with figures, readable offline)",
        description="Write DIR/index.html: the tables of `lab compare`, per workload and metric"
        " histograms overlaid per variant, box/violin plots, run-order plots with a running"
        " median, normal Q–Q plots, the means with their margins and the difference with its"
        " confidence interval; a Warm-up table of what was left out as warm-up (each run's"
        " declaration, or --warmup) with a CUSUM test and MSER-5 per arm; a By-host table where"
        " the twins ran on several hosts (as `lab compare --by host`); for a sweep (lab run"
        " --sweep), its table, crossing and a plot of the change against the parameter, with"
        " what backed each twin's memory at each value; then the studies,"
        " runs, attempts, guests, their facts and domain XML and the XML diff between the"
        " twins. No network is needed to read it.",
    )  # fmt: skip
    parser.add_argument(
        "--out", metavar="DIR",
        help="folder to write (default: a `report` folder beside the store)",
    )  # fmt: skip
    parser.add_argument(
        "--embed", action=argparse.BooleanOptionalAction, default=True,
        help="the figures inside index.html (the default: the page alone is the whole report,"
        " moved or mailed as one file); --no-embed writes them as PNG files in figures/ beside"
        " it, and then both are the report",
    )  # fmt: skip
    parser.add_argument("--workload", metavar="W", help="only this workload")
    add_run_argument(parser)
    add_sweep_argument(parser)
    parser.add_argument("--metric", metavar="M", help="only this metric")
    parser.add_argument("--confidence", type=float, default=99.99, metavar="PERCENT",
                        help="confidence level (default: 99.99)")  # fmt: skip
    parser.add_argument("--threshold", default="1%", metavar="T",
                        help=f"{THRESHOLD_HELP} (default: 1%%)")  # fmt: skip
    parser.add_argument("--baseline", metavar="V[,V...]", help="variant order; the first is A")
    parser.add_argument("--trim", action="store_true",
                        help="add the results without far-out outliers to the tables")  # fmt: skip
    parser.add_argument("--correction", choices=("holm", "bh"), default="holm",
                        help="how a sweep's verdicts are corrected together, as lab compare"
                        " --correction (default: holm)")  # fmt: skip
    add_warmup_argument(parser)
    add_factor_from_runs_argument(parser)
    add_study_argument(parser)
    add_db_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.report import report  # deferred: the parser is built for every command

    print_report(ctx, report(ctx, request(args)))
    return 0


def request(args: argparse.Namespace) -> ReportRequest:
    # deferred: they load libvirt, lxml or numpy, and the parser is built for every command
    from lab.app.analyse import AnalyseRequest
    from lab.app.report import ReportRequest

    analysis = AnalyseRequest(selection(args), args.confidence, args.threshold, trim=args.trim,
                              correction=args.correction)  # fmt: skip
    return ReportRequest(analysis, out=args.out, embed=args.embed)
