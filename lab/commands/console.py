"""``lab console NAME``: the guest's serial console log."""

from __future__ import annotations

import argparse
from typing import Any

from lab.core.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "console",
        help="print a guest's serial console log",
        description="Print the serial console log libvirt keeps for guest NAME.",
    )
    parser.add_argument("name", help="guest name, e.g. thp or lab-thp")
    parser.add_argument("--lines", type=int, default=0, help="only the last N lines")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    import sys

    from lab.app.guestshell import console_lines

    sys.stdout.write("".join(console_lines(ctx, args.name, args.lines)))
    return 0
