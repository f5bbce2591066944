"""``lab report``: the study report as one offline HTML page with its figures."""

from __future__ import annotations

import argparse
from typing import Any

from lab.core.context import Context
from lab.store.cli import add_db_argument, add_study_argument, add_warmup_argument


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report", help="write the study report (HTML with figures, readable offline)",
        description="Write DIR/index.html: the tables of `lab compare`, per workload and metric"
        " histograms overlaid per variant, box/violin plots, run-order plots with a running"
        " median, normal Q–Q plots, the means with their margins and the difference with its"
        " confidence interval; a Warm-up table of what was left out as warm-up (each run's"
        " declaration, or --warmup) with a CUSUM test and MSER-5 per arm; a By-host table where"
        " the twins ran on several hosts (as `lab compare --by host`); then the studies,"
        " runs, attempts, guests, their facts and domain XML and the XML diff between the"
        " twins. No network is needed to read it.",
    )  # fmt: skip
    parser.add_argument(
        "--out", metavar="DIR",
        help="folder to write (default: a `report` folder beside the store)",
    )  # fmt: skip
    parser.add_argument("--embed", action="store_true",
                        help="embed the figures in the page, not as PNG files")  # fmt: skip
    parser.add_argument("--workload", metavar="W", help="only this workload")
    parser.add_argument("--metric", metavar="M", help="only this metric")
    parser.add_argument("--confidence", type=float, default=99.99, metavar="PERCENT",
                        help="confidence level (default: 99.99)")  # fmt: skip
    parser.add_argument("--threshold", default="1%", metavar="PERCENT",
                        help="smallest change that matters (default: 1%%)")  # fmt: skip
    parser.add_argument("--baseline", metavar="V[,V...]", help="variant order; the first is A")
    parser.add_argument("--trim", action="store_true",
                        help="add the results without far-out outliers to the tables")  # fmt: skip
    add_warmup_argument(parser)
    add_study_argument(parser)
    add_db_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from pathlib import Path

    from lab.core.errors import UsageError
    from lab.report.html import ReportMeta, render
    from lab.report.images import image_summaries
    from lab.stats.analysis import analyse, with_hosts, with_placement, with_warmup
    from lab.stats.verdict import parse_percent
    from lab.store.cli import open_store, series_without_warmup, store_path, variant_order

    threshold = parse_percent(args.threshold)
    path = store_path(args, ctx)
    with open_store(args, ctx) as store:
        trimmed = series_without_warmup(store, args)
        series = trimmed.series
        order = args.baseline.split(",") if args.baseline else variant_order(store, args.study)
        studies = [s for s in store.studies() if args.study in (None, s.name)]
        guests = store.guests(args.study)
        placements = trimmed.aligned(store.placement_labels(args.workload, args.metric, args.study))
        meta = ReportMeta(
            store_path=str(path), studies=studies, guests=guests,
            runs=store.runs(args.study), attempts=store.attempt_counts(args.study),
            images=image_summaries(guests, Path(ctx.config.image_dir)),
        )  # fmt: skip
    if not series:
        raise UsageError(
            "no samples in the store to report on",
            hint="Collect some with `lab run` or bring them in with `lab import FILE`",
        )
    comparisons = analyse(series, args.confidence, threshold, order=order, trim=args.trim)
    if placements:  # the twins swapped CPU sets (lab run --swap-every): a Placement table
        comparisons = with_placement(comparisons, series, placements)
    comparisons = with_warmup(comparisons, trimmed.cuts)
    comparisons = with_hosts(comparisons, series)  # pairs on several hosts: a By-host table
    out = Path(args.out) if args.out else path.parent / "report"
    try:
        index = render(comparisons, meta, out, embed=args.embed)
    except OSError as err:
        message = f"cannot write the report to {out}: {err}"
        raise UsageError(message, hint="Pass another --out") from None
    ctx.out.print(f"wrote {index}", highlight=False, soft_wrap=True)
    return 0
