"""``lab demo``: the main job end to end, a short real study with the embedded defaults
(:mod:`lab.app.demo`), each step shown as the `lab` command a user would type."""

from __future__ import annotations

import argparse
from typing import Any

from lab.commands.show import ConsoleShow
from lab.core.context import Context
from lab.core.text import cell


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo",
        help="run a short real study end to end (prepare, build, up, run, compare)",
        description="Prepare the host, build the base image (cached), bring a thp,shp1g pair"
        " up, run short sysbench-memory, iperf3, demo-build and null runs on both twins at"
        " once, compare them, write the report and bring the pair down again. Under TCG it"
        " takes about 10 minutes.",
    )
    parser.add_argument("--n", type=int, default=5, help="iterations per workload (default 5)")
    parser.add_argument("--keep", action="store_true", help="leave the pair up at the end")
    parser.add_argument("--db", help="result store (default: results/demo.db)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.demo import DemoRequest, demo  # deferred: the parser is built for every command

    result = demo(ctx, DemoRequest(args.n, args.keep, args.db), ConsoleShow(ctx))
    if result.status == 0:
        ctx.out.print(cell(f"demo done: results in {result.db}, report under {result.report_dir}"))
    return result.status
