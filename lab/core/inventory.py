"""The hosts the lab may use: this machine ('local') and the ``[hosts]`` of ``lab.toml``.

A host is a libvirt URI. The lab talks to a remote host only through what that URI names:
libvirt's own remote protocol for domains, networks and storage, and the same SSH login
(the same ``ssh`` program, user, port and key file) for the few host-side commands libvirt
has no call for, and as the hop to the guests on the host's isolated network.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from lab.core.config import Config
from lab.core.errors import ConfigError, UnknownNameError, UsageError

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


def inventory(config: Config) -> dict[str, HostEntry]:
    """Every host by name, 'local' first."""
    hosts = {LOCAL: HostEntry(LOCAL, config.libvirt_uri, parse_uri(config.libvirt_uri))}
    for name, uri in config.hosts.items():
        hosts[name] = HostEntry(name, uri, parse_uri(uri, where=f"[hosts] {name}"))
    return hosts


def select_hosts(config: Config, text: str | None) -> list[HostEntry]:
    """``--hosts``: 'all', or names separated by commas; None is this machine only."""
    known = inventory(config)
    if text is None:
        return [known[LOCAL]]
    if text.strip() == "all":
        return list(known.values())
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError("--hosts is empty", hint="Give 'all' or host names, e.g. --hosts local")
    for name in names:
        if name not in known:
            raise UnknownNameError("host", name, list(known))
    return [known[name] for name in dict.fromkeys(names)]


def guest_prefix(host: str) -> str:
    """Guests on 'local' are lab-VARIANT, elsewhere lab-HOST-VARIANT: names stay unique in
    the store and in `lab ssh` whatever the hosts are."""
    return "lab-" if host == LOCAL else f"lab-{host}-"


def spread_pairs(names: list[str], up: set[str], pairs: int) -> list[str]:
    """``lab up --pairs N``: the hosts for N pairs, one pair per host, taken in the order of
    ``names`` among those with no lab ``up`` yet.

    One host holds one pair: twins share a host's memory bandwidth and caches with nothing
    but each other, and a second pair there would be load in both twins' timings.
    """
    if pairs < 1:
        raise UsageError(f"--pairs must be 1 or more, not {pairs}", hint="e.g. --pairs 2")
    free = [name for name in names if name not in up]
    if len(free) < pairs:
        busy = [name for name in names if name in up]
        have = f"{len(free)} of the {len(names)} host(s) asked for have no lab up"
        have += f" ({', '.join(free)})" if free else ""
        have += f"; a lab is up on {', '.join(busy)}" if busy else ""
        raise UsageError(
            f"{pairs} pair(s) need {pairs} host(s), one pair per host: {have}",
            hint="Add hosts under [hosts] in lab.toml (see `lab config`), `lab down --hosts"
            " NAME` where a lab is up, or ask for fewer --pairs",
        )
    return free[:pairs]
