"""``lab export``: every sample with its context, and every failed attempt, as CSV, JSON lines
or Parquet, for other tools and for ``lab import``."""

from __future__ import annotations

import argparse
from typing import Any

from lab.commands.storeoptions import add_db_argument, add_run_argument, add_study_argument
from lab.core.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "export", help="write every sample with its context as CSV, JSON lines or Parquet",
        description="Write every stored sample, one per row, with its study, run, workload,"
        " parameters, schedule, variant, guest, host, iteration, attempt, metric, unit, direction,"
        " value, start and end time, source, boot and CPU placement, ok 1 and the exit"
        " status, wall, user and sys times of its attempt; and every failed attempt, a row"
        " with ok 0, no metric and no value, but its exit status, times and error. As JSON"
        " lines, each run's"
        " recorded environment comes first, one line per host and guest and start (\"record\":"
        " \"environment\"). `lab import` reads either back into the same runs, attempts (each"
        " with its number, times, exit status, source and boot), placements and failed"
        " attempts (and, from JSON lines, environment). Parquet (--out"
        " only) is for pandas and polars, and needs pyarrow: pip install './[parquet]' in"
        " lab's checkout.",
    )  # fmt: skip
    parser.add_argument("--format", choices=("csv", "jsonl", "parquet"), default="csv",
                        help="output format (default: csv)")  # fmt: skip
    parser.add_argument("--out", metavar="FILE", help="write here instead of standard output")
    parser.add_argument("--workload", metavar="W", help="only this workload")
    add_run_argument(parser)
    add_study_argument(parser)
    add_db_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    import contextlib
    import sys

    from lab.app.runs import find_run
    from lab.app.stores import open_store
    from lab.core.errors import UsageError
    from lab.core.outputs import replacing, writing
    from lab.report.export import (
        PARQUET_BATCH,
        Tally,
        design_lines,
        environment_lines,
        require_parquet,
        write_csv,
        write_jsonl,
        write_parquet,
    )

    if args.format == "parquet":
        if not args.out:
            raise UsageError(
                "Parquet is written to a file, not to standard output", hint="Pass --out FILE"
            )
        require_parquet()
    with open_store(ctx, args.db, create=False) as store:
        run = find_run(store, args.run_key, args.study).key if args.run_key is not None else None
        selected = {"workload": args.workload, "study": args.study, "run": run}
        if args.format == "parquet":
            with replacing(args.out, store=store.path) as path:
                batches = Tally(store.export_batches(**selected, size=PARQUET_BATCH))
                count = write_parquet(path, batches)
        else:
            # a file is written whole or not at all (lab.core.outputs); stdout streams
            target = writing(args.out, store=store.path) if args.out else None
            batches = Tally(store.export_batches(**selected))
            with target or contextlib.nullcontext(sys.stdout) as out:
                if args.format == "jsonl":
                    environment_lines(out, store, args.study, args.workload, run)
                    design_lines(out, store, args.study, args.workload, run)
                    count = write_jsonl(out, batches)
                else:
                    count = write_csv(out, batches)
    if args.out:
        what = f"{count - batches.failed:,} sample(s), {batches.failed:,} failed attempt(s)"
        ctx.note(f"wrote {count:,} row(s) ({what}) to {args.out}")
    return 0
