"""The hosts the lab may use: this machine ('local') and the ``[hosts]`` of ``lab.toml``.

A host is a libvirt URI. The lab talks to a remote host only through what that URI names:
libvirt's own remote protocol for domains, networks and storage, and the same SSH login
(the same ``ssh`` program, user, port and key file) for the few host-side commands libvirt
has no call for, and as the hop to the guests on the host's isolated network.
"""

from __future__ import annotations

from lab.core.config import Config
from lab.core.errors import UnknownNameError, UsageError
from lab.core.hosturi import LOCAL, HostEntry, SSHTarget, parse_uri

__all__ = ["LOCAL", "HostEntry", "SSHTarget", "guest_prefix", "inventory", "parse_uri",
           "select_hosts"]  # fmt: skip


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
