"""The ``lab`` command line: a table from sub-command to the module that runs it.

Each command module defines ``register(subparsers)`` (which sets ``run``) and imports
its heavy dependencies inside ``run``. One handler here turns every :class:`LabError`
into one line on stderr and an exit code; tracebacks only with ``--debug``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from lab import __version__
from lab.core.errors import LabError

# Order is the order of `lab --help`.
COMMAND_MODULES = (
    "lab.commands.variants",
    "lab.commands.xml",
    "lab.commands.diff",
    "lab.commands.config",
    "lab.commands.host",
    "lab.commands.image",
    "lab.commands.up",
    "lab.commands.status",
    "lab.commands.ssh",
    "lab.commands.console",
    "lab.commands.down",
    "lab.commands.workloads",
    "lab.commands.run",
    "lab.commands.study",
    "lab.commands.import_",
    "lab.commands.compare",
    "lab.commands.plan",
    "lab.commands.report",
    "lab.commands.export",
    "lab.commands.demo",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lab",
        description=(
            "A reproducible A/B performance laboratory for KVM guests: twin guests that differ"
            " only by a declared variant (e.g. thp vs shp1g), workloads run on both at once,"
            " every sample stored, statistics a reviewer would trust."
        ),
        epilog="Run `lab COMMAND --help` for the options of each command.",
    )
    parser.add_argument("--version", action="version", version=f"lab {__version__}")
    parser.add_argument("--config", metavar="PATH", help="lab.toml to read (default: search)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        from lab.core.config import find_config_file, load_config
        from lab.core.context import Context

        ctx = Context(config=load_config(find_config_file(args.config)))
        return int(args.run(args, ctx) or 0)
    except LabError as err:
        if args.debug:
            raise
        print(f"lab: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("lab: interrupted", file=sys.stderr)
        return 130
