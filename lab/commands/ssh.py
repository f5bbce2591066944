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

    from lab.guests.bringup import shell_for
    from lab.guests.labstate import guest_named
    from lab.guests.sites import guests_of, require_up

    record = guest_named(guests_of(require_up(ctx)), args.name)
    if not args.cmd:
        return _interactive(ctx, record)
    result = shell_for(ctx, record).run(args.cmd, check=False)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


def _interactive(ctx: Context, record: Any) -> int:
    """Hand over to OpenSSH with a known_hosts file holding only this guest's key."""
    from pathlib import Path

    from lab.guests.bringup import proxy_for
    from lab.guests.keys import lab_client_key, secure_dir

    ssh_dir = secure_dir(Path(ctx.config.state_dir) / "ssh")
    key, _ = lab_client_key(ssh_dir)
    known = ssh_dir / f"known_hosts.{record.name}"
    known.write_text(f"{record.ip} {record.host_public_key}\n")
    argv = [
        "ssh",
        "-i",
        str(key),
        "-o",
        f"UserKnownHostsFile={known}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "IdentitiesOnly=yes",
    ]
    proxy = proxy_for(ctx, record, record.ip)
    argv += ["-o", f"ProxyCommand={proxy}"] if proxy else []
    argv.append(f"lab@{record.ip}")
    os.execvp("ssh", argv)
    return 0  # not reached
