"""``lab up``: bring twin guests up from one base image, ready and verified."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lab.commands.guestoptions import (
    add_hosts_argument,
    add_twin_arguments,
    parse_pair,
    twin_sizing,
)
from lab.commands.show import print_up
from lab.core.context import Context

if TYPE_CHECKING:
    from lab.app.up import UpRequest


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "up",
        help="bring a pair of twin guests up",
        description="Make linked clones of the base image, a NoCloud seed per guest, define"
        " each guest from the common base plus its variant, pin vCPUs to disjoint host CPUs,"
        " boot them, wait until each has a DHCP lease, SSH and a finished cloud-init, and"
        " verify that each runs as declared (pinning, huge page backing). Refuses before"
        " creating anything when the host lacks what a variant needs. With --hosts, one pair"
        " on each host of lab.toml's [hosts] (libvirt URIs), brought up at once: the base"
        " image is uploaded once per host into a storage pool, guests are reached through"
        " the host's SSH.",
    )
    parser.add_argument(
        "--pair",
        required=True,
        metavar="A,B",
        help="the two variants, e.g. thp,shp1g (see `lab variants`)",
    )
    parser.add_argument("--image", help="base image name (config: image)")
    add_twin_arguments(parser)
    add_hosts_argument(parser, default="local; 'all' with --pairs")
    parser.add_argument(
        "--pairs",
        type=int,
        metavar="N",
        help="N pairs, one per host: on the first N hosts of --hosts (in lab.toml's order,"
        " 'local' first) that have no lab up yet; refused when fewer are free",
    )
    parser.add_argument(
        "--allow-overcommit",
        action="store_true",
        help="bring the pair up even when other running guests may use its CPUs (refused"
        " otherwise: their load would be in the timings)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="go ahead even while a `lab run` (or demo, or study) holds the lab: that run"
        " loses its guests and stops (refused otherwise, exit status 8)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.up import up  # deferred: the parser is built for every command

    print_up(ctx, up(ctx, request(args, ctx)))
    return 0


def request(args: argparse.Namespace, ctx: Context) -> UpRequest:
    # deferred: the parser is built for every command
    from lab.app.twins import twin_request
    from lab.app.up import UpRequest

    twins = twin_request(ctx, parse_pair(args.pair), twin_sizing(args))
    return UpRequest(
        twins, args.hosts, args.pairs, args.image, args.allow_overcommit, force=args.force
    )
