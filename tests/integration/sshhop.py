"""A second "host" on this machine: an sshd on loopback that only the test's key may use.

The lab reaches it as ``qemu+ssh://root@127.0.0.1:PORT/system?command=WRAPPER``: libvirt's
ssh transport, the lab's host commands and the ProxyCommand to its guests all run WRAPPER,
an ``ssh -F`` with this folder's client key and known_hosts, so root's own ~/.ssh is left
alone. :meth:`SSHHop.cut` kills the sshd and every session it carries, as a host dropping
off the network would; :meth:`SSHHop.start` brings it back on the same port.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"


@dataclass
class SSHHop:
    folder: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def wrapper(self) -> Path:
        return self.folder / "ssh"

    @property
    def uri(self) -> str:
        return f"qemu+ssh://root@127.0.0.1:{self.port}/system?command={self.wrapper}"

    def make(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o700)
        for key in ("host_ed25519", "client_ed25519"):
            if not (self.folder / key).exists():
                subprocess.run(
                    ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.folder / key)],
                    check=True,
                )
        client = (self.folder / "client_ed25519.pub").read_text()
        (self.folder / "authorized_keys").write_text(client)
        host = (self.folder / "host_ed25519.pub").read_text().split()[:2]
        (self.folder / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {' '.join(host)}\n")
        (self.folder / "sshd_config").write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.folder / 'host_ed25519'}",
                    f"PidFile {self.folder / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.folder / 'authorized_keys'}",
                    "PermitRootLogin prohibit-password",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",
                    "AllowTcpForwarding yes",
                    "MaxStartups 100",
                    "MaxSessions 100",
                    "",
                ]
            )
        )
        (self.folder / "ssh_config").write_text(
            "\n".join(
                [
                    "Host 127.0.0.1",
                    f"  IdentityFile {self.folder / 'client_ed25519'}",
                    "  IdentitiesOnly yes",
                    f"  UserKnownHostsFile {self.folder / 'known_hosts'}",
                    "  StrictHostKeyChecking yes",
                    "  ServerAliveInterval 5",
                    "  ServerAliveCountMax 2",
                    "",
                ]
            )
        )
        self.wrapper.write_text(f'#!/bin/sh\nexec ssh -F {self.folder / "ssh_config"} "$@"\n')
        self.wrapper.chmod(0o755)

    def start(self) -> None:
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.folder / "sshd_config")],
            stdout=subprocess.DEVNULL,
            stderr=open(self.folder / "sshd.log", "ab"),  # noqa: SIM115
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done = subprocess.run(
                [str(self.wrapper), "-o", "BatchMode=yes", "-p", str(self.port), "root@127.0.0.1",
                 "true"],
                capture_output=True, timeout=30,
            )  # fmt: skip
            if done.returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError(f"sshd on 127.0.0.1:{self.port} did not let the test in")

    def sessions(self) -> list[int]:
        """The sshd and every process under it (one per connection, and their children)."""
        if self.proc is None:
            return []
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                children.setdefault(int(fields[1]), []).append(int(entry.name))
        found, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def cut(self) -> None:
        """Kill the sshd and all it carries at once: every connection through it drops."""
        for pid in self.sessions():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=10)
            self.proc = None
