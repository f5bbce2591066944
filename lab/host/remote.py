"""A remote host's side effects through SSH: the same :class:`Host` interface, run there.

Commands stay argument lists: each is quoted with :func:`shlex.join` into the one string
SSH carries, so the remote shell only splits it back into the same words. Files are read
with ``cat`` and written with ``cat >``, so nothing beyond a POSIX shell is assumed there.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from lab.core.errors import HostCommandError, RequirementError
from lab.core.hostexec import FileMode, Host, Result
from lab.core.inventory import SSHTarget

# ssh exits 255 when it could not log in or lost the connection (not the command's status).
SSH_FAILED = 255


class RemoteHost(Host):
    """Host commands on another machine, over the SSH its libvirt URI names."""

    def __init__(self, name: str, target: SSHTarget, local: Host | None = None) -> None:
        self.name = name
        self.target = target
        self.local = local or Host()  # runs the ssh program

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        input: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        hint: str | None = None,
    ) -> Result:
        words = [str(a) for a in argv]
        if env:
            words = ["env", *(f"{k}={v}" for k, v in env.items()), *words]
        done = self.local.run(
            [*self.target.argv("-T"), "--", shlex.join(words)],
            check=False,
            input=input,
            timeout=timeout,
            hint=hint,
        )
        if done.returncode == SSH_FAILED:
            raise HostCommandError(
                [self.target.command, self.target.login],
                SSH_FAILED,
                done.stderr or "ssh failed",
                hint=f"Cannot reach host {self.name!r} over SSH; check that"
                f" `{shlex.join(self.target.argv())} true` works without a question",
            )
        result = Result(tuple(words), done.returncode, done.stdout, done.stderr)
        if check and not result.ok:
            raise HostCommandError(
                words, done.returncode, done.stderr or done.stdout,
                hint=hint or f"On host {self.name!r}: {shlex.join(words)}",
            )  # fmt: skip
        return result

    def spawn(self, argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
        raise RequirementError(
            f"starting servers on host {self.name!r} is not supported",
            hint="On remote hosts run workloads that need no server on the host (see `lab"
            " workloads`)",
        )

    def which(self, program: str) -> str | None:
        found = self.run(["sh", "-c", 'command -v "$1"', "sh", program], check=False)
        return found.stdout.strip() or None if found.ok else None

    def read_text(self, path: str | Path) -> str:
        done = self.run(["cat", str(path)], check=False)
        if not done.ok:
            raise FileNotFoundError(f"{self.name}:{path}: {done.stderr.strip()}")
        return done.stdout

    def exists(self, path: str | Path) -> bool:
        return self.run(["test", "-e", str(path)], check=False).ok

    def is_dir(self, path: str | Path) -> bool:
        return self.run(["test", "-d", str(path)], check=False).ok

    def file_mode(self, path: str | Path) -> FileMode:
        done = self.run(["stat", "-Lc", "%a %g %G", str(path)], check=False)
        if not done.ok:
            raise FileNotFoundError(f"{self.name}:{path}: {done.stderr.strip()}")
        mode, gid, group = done.stdout.split()
        return FileMode(int(mode, 8), int(gid), group)

    def write_text(self, path: str | Path, text: str) -> None:
        self.run(["sh", "-c", 'cat > "$1"', "sh", str(path)], input=text)
