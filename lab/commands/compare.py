"""``lab compare``: the study's table per variant, the difference, a verdict, diagnostics."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lab.core.context import Context
from lab.store.cli import add_db_argument, add_study_argument, add_warmup_argument

if TYPE_CHECKING:
    from lab.stats.analysis import MetricComparison


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "compare", help="compare the variants of every workload and metric in the store",
        description="For each workload and metric: the reference study's table per variant"
        " (mean, samples, sd, min, max, margin of error z·s/√n); the difference B − A with a"
        " Welch interval, the ratio of means, the median difference, Brunner–Munzel p and"
        " effect sizes; a verdict (faster, slower, equivalent or inconclusive against"
        " --threshold); and diagnostics of the samples (tails, outliers, autocorrelation,"
        " drift, warm-up). With more than two variants, every pair, Benjamini–Hochberg"
        " corrected. A is the variant whose guest was stored first unless --baseline says."
        " For synchronised runs (schedule or parameter `sync`) or with --paired, also the"
        " paired analysis by iteration: paired t interval, Wilcoxon signed-rank p and how much"
        " variance pairing removed. For runs that swapped the twins' CPU sets (lab run"
        " --swap-every), also the variant effect and the placement effect (which CPU set)"
        " told apart by a two-way model, each with its interval. Before all of it, the warm-up"
        " each run declared (lab run --warmup) is left out, or the one --warmup says; a"
        " Warm-up table shows what was cut and what a CUSUM test and MSER-5 make of each arm.",
    )  # fmt: skip
    add_db_argument(parser)
    add_study_argument(parser)
    parser.add_argument("--workload", metavar="W", help="only this workload")
    parser.add_argument("--metric", metavar="M", help="only this metric")
    parser.add_argument(
        "--confidence", type=float, default=99.99, metavar="PERCENT",
        help="confidence level of every interval (default: 99.99, as the study)",
    )  # fmt: skip
    parser.add_argument(
        "--threshold", default="1%", metavar="PERCENT",
        help="smallest change that matters, for the verdict (default: 1%%)",
    )  # fmt: skip
    parser.add_argument(
        "--baseline", metavar="V[,V...]",
        help="variant order: the first is A, the others are compared with it and each other",
    )  # fmt: skip
    parser.add_argument(
        "--trim", action="store_true",
        help="also show every result without the samples beyond Tukey's outer fences, side by side",
    )  # fmt: skip
    parser.add_argument(
        "--paired", action="store_true",
        help="also pair the samples by iteration number (automatic for synchronised runs)",
    )  # fmt: skip
    add_warmup_argument(parser)
    parser.add_argument(
        "--by", choices=("host",),
        help="host: the host as a blocking factor: B − A within each host (Welch), then the"
        " hosts combined by inverse-variance weighting, with Cochran's Q for whether they"
        " disagree (for pairs on several hosts, lab run --hosts)",
    )  # fmt: skip
    parser.add_argument(
        "--format", choices=("table", "markdown", "json", "csv"), default="table",
        help="output format (default: table)",
    )  # fmt: skip
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.core.errors import UsageError
    from lab.report import formats
    from lab.stats.analysis import analyse, with_hosts, with_placement, with_warmup
    from lab.stats.paired import synced_workloads
    from lab.stats.verdict import parse_percent
    from lab.store.cli import open_store, series_without_warmup, variant_order

    threshold = parse_percent(args.threshold)
    with open_store(args, ctx) as store:
        trimmed = series_without_warmup(store, args)
        series = trimmed.series
        order = args.baseline.split(",") if args.baseline else variant_order(store, args.study)
        paired = True if args.paired else synced_workloads(store.runs(args.study))
        placements = trimmed.aligned(store.placement_labels(args.workload, args.metric, args.study))
    if not series:
        wanted = ", ".join(
            f"{k} {v!r}"
            for k, v in (
                ("study", args.study),
                ("workload", args.workload),
                ("metric", args.metric),
            )
            if v
        )
        raise UsageError(
            f"no samples in the store{' for ' + wanted if wanted else ''}",
            hint="Collect some with `lab run` or bring them in with `lab import FILE`",
        )
    if args.by == "host":
        return _by_host(ctx, series, order, args)
    comparisons = analyse(
        series, args.confidence, threshold, order=order, trim=args.trim, paired=paired
    )
    if placements:
        comparisons = with_placement(comparisons, series, placements)
    comparisons = with_warmup(comparisons, trimmed.cuts)
    comparisons = with_hosts(comparisons, series)
    if args.format == "table":
        formats.print_tables(ctx.out, comparisons)
    elif args.format == "markdown":
        ctx.out.file.write(formats.markdown(comparisons))
    elif args.format == "json":
        ctx.out.file.write(_json(comparisons) + "\n")
    else:
        ctx.out.file.write(
            formats.as_csv(comparisons) + _paired_csv(comparisons) + _placement_csv(comparisons)
            + _warmup_csv(comparisons)
        )  # fmt: skip
    return 0


def _json(comparisons: Sequence[MetricComparison]) -> str:
    """``formats.as_json`` with a ``paired`` list where the paired analysis ran, a
    ``placement`` object where the CPU sets were swapped, the ``warmup`` of each arm, and a
    ``hosts`` object (as ``--by host`` gives) where the arms ran on several hosts."""
    import json

    from lab.report import formats
    from lab.report.tables import paired_data, placement_data
    from lab.report.warmup import warmup_data
    from lab.stats.blocked import as_dict

    data = formats.as_json_data(comparisons)
    for entry, c in zip(data, comparisons, strict=True):
        if c.paired:
            entry["paired"] = paired_data(c)
        if c.placement is not None:
            entry["placement"] = placement_data(c)
        if c.warmup is not None:
            entry["warmup"] = warmup_data(c.warmup)
        if c.hosts is not None:
            entry["hosts"] = as_dict(c.hosts)
    return json.dumps(data, indent=2, ensure_ascii=False)


def _paired_csv(comparisons: Sequence[MetricComparison]) -> str:
    """Rows of the ``paired`` table in the long CSV layout of ``formats.as_csv`` (no header)."""
    import csv
    import io

    from lab.report.tables import PAIRED_ROWS

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for c in comparisons:
        head = (c.study, c.workload, c.metric, c.unit, c.direction, c.subset)
        for q in c.paired:
            for row in PAIRED_ROWS:
                value = row.get(q)
                if isinstance(value, float):
                    value = repr(value) if math.isfinite(value) else ""
                writer.writerow((*head, "paired", f"{q.b} vs {q.a}", row.key, value))
    return buf.getvalue()


def _placement_csv(comparisons: Sequence[MetricComparison]) -> str:
    """Rows of the ``placement`` table in the long CSV layout (no header)."""
    import csv
    import io

    from lab.report.tables import PLACEMENT_ROWS

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for c in comparisons:
        q = c.placement
        if q is None:
            continue
        head = (c.study, c.workload, c.metric, c.unit, c.direction, c.subset)
        for row in PLACEMENT_ROWS:
            value = row.get(q)
            if isinstance(value, float):
                value = repr(value) if math.isfinite(value) else ""
            writer.writerow((*head, "placement", f"{q.b} vs {q.a}", row.key,
                             "" if value is None else value))  # fmt: skip
    return buf.getvalue()


def _warmup_csv(comparisons: Sequence[MetricComparison]) -> str:
    """Rows of the Warm-up table in the long CSV layout (no header); iterations as '1–2'."""
    import csv
    import io

    from lab.report.warmup import warmup_csv_rows

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for c in comparisons:
        if c.warmup is None:
            continue
        head = (c.study, c.workload, c.metric, c.unit, c.direction, c.subset)
        for subject, key, value in warmup_csv_rows(c.warmup):
            writer.writerow((*head, "warmup", subject, key, value))
    return buf.getvalue()


def _by_host(ctx: Context, series: Any, order: Sequence[str], args: argparse.Namespace) -> int:
    import json

    from lab.core.errors import UsageError
    from lab.report.formats import rich_table
    from lab.report.hosts import host_note, host_table
    from lab.report.tables import TableData
    from lab.stats.blocked import as_dict, by_host

    results = by_host(series, order, args.confidence)
    if not results:
        raise UsageError(
            "no workload has two variants with two samples each on one host",
            hint="Collect more with `lab run`, on pairs of the same variants on each host",
        )
    if args.format == "json":
        ctx.out.file.write(json.dumps([as_dict(r) for r in results], indent=2) + "\n")
        return 0
    for r in results:
        unit = f" ({r.unit})" if r.unit else ""
        ctx.out.print(rich_table(TableData(*host_table(r, f"{r.workload} · {r.metric}{unit}"))))
        ctx.out.print(host_note(r))
    return 0
