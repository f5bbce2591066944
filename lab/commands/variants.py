"""``lab variants``: the known variants, what each changes and what it needs from the host."""

from __future__ import annotations

import argparse
from typing import Any

from lab.core.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "variants",
        help="list the variants a twin can be",
        description="List the variant plug-ins (domains/*.py and lab.toml's variant_dirs): name,"
        " delta, host requirements. A plug-in file that failed to load is listed with its error,"
        " and the status is then 2. Then the factors: one level of each of some factors makes"
        " a cell, which is a variant too, named by its levels joined by dots (page-1g.prealloc-on:"
        " 1 GiB pages, preallocated), so that a study can tell which factor moved a result.",
    )
    parser.add_argument("--json", action="store_true", help="print the variants as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from rich.table import Table

    from lab.app.catalogue import factors
    from lab.app.catalogue import variants as known
    from lab.core.text import cell

    variants = known(ctx)
    if args.json:
        found: list[dict[str, object]] = [
            {"name": name, "description": v.description, "needs": v.requirement_text()}
            for name, v in sorted(variants.items())
        ]
        found += [
            {"name": name, "broken": True, "file": err.path, "error": err.reason}
            for name, err in sorted(variants.broken.items())
        ]
        ctx.print_json(found)
    else:
        table = Table("variant", "what it changes", "needs from the host")
        for name, variant in sorted(variants.items()):
            # plug-in files' words: text, never markup
            table.add_row(*map(cell, (name, variant.description, variant.requirement_text())))
        for name, err in sorted(variants.broken.items()):
            table.add_row(cell(name), cell(f"BROKEN: {err.path}: {err.reason}"), "-",
                          style="bold red")  # fmt: skip
        ctx.out.print(table)
        levels = Table("factor", "level (FACTOR-LEVEL in a cell)", "what it changes")
        for factor in factors().values():
            for level in factor.levels.values():
                levels.add_row(cell(factor.name), cell(level.label), cell(level.description))
        ctx.out.print(levels)
        ctx.out.print("a cell: levels joined by dots, e.g. page-1g.prealloc-on (lab up --pair"
                      " page-thp.prealloc-on,page-1g.prealloc-on)")  # fmt: skip
    variants.refuse_broken()
    return 0
