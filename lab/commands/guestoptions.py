"""The options of the commands that plan or act on guests: ``--pair``, the twins' sizing
(``--vcpus``, ``--memory``, ``--reserve-host-cpus``) and ``--hosts``.

Not a command (it registers nothing): the commands that take these options import it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from lab.core.errors import UsageError

if TYPE_CHECKING:
    from lab.app.twins import TwinSizing


def parse_pair(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if len(names) != 2:
        raise UsageError(
            f"--pair takes two variant names separated by a comma, not {text!r}",
            hint="For example: --pair thp,shp1g (see `lab variants`)",
        )
    return names


def add_twin_arguments(parser: object, with_pair: bool = True) -> None:
    """The sizing options shared by `lab xml`, `lab diff` and `lab up`."""

    assert isinstance(parser, argparse.ArgumentParser)
    parser.add_argument("--vcpus", type=int, default=None, help="vCPUs per guest (config: vcpus)")
    parser.add_argument("--memory", default=None, help="memory per guest, e.g. 1G (config: memory)")
    parser.add_argument(
        "--reserve-host-cpus",
        type=int,
        default=None,
        metavar="N",
        help="host CPUs kept free of vCPUs (config: reserve_host_cpus; 0 gives"
        " every CPU to the guests)",
    )


def twin_sizing(args: argparse.Namespace) -> TwinSizing:
    """The sizing options :func:`add_twin_arguments` adds, as the app's request (None where
    left out: lab.toml's)."""
    from lab.app.twins import TwinSizing  # deferred: the parser is built for every command

    return TwinSizing(
        getattr(args, "vcpus", None),
        getattr(args, "memory", None),
        getattr(args, "reserve_host_cpus", None),
    )


def add_hosts_argument(parser: object, default: str) -> None:

    assert isinstance(parser, argparse.ArgumentParser)
    parser.add_argument(
        "--hosts",
        metavar="all|NAME,...",
        help=f"the hosts to act on: 'all', or names from lab.toml's [hosts] and 'local' for"
        f" this machine (default: {default}; see `lab config`)",
    )
