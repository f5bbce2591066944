"""``lab import FILE``: bring results people already have into the store, with file:line."""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
from typing import Any, BinaryIO

from lab.commands.storeoptions import add_db_argument
from lab.core.context import Context
from lab.core.errors import UsageError

SHOWN = 10  # malformed lines skipped (--skip-bad) that are named, each on its line


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "import",
        help="bring existing results in (CSV, JSONL, hyperfine, pyperf, pytest-benchmark,"
        " time, sysbench, iperf3)",
        description="Import samples into the store. CSV and JSONL need the columns variant,"
        " workload, metric and value (optional: iteration, timestamp, unit, direction, guest,"
        " host, study; a row with ok 0, as `lab export` writes a failed attempt, is stored as"
        " that failed attempt, with its iteration, attempt, exit_status, wall, user, sys,"
        " error, source and boot; a row with ok 1, as it writes a sample, gives its successful"
        " attempt's number, ended, exit_status, wall, user, sys and source, which its"
        " iteration is stored with); raw files are appended bash `time` output, sysbench"
        " memory reports,"
        " or iperf3 client text or -J output, and need --variant. hyperfine --export-json"
        " (each command a variant), pyperf's JSON and pytest-benchmark's JSON (run with"
        " --benchmark-save-data; each benchmark a workload, or with --workload W a metric of"
        " W named after it; two of one name are refused) carry every run's time, and GNU"
        " `time -v` reports give wall, user, sys and max RSS; all but hyperfine need"
        " --variant. Every sample keeps its file:line (in a JSON document: its number in"
        " it; in a row of lab export's, the source the row gives, if any). A malformed line"
        " fails the import and nothing is stored, unless"
        " --skip-bad. Values must be finite and at most 1e75 in size (lab compare squares"
        " variances), iterations 1 to 2**53, timestamps in the years 1970 to 9999, and"
        " names at most 200 characters without control characters. Importing the same"
        " bytes again (from any file or standard input) stores nothing; importing a file"
        " again adds only what was appended to it since. The variant stored first (the"
        " first file's first row) is A in lab compare, B's change read against it: import"
        " the baseline first, or name it with lab compare --baseline V.",
    )  # fmt: skip
    parser.add_argument(
        "files", nargs="+", metavar="FILE",
        help="results file(s) to import; - reads standard input (its samples' source is stdin)",
    )  # fmt: skip
    parser.add_argument(
        "--format", default="auto",
        choices=("auto", "csv", "jsonl", "time", "sysbench", "iperf3", "iperf3-json",
                 "hyperfine", "pyperf", "pytest-benchmark", "gnu-time"),
        help="the file's format (default: from its name and first line)",
    )  # fmt: skip
    parser.add_argument("--variant", metavar="V", help="variant of the samples (raw files)")
    parser.add_argument(
        "--workload", metavar="W",
        help="workload name (default for raw files: time, sysbench-memory or iperf3)",
    )  # fmt: skip
    parser.add_argument("--study", metavar="NAME", help="study to add to (default: imported)")
    parser.add_argument("--guest", metavar="NAME", help="guest name (default: the variant)")
    parser.add_argument("--host", metavar="NAME", help="host name (default: local)")
    parser.add_argument("--unit", metavar="UNIT", help="unit of metrics the file leaves open")
    parser.add_argument(
        "--direction", choices=("lower", "higher"),
        help="which way is better, for metrics whose name and unit do not say",
    )  # fmt: skip
    parser.add_argument(
        "--skip-bad", action="store_true",
        help="import the readable samples and list the malformed lines instead of failing",
    )  # fmt: skip
    add_db_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.importing import ImportOptions, import_files
    from lab.app.stores import store_path

    options = ImportOptions(
        format=args.format, study=args.study, variant=args.variant, workload=args.workload,
        guest=args.guest, host=args.host, unit=args.unit, direction=args.direction,
        skip_bad=args.skip_bad,
    )  # fmt: skip
    if args.files.count("-") > 1:
        raise UsageError("standard input (-) is named twice", hint="Name it once")
    summaries = import_files(store_path(ctx, args.db), args.files, options, _standard_input())
    for name, summary in zip(args.files, summaries, strict=True):
        shown = summary.bad[:SHOWN]  # the first ones, each one bounded line; then a count
        for bad in shown:
            _say(ctx, f"{name}:{bad.line}: {bad.message} (skipped)", warning=True)
        if summary.bad_count > len(shown):
            more = summary.bad_count - len(shown)
            _say(ctx, f"{name}: {more:,} more malformed line(s) skipped", warning=True)
        parts = [f"read {summary.read} sample(s) as {summary.format}"]
        if summary.same is not None:
            parts.append(
                f"the same bytes were imported before ({summary.same.describe()}): nothing stored"
            )
            _say(ctx, f"{name}: " + "; ".join(parts))
            continue
        parts.append(f"stored {summary.stored} new iteration(s)")
        parts.extend(
            f"{study}/{workload} {variant}" + (f" ({guest})" if guest != variant else "")
            + f": {n}"
            for (study, workload, variant, guest), n in sorted(summary.groups.items())
        )  # fmt: skip
        if summary.failed_read:
            parts.append(
                f"{summary.failed} failed attempt(s) restored"
                + (
                    f", {kept} already stored"
                    if (kept := summary.failed_read - summary.failed)
                    else ""
                )
            )
        if summary.already:
            parts.append(f"{summary.already} sample(s) imported before, skipped")
        if summary.duplicates:
            parts.append(f"{summary.duplicates} iteration number(s) already stored, kept")
        if summary.bad_count:
            parts.append(f"skipped {summary.bad_count} malformed line(s)")
        _say(ctx, f"{name}: " + "; ".join(parts))
    return 0


def _say(ctx: Context, message: str, warning: bool = False) -> None:
    """A line on stderr, its text as it is (names from files are data, not markup).

    The summary goes to stderr too: once the transaction is committed nothing is written
    that could fail (`lab import >/dev/full` used to store the samples, then exit 1), and
    stdout stays empty for whatever reads it."""
    from rich.text import Text  # deferred, as the command's other imports: only run needs it

    prefix = ("lab: warning:", "bold yellow") if warning else ("lab:", "dim")
    ctx.err.print(Text.assemble(prefix, " ", message), highlight=False, soft_wrap=True)


def _standard_input() -> BinaryIO | None:
    """Standard input's bytes, or None when it is closed (``lab import - <&-``): Python
    makes the stream None, and lab.cli holds a closed descriptor 0 on /dev/null opened
    write-only (so that no file the lab opens takes its number), which cannot be read."""
    if sys.stdin is None:
        return None
    try:
        if fcntl.fcntl(0, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
            return None
    except OSError:
        return None
    return sys.stdin.buffer
