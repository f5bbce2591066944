"""``lab runs``: the runs in the store, one run whole (``show``), or one removed (``delete``).

A run is named by its key (``lab runs`` lists them) or any unique prefix of it of 4
characters or more.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from lab.app.stores import store_path
from lab.commands.storeoptions import add_db_argument, add_study_argument
from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.text import cell, shown
from lab.core.units import format_timestamp

if TYPE_CHECKING:
    from lab.app.runs import RunDetail, RunSummary

KEY_HELP = "a run key, or a unique prefix of it (4 characters or more)"


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "runs",
        help="list the stored runs; show or delete one",
        description="List every run in the store: its key, study, workload, parameters,"
        " schedule, iterations done of its n per guest, failed attempts, first and last"
        " sample, and whether it stopped early. `lab runs show KEY` prints one run whole;"
        " `lab runs delete KEY` removes it. A unique prefix of a key, of 4 characters or more,"
        " is enough.",
    )
    add_db_argument(parser)
    add_study_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the runs as JSON")
    parser.set_defaults(run=run_list)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    show = actions.add_parser("show", help="one run whole: parameters, guests, failures")
    show.add_argument("key", metavar="KEY", help=KEY_HELP)
    show.add_argument("--json", action="store_true", help="print the run as JSON")
    show.set_defaults(run=run_show)
    delete = actions.add_parser("delete", help="remove a run and all its samples")
    delete.add_argument("key", metavar="KEY", help=KEY_HELP)
    delete.add_argument("--yes", action="store_true", help="do not ask first")
    delete.set_defaults(run=run_delete)


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    return format_timestamp(stamp)


def _params(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()) if v is not None) or "-"


def _guests(summary: RunSummary) -> str:
    target = summary.target_n or 0
    parts = [f"{g.guest} {g.done}/{target}" + (f" ({g.failed} failed)" if g.failed else "")
             for g in summary.guests]  # fmt: skip
    return "\n".join(parts) or "no attempt yet"


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    from rich.table import Table

    from lab.app.runs import open_existing, summaries  # deferred: the store loads numpy

    with open_existing(store_path(ctx, args.db)) as store:
        found = summaries(store, args.study)
    if args.json:
        ctx.print_json([s.to_json() for s in found])
        return 0
    if not found:
        ctx.out.print("no runs stored yet. Make one: lab run null --n 5")
        return 0
    table = Table("key", "study", "workload", "parameters", "schedule", "done per guest",
                  "first sample", "last sample", "state")  # fmt: skip
    for s in found:
        firsts = [g.first for g in s.guests if g.first is not None]
        lasts = [g.last for g in s.guests if g.last is not None]
        early = s.state == "stopped early"
        state = f"{s.state}: {s.stopped}" if early else s.state
        params = _params(s.params) + (f"\nof sweep {s.sweep}" if s.sweep else "")
        table.add_row(*map(cell, (s.key, s.study, s.workload, params, s.schedule or "-",
                      _guests(s), _when(min(firsts, default=None)),
                      _when(max(lasts, default=None)), state)))  # fmt: skip
    ctx.out.print(table)
    return 0


def run_show(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.runs import detail, open_existing  # deferred, as above

    with open_existing(store_path(ctx, args.db)) as store:
        found = detail(store, args.key, args.study, ctx.config)
    if args.json:
        ctx.print_json(found.to_json())
        return 0
    _print_detail(ctx, found)
    return 0


def _print_detail(ctx: Context, found: RunDetail) -> None:
    """Every line is text from the store, printed as text (``cell``): never markup, its
    control characters escaped; only the run's heading and two labels are styled."""
    from rich.text import Text

    s = found.summary

    def out(line: str, style: str = "") -> None:
        ctx.out.print(cell(line, style), highlight=False)

    out(f"run {s.key}  ({s.state}{': ' + s.stopped if s.stopped else ''})", "bold")
    out(f"  study       {s.study}")
    out(f"  workload    {s.workload}, n = {s.target_n}, schedule {s.schedule or '-'}")
    out(f"  parameters  {_params(s.params)}")
    if s.sweep:
        out(f"  sweep       {s.sweep} (lab compare --sweep {s.sweep} shows its values together)")
    out(f"  metrics     {', '.join(m['name'] + ' (' + m['unit'] + ')' for m in found.metrics)}")
    out(f"  warm-up     {found.warmup or 'none declared'}")
    out(f"  created     {_when(s.created)}")
    out(f"  command     {found.command}")
    for g in s.guests:
        placed = found.placements.get(g.guest, {})
        where = ", ".join(f"{k} {v}" for k, v in sorted(placed.items()))
        out(f"  guest {g.guest} ({g.variant} on {g.host}): {g.done}/{s.target_n} done,"
            f" {g.failed} failed attempts, {_when(g.first)} to {_when(g.last)}"
            + (f"; placements: {where}" if where else ""))  # fmt: skip
    for where, facts in found.environment.items():
        out(f"  environment of {where}:")
        for fact, value in sorted(facts.items()):
            out(f"    {fact:<24} {value}")
    if not found.environment:
        out("  environment not recorded (a run stored before lab recorded it, or imported)")
    for label, lines in (
        ("changed between starts:", found.environment_changes),
        ("the guests differ beyond their variant:", found.twins_differ),
    ):
        for line in lines:
            ctx.out.print(Text.assemble("  ", (label, "yellow"), " ", cell(line)))
    if found.failures:
        out(f"  the last {len(found.failures)} failed attempts:")
        for f in found.failures:
            out(f"  - {f.guest} iteration {f.iteration} attempt {f.attempt}"
                f" ({_when(f.started)}, exit status {f.exit_status}):")  # fmt: skip
            out("      " + f.output_tail.strip().replace("\n", "\n      "))


def run_delete(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.runs import delete, find_run, open_existing  # deferred, as above

    with open_existing(store_path(ctx, args.db)) as store:
        run = find_run(store, args.key, args.study)
        if not args.yes:
            if not sys.stdin.isatty():
                raise UsageError(  # its question read "(w, study s)?. Nothing was deleted"
                    f"deleting run {run.key} ({run.workload}, study {run.study}) is asked first,"
                    " and standard input is no terminal to ask on",
                    hint="Nothing was deleted: pass --yes to delete it without being asked",
                )
            try:
                answer = input(shown(f"delete run {run.key} ({run.workload}, study {run.study})?")
                               + " [y/N] ")  # fmt: skip
            except EOFError:  # Ctrl-D: no answer is no (it was "a bug in lab")
                ctx.out.print("")
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                ctx.out.print("nothing deleted")
                return 0
        run, samples = delete(store, run.key, args.study)
    ctx.out.print(cell(f"deleted run {run.key}: {samples} samples and its attempts"))
    return 0
