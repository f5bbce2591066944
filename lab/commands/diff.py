"""``lab diff A B``: show that twins differ only by the variant and their identity."""

from __future__ import annotations

import argparse
from typing import Any

from lab.commands.guestoptions import add_twin_arguments, twin_sizing
from lab.core.context import Context
from lab.core.text import cell


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "diff",
        help="show how the twins' domains differ",
        description="Build the pair A,B as `lab up` would and print every difference between"
        " the two domains, grouped as the variants' declared delta, the guests' identity"
        " (name, files, MAC, pinned CPUs) and anything unexplained. Exit status 1 when"
        " something unexplained differs.",
    )
    parser.add_argument("a", help="first variant")
    parser.add_argument("b", help="second variant")
    parser.add_argument(
        "--live", action="store_true",
        help="compare the running twins' QEMU command lines instead: the variant's delta, the"
        " consequences libvirt adds (preallocated hugetlb memory, its hugetlbfs path), identity"
        " and anything unexplained",
    )  # fmt: skip
    parser.add_argument(
        "--json", action="store_true", help="print the differences as JSON, one object each"
    )
    add_twin_arguments(parser)
    parser.set_defaults(run=run)


def run_live(args: argparse.Namespace, ctx: Context) -> int:
    from rich.table import Column, Table

    from lab.app.livediff import live_differences  # deferred: libvirt, only with --live

    a, b, found = live_differences(ctx, args.a, args.b)
    unexplained = [d for d in found if d.kind == "unexplained"]
    if args.json:
        ctx.print_json([{"kind": d.kind, "option": d.option, "a": d.a, "b": d.b,
                         "meaning": d.meaning} for d in found])  # fmt: skip
        return 1 if unexplained else 0
    table = Table("kind", "option", Column(header=cell(a)), Column(header=cell(b)), "meaning",
                  title=cell(f"QEMU: {a} vs {b}"))  # fmt: skip
    order = {"variant": 0, "consequence": 1, "unexplained": 2, "identity": 3}
    for d in sorted(found, key=lambda d: (order.get(d.kind, 9), d.option)):
        style = "bold red" if d.kind == "unexplained" else None
        table.add_row(*map(cell, (d.kind, d.option, d.a, d.b, d.meaning)), style=style)
    ctx.out.print(table)
    if unexplained:
        ctx.warn(f"{len(unexplained)} option(s) are neither the variant, its consequences nor"
                 " the identity")  # fmt: skip
        return 1
    return 0


def run(args: argparse.Namespace, ctx: Context) -> int:
    from rich.table import Column, Table

    from lab.app.twins import pair_difference

    if args.live:
        return run_live(args, ctx)

    found = pair_difference(ctx, args.a, args.b, twin_sizing(args))
    a, b, changes = found.a, found.b, found.changes
    unexplained = [c for c in changes if c.kind == "unexplained"]
    if args.json:
        ctx.print_json([{"kind": c.kind, "path": c.path, "a": c.a, "b": c.b, "by": c.by}
                        for c in changes])  # fmt: skip
        return 1 if unexplained else 0
    table = Table("kind", "path", Column(header=cell(a)), Column(header=cell(b)),
                  title=cell(f"{a} vs {b}"))  # fmt: skip
    for change in sorted(changes, key=lambda c: (c.kind != "variant", c.kind, c.path)):
        style = "bold red" if change.kind == "unexplained" else None
        kind = f"variant ({change.by})" if change.by else change.kind
        table.add_row(*map(cell, (kind, change.path, change.a or "-", change.b or "-")),
                      style=style)  # fmt: skip
    ctx.out.print(table)
    if unexplained:
        ctx.warn(f"{len(unexplained)} difference(s) are neither the variant nor the identity")
        return 1
    return 0
