"""``lab xml``: print the libvirt domain a variant's guest would get."""

from __future__ import annotations

import argparse
from typing import Any

from lab.commands.guestoptions import add_twin_arguments, twin_sizing
from lab.core.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "xml",
        help="print the domain XML of a variant's guest",
        description="Print the libvirt domain XML a guest of VARIANT gets on this host"
        " (accelerator, CPU pinning and paths as `lab up` would choose them).",
    )
    parser.add_argument("--variant", required=True, help="variant name (see `lab variants`)")
    add_twin_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.twins import plan  # deferred: the parser is built for every command

    twins = plan(ctx, [args.variant], twin_sizing(args))
    ctx.note(f"accelerator: {twins.accel.accelerator} ({twins.accel.reason})")
    ctx.out.out(twins.guests[0].spec.to_string(), end="", highlight=False)
    return 0
