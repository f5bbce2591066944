"""``lab history``: one metric's runs in the order they were made, with the versions each ran
(QEMU, libvirt, the host's and the guest's kernel, the image, the lab) and where its level
changed, each change with its ratio interval and the versions that differ across it."""

from __future__ import annotations

import argparse
from typing import Any

from lab.app.stores import store_path
from lab.commands.storeoptions import add_db_argument, add_study_argument
from lab.core.context import Context
from lab.core.text import cell
from lab.core.units import format_timestamp


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "history",
        help="a metric across the runs and versions in the store, and where it changed",
        description="One metric of one workload across every run of it in the store, oldest"
        " first: each run's mean per variant and the versions it ran (QEMU, libvirt, the"
        " host's and the guest's kernel, the image recipe, the lab's commit), all recorded"
        " as each run started. Change points are found by ruptures' PELT on the runs'"
        " medians, located on each run's even samples and measured on its odd ones, so the"
        " ratio interval of each change (the level after over the level before, Fieller's)"
        " does not reuse the data that chose it; the versions that differ across it are"
        " named.",
    )  # fmt: skip
    add_db_argument(parser)
    add_study_argument(parser)
    parser.add_argument("workload", metavar="WORKLOAD", help="the workload whose runs to follow")
    parser.add_argument("--metric", metavar="M", help="the metric (default: the workload's first)")
    parser.add_argument("--variant", metavar="V", help="only this variant (default: each)")
    parser.add_argument(
        "--confidence", type=float, default=95.0, metavar="PCT",
        help="of each change's ratio interval, in percent (default: 95)",
    )  # fmt: skip
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from rich.table import Table

    from lab.app.history import VERSIONS, HistoryRequest, lab_history  # deferred: numpy

    found = lab_history(HistoryRequest(
        store_path(ctx, args.db), args.workload, args.metric, args.variant, args.study,
        args.confidence / 100,
    ))  # fmt: skip
    if args.format == "json":
        ctx.print_json(found.to_json())
        return 0
    for variant, points in found.variants.items():
        table = Table("run", "started", "n", "mean", *VERSIONS,
                      title=cell(f"{found.workload} · {found.metric} on {variant}"),
                      title_justify="left", title_style="bold")  # fmt: skip
        for p in points:
            mean = f"{float(p.values.mean()):.5g} {found.unit}" if p.values.size else "-"
            table.add_row(cell(p.run), format_timestamp(p.created) if p.created else "-",
                          str(p.values.size), mean,
                          *(cell(p.versions.get(name, "-")) for name in VERSIONS))  # fmt: skip
        ctx.out.print(table)
        changes = found.changes.get(variant, [])
        for c in changes:
            low, high = c.point.ratio_ci
            versions = "; ".join(f"{k} {a} → {b}" for k, (a, b) in c.versions.items())
            ctx.out.print(cell(
                f"change at {c.point.version}: ×{c.point.ratio:.4g} [{low:.4g}, {high:.4g}]"
                f" at {c.point.confidence * 100:g} % ({c.point.n_before} samples before,"
                f" {c.point.n_after} after); " + (versions or "no recorded version differs")
            ))  # fmt: skip
        if not changes:
            ctx.out.print(cell(f"no change point ({found.method})"))
    return 0
