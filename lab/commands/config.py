"""``lab config``: every configuration key with its value and what it means."""

from __future__ import annotations

import argparse
from typing import Any

from lab.core.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "config",
        help="show the configuration keys, values and meanings",
        description="Show every lab.toml key with its current value and documentation.",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from rich.table import Table

    from lab.core.text import cell  # lab.toml's values: text, never markup

    table = Table("key", "value", "meaning")
    for key, value, doc in ctx.config.describe():
        table.add_row(*map(cell, (key, value, doc)))
    ctx.out.print(table)
    return 0
