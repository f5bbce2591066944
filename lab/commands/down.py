"""``lab down``: destroy the guests and remove their clones and seeds."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lab.commands.guestoptions import add_hosts_argument
from lab.commands.show import print_down
from lab.core.context import Context

if TYPE_CHECKING:
    from lab.app.down import DownRequest


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "down",
        help="destroy the pair and remove its clones and seeds",
        description="Destroy and undefine the lab's guests and delete their disks, seeds and"
        " console logs. The base image and the result store are kept.",
    )
    add_hosts_argument(parser, default="every host where a lab is up")
    parser.add_argument(
        "--force",
        action="store_true",
        help="go ahead even while a `lab run` (or demo, or study) holds the lab: that run"
        " loses its guests and stops (refused otherwise, exit status 8)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.down import down  # deferred: the parser is built for every command

    print_down(ctx, down(ctx, request(args)))
    return 0


def request(args: argparse.Namespace) -> DownRequest:
    from lab.app.down import DownRequest  # deferred: the parser is built for every command

    return DownRequest(args.hosts, args.force)
