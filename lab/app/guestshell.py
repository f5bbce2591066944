"""``lab ssh`` and ``lab console``'s actions: a guest of the lab that is up, by name, and a
command run in it, the OpenSSH command line that logs in to it, or its serial console."""

from __future__ import annotations

from pathlib import Path

from lab.core.context import Context
from lab.core.hostexec import Result
from lab.guests.bringup import proxy_for, shell_for
from lab.guests.keys import lab_client_key, secure_dir
from lab.guests.labstate import GuestRecord, guest_named, require_state
from lab.guests.sites import guests_of, require_up


def guest_up(ctx: Context, name: str) -> GuestRecord:
    """The guest called ``name`` among those up on every host (``lab status``)."""
    return guest_named(guests_of(require_up(ctx)), name)


def run_in_guest(ctx: Context, name: str, command: list[str]) -> Result:
    """``command`` run in the guest over the lab's SSH; its status is the guest's to tell."""
    return shell_for(ctx, guest_up(ctx, name)).run(command, check=False)


def login_argv(ctx: Context, name: str) -> list[str]:
    """The ``ssh`` command line that logs in to the guest, with a known_hosts file holding
    only this guest's key (written now), through its host when it runs on another one."""
    record = guest_up(ctx, name)
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
    proxy = proxy_for(ctx, record, str(record.ip))
    argv += ["-o", f"ProxyCommand={proxy}"] if proxy else []
    argv.append(f"lab@{record.ip}")
    return argv


def console_lines(ctx: Context, name: str, last: int = 0) -> list[str]:
    """The guest's serial console as it logged it (this machine's lab), each line with its
    end; ``last`` > 0: only the last that many."""
    record = require_state(Path(ctx.config.state_dir)).guest(name)
    text = (Path(record.directory) / "console.log").read_text(errors="replace")
    lines = text.splitlines(keepends=True)
    return lines[-last:] if last else lines
