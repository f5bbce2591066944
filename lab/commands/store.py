"""``lab store check``: the store's integrity, its counts, and rows left without their owner."""

from __future__ import annotations

import argparse
from typing import Any

from lab.app.stores import store_path
from lab.commands.storeoptions import add_db_argument
from lab.core.context import Context
from lab.core.errors import StoreError
from lab.core.text import cell


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "store", help="check the result store", description="Check the result store."
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="SQLite's integrity check, the counts, and orphaned rows",
        description="Run SQLite's integrity check on the store, count its studies, runs,"
        " guests, attempts and samples, and look for rows whose owner is gone. Exits with"
        " status 5 when it finds a problem.",
    )
    add_db_argument(check)
    check.add_argument("--json", action="store_true", help="print the check as JSON")
    check.set_defaults(run=run_check)


def run_check(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.runs import check_store, open_existing  # deferred: the store loads numpy

    with open_existing(store_path(ctx, args.db)) as store:
        found = check_store(store)
    if args.json:
        ctx.print_json(found.to_json())
    else:
        ctx.out.print(cell(f"store {found.path}"))  # a path and SQLite's words: text
        ctx.out.print(cell(f"  integrity  {', '.join(found.integrity)}"))
        for table, count in found.counts.items():
            ctx.out.print(f"  {table:<10} {count:,}")
        for what, count in found.orphans.items():
            if count:
                ctx.out.print(f"  [red]{count:,} {what}[/]")
    if not found.ok:
        problems = [w for w, c in found.orphans.items() if c]
        if found.integrity != ("ok",):
            problems.insert(0, "SQLite's integrity check failed")
        raise StoreError(
            f"{found.path}: {'; '.join(problems)}",
            hint="Restore the store from a copy; the journals in the guests can refill it",
        )
    return 0
