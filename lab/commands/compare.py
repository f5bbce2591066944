"""``lab compare``: the study's table per variant, the difference, a verdict, diagnostics."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lab.commands.options import THRESHOLD_HELP, selection
from lab.commands.storeoptions import (
    add_db_argument,
    add_factor_from_runs_argument,
    add_run_argument,
    add_study_argument,
    add_sweep_argument,
    add_warmup_argument,
)
from lab.core.context import Context
from lab.core.errors import UsageError

if TYPE_CHECKING:
    from lab.app.analyse import AnalyseRequest, Analysis


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "compare", help="compare the variants of every workload and metric in the store",
        description="For each workload and metric: the reference study's table per variant"
        " (mean, samples, sd, min, max, margin of error t·s/√n, from batch means where the"
        " samples are autocorrelated, as in the summary); the difference B − A with a"
        " Welch interval, the ratio of means, the median difference, Brunner–Munzel p and"
        " effect sizes; a verdict (faster, slower, equivalent or inconclusive against"
        " --threshold); and diagnostics of the samples (tails, outliers, autocorrelation,"
        " drift, warm-up). With more than two variants, every pair, its verdict"
        " Bonferroni-adjusted for the metric's pairs (the Brunner–Munzel p also"
        " Benjamini–Hochberg adjusted). A is the variant whose guest was stored first (the"
        " first imported) unless --baseline says."
        " For synchronised runs (schedule or parameter `sync`) or with --paired, also the"
        " paired analysis by iteration: paired t interval, Wilcoxon signed-rank p and how much"
        " variance pairing removed. For runs that swapped the twins' CPU sets (lab run"
        " --swap-every), also the variant effect and the placement effect (which CPU set)"
        " told apart by a two-way model, each with its interval. Before all of it, the warm-up"
        " each run declared (lab run --warmup) is left out, or the one --warmup says; a"
        " Warm-up table shows what was cut and what a CUSUM test and MSER-5 make of each arm."
        " The runs of a sweep (lab run --sweep) are compared value by value: a row per value,"
        " the verdicts corrected together (--correction), and the crossing, the smallest value"
        " where B is better beyond the threshold.",
    )  # fmt: skip
    add_db_argument(parser)
    add_study_argument(parser)
    parser.add_argument("--workload", metavar="W", help="only this workload")
    add_run_argument(parser)
    add_sweep_argument(parser)
    parser.add_argument(
        "--effects-correction", choices=("bonferroni", "none"), default="bonferroni",
        help="a factorial's effect intervals (a workload whose variants are cells such as"
        " page-1g.prealloc-on, or an import's factor.NAME columns): bonferroni (all of them"
        " hold together at --confidence; default) or none (each on its own, as Jain prints"
        " them)",
    )  # fmt: skip
    add_factor_from_runs_argument(parser)
    parser.add_argument(
        "--correction", choices=("holm", "bh"), default="holm",
        help="how a sweep's verdicts are corrected for their number: holm (Holm's step-down:"
        " the chance of any false verdict among the values stays within 1 − confidence;"
        " default) or bh (Benjamini–Hochberg: the expected share of false verdicts among those"
        " made does), each on the value's p, the smallest α at which its intervals give its"
        " verdict",
    )  # fmt: skip
    parser.add_argument(
        "--against", metavar="KEY",
        help="compare the run --run names with this run, variant by variant (before and"
        " after a change, one variant on two hosts, an A/A check)",
    )  # fmt: skip
    parser.add_argument("--metric", metavar="M", help="only this metric")
    parser.add_argument(
        "--confidence", type=float, default=99.99, metavar="PERCENT",
        help="confidence level of every interval (default: 99.99, as the study)",
    )  # fmt: skip
    parser.add_argument(
        "--threshold", default="1%", metavar="T",
        help=f"{THRESHOLD_HELP} (default: 1%%)",
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
        "--detail", action="store_true",
        help="after the summary, every table: each arm's sd, min, max, margin, diagnostics,"
        " the tests (also with --workload W --metric M)",
    )  # fmt: skip
    parser.add_argument(
        "--fail-on", choices=("worse",),
        help="exit with status 9 when any verdict says B is worse than A (for CI pipelines)",
    )  # fmt: skip
    parser.add_argument(
        "--format", choices=("table", "markdown", "json", "csv"), default="table",
        help="output format (default: table)",
    )  # fmt: skip
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.analyse import (  # deferred: the parser is built for every command
        analyse,
        analyse_by_host,
    )

    if args.by == "host":
        if args.format not in ("table", "json"):  # it printed the table, as if asked for it
            raise UsageError(
                f"--by host writes a table or JSON, not {args.format}",
                hint="Pass --format table or --format json with --by host",
            )
        from lab.report.formats import print_by_host  # deferred: heavy (scipy)

        print_by_host(ctx.out, analyse_by_host(ctx, request(args)), args.format)
        return 0
    from concurrent.futures import ThreadPoolExecutor  # deferred: parser for every command (2 ms)

    from lab.app.environment import environment_report  # deferred, as above

    analysis = analyse(ctx, request(args))
    analysis.refuse_nothing_to_compare()
    with ThreadPoolExecutor(1) as pool:
        # The environment's evidence is SQLite's aggregates over every backing sample (0.3 s
        # for the seed study's 1.4 million), read on a connection of its own while the
        # comparisons are written: SQLite does them without holding Python's lock. (Not
        # sooner: the analysis's start is scipy's import, beside a child reading samples.)
        environment = pool.submit(environment_report, ctx, selection(args))
        print_comparisons(
            ctx, analysis, args.format, args.detail or bool(args.workload and args.metric)
        )
        said = environment.result()
    if analysis.alone:  # the summary has no row for them: say why, once
        ctx.note(f"not compared, one variant only: {', '.join(analysis.alone)}")
    detail = args.detail or bool(args.workload and args.metric) or args.format != "table"
    for line in said.notes if detail else [said.pointer] if said.pointer else []:
        ctx.note(line)
    for line in said.warnings:
        ctx.warn(line)
    if args.fail_on == "worse":
        fail_on_worse(analysis)
    return 0


def fail_on_worse(analysis: Analysis) -> None:
    from lab.app.analyse import WorseVerdict  # deferred, as above
    from lab.report.summary import worse
    from lab.report.sweeps import per_value

    per_sweep_value = [c for s in analysis.sweeps for c in per_value(s)]
    found = worse([*analysis.comparisons, *per_sweep_value])
    if found:
        named = "; ".join(f"{r.workload} · {r.metric}: {r.change}" for r in found)
        raise WorseVerdict(
            f"B is worse than A in {len(found)} verdict(s): {named}",
            hint="--fail-on worse fails a pipeline on such a verdict; see the table above",
        )


def request(args: argparse.Namespace) -> AnalyseRequest:
    from lab.app.analyse import AnalyseRequest  # deferred: the parser is built for every command

    return AnalyseRequest(
        selection(args), args.confidence, args.threshold, trim=args.trim,
        paired="always" if args.paired else "synced", correction=args.correction,
        effects_correction=args.effects_correction,
    )  # fmt: skip


def print_comparisons(ctx: Context, analysis: Analysis, form: str, detail: bool = True) -> None:
    """The comparisons as ``--format`` says: table (the summary, then with ``detail`` the
    full tables), markdown, json or csv; each sweep as its table, after them."""
    # deferred: heavy (scipy)
    from lab.report import formats
    from lab.report import sweeps as sweep_format

    comparisons, sweeps = analysis.comparisons, analysis.sweeps

    if form == "table":
        formats.print_summary(ctx.out, comparisons)
        if analysis.factorials:
            from lab.report.effects import print_effects

            print_effects(ctx.out, analysis.factorials)
        for sweep in sweeps:
            sweep_format.print_sweep(ctx.out, sweep)
        if detail:
            formats.print_tables(ctx.out, comparisons)
            for sweep in sweeps:
                formats.print_tables(ctx.out, sweep_format.per_value(sweep))
        else:
            ctx.err.print(
                "[dim]the full tables (sd, min, max, diagnostics, tests): lab compare --detail,"
                " or --workload W --metric M[/]"
            )
    elif form == "markdown":
        ctx.out.file.write(formats.markdown(comparisons))
        ctx.out.file.write("".join(sweep_format.markdown(sweep) for sweep in sweeps))
    elif form == "json":
        factorials = [a.to_json() for a in analysis.factorials]
        ctx.out.file.write(formats.comparison_json(comparisons, sweeps, factorials) + "\n")
    else:
        ctx.out.file.write(formats.comparison_csv(comparisons, sweeps))
