"""``lab config``: every configuration key with its value and what it means."""

from __future__ import annotations

import argparse
import os
from typing import Any

from lab.core.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "config",
        help="show the configuration keys, values and meanings",
        description="Say which lab.toml was read and why (--config, $LAB_CONFIG, ./lab.toml,"
        " $XDG_CONFIG_HOME/lab/lab.toml or ~/.config/lab/lab.toml, or none), then show every"
        " key with its current value and documentation. $LAB_DB names the store over the"
        " file's `store`.",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from rich.table import Table

    from lab.core.config import config_origin
    from lab.core.text import cell, shown  # lab.toml's values: text, never markup

    path, why = config_origin(args.config)
    ctx.out.out(f"config file: {shown(str(path)) if path else '-'} ({why})", highlight=False)
    if os.environ.get("LAB_DB"):
        ctx.out.out(f"store: {shown(ctx.config.store)} (named by $LAB_DB)", highlight=False)
    table = Table("key", "value", "meaning")
    for key, value, doc in ctx.config.describe():
        table.add_row(*map(cell, (key, value, doc)))
    ctx.out.print(table)
    return 0
