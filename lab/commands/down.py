"""``lab down``: destroy the guests and remove their clones and seeds."""

from __future__ import annotations

import argparse
from typing import Any

from lab.core.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "down",
        help="destroy the pair and remove its clones and seeds",
        description="Destroy and undefine the lab's guests and delete their disks, seeds and"
        " console logs. The base image and the result store are kept.",
    )
    from lab.guests.sites import add_hosts_argument

    add_hosts_argument(parser, default="every host where a lab is up")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.core.errors import LabError
    from lab.guests.bringup import bring_down
    from lab.guests.sites import sites_up

    removed, failed = [], []
    for site, _ in sites_up(ctx, args.hosts):
        try:
            removed += bring_down(ctx, site=site)
        except LabError as err:  # an unreachable host must not keep the others up
            failed.append(f"host {site.name}: {err}")
    ctx.out.print(f"removed: {', '.join(removed)}" if removed else "no lab was up")
    if failed:
        raise LabError(
            "; ".join(failed),
            hint="Its record is kept: run `lab down --hosts NAME` again once it is reachable",
        )
    return 0
