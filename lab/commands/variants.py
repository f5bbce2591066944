"""``lab variants``: the known variants, what each changes and what it needs from the host."""

from __future__ import annotations

import argparse
from typing import Any

from lab.core.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "variants",
        help="list the variants a twin can be",
        description="List the variant plug-ins (domains/*.py): name, delta, host requirements.",
    )
    parser.add_argument("--json", action="store_true", help="print the variants as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from rich.table import Table

    from lab.guests.variants import load_variants

    if args.json:
        found = [
            {"name": name, "description": v.description, "needs": v.requirement_text()}
            for name, v in sorted(load_variants().items())
        ]
        ctx.print_json(found)
        return 0
    table = Table("variant", "what it changes", "needs from the host")
    for name, variant in sorted(load_variants().items()):
        table.add_row(name, variant.description, variant.requirement_text())
    ctx.out.print(table)
    return 0
