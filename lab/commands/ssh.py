"""``lab ssh NAME [CMD...]``: a command in a guest (or an interactive shell)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from lab.core.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ssh",
        help="run a command in a guest, or open a shell",
        description="Run CMD in guest NAME (e.g. lab-thp or thp) as the lab user over SSH with"
        " the guest's pinned host key; without CMD, an interactive shell.",
    )
    parser.add_argument("name", help="guest name, e.g. thp or lab-thp")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="command and arguments")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    import sys

    from lab.app.guestshell import login_argv, run_in_guest

    if not args.cmd:
        # Hand over to OpenSSH with a known_hosts file holding only this guest's key.
        argv = login_argv(ctx, args.name)
        os.execvp("ssh", argv)
        return 0  # not reached
    result = run_in_guest(ctx, args.name, args.cmd)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode
