"""A host named by its libvirt URI: this machine's, or another's reached over SSH.

``lab.toml``'s ``[hosts]`` is checked with :func:`parse_uri` as it is read; the inventory
(:mod:`lab.core.inventory`) builds on it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from lab.core.errors import ConfigError

LOCAL = "local"


@dataclass(frozen=True)
class SSHTarget:
    """How to reach a remote host's shell: what libvirt's ssh transport would run."""

    host: str
    user: str | None = None
    port: int | None = None
    keyfile: str | None = None
    command: str = "ssh"  # the URI's command= parameter, as libvirt uses it

    def argv(self, *options: str) -> list[str]:
        """``ssh`` with the target's options, never asking a question (no password prompt,
        no unknown host key accepted): what the host's SSH does not allow fails at once,
        and a host that stops answering is given up after 3 keepalives 5 s apart."""
        argv = [self.command, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
        argv += ["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]
        argv += ["-p", str(self.port)] if self.port else []
        argv += ["-i", self.keyfile] if self.keyfile else []
        return [*argv, *options, self.login]

    @property
    def login(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    def proxy_command(self, ip: str, port: int = 22) -> str:
        """The ProxyCommand that carries a guest's SSH through this host (``ssh -W``)."""
        return shlex.join(self.argv("-W", f"{ip}:{port}"))


@dataclass(frozen=True)
class HostEntry:
    name: str
    uri: str
    ssh: SSHTarget | None  # None: libvirt on this machine

    @property
    def remote(self) -> bool:
        return self.ssh is not None


def parse_uri(uri: str, where: str = "") -> SSHTarget | None:
    """The SSH target of a ``qemu+ssh://`` URI; None for a URI of this machine."""
    prefix = f"{where}: " if where else ""
    parts = urlsplit(uri)
    if not parts.hostname and "+" not in parts.scheme:  # qemu:///system, test:///default
        return None
    if parts.scheme != "qemu+ssh" or not parts.hostname:
        raise ConfigError(
            f"{prefix}{uri!r} is not a libvirt URI the lab can use",
            hint="Use qemu:///system for this machine, qemu+ssh://USER@HOST/system for another",
        )
    if parts.path != "/system":
        raise ConfigError(
            f"{prefix}{uri!r} is not a system connection",
            hint="The lab needs root's libvirt on the host: qemu+ssh://USER@HOST/system",
        )
    params = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"{prefix}{uri!r} has a bad port") from None
    return SSHTarget(
        host=parts.hostname,
        user=parts.username,
        port=port,
        keyfile=params.get("keyfile"),
        command=params.get("command", "ssh"),
    )
