"""``lab host prepare``'s action: each host asked for made ready, its changes recorded."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lab.core.context import Context
from lab.core.hugepages import DEFAULT_HUGEPAGES
from lab.guests.sites import chosen_sites
from lab.host.facts import parse_hugepages_option
from lab.host.prepare import PrepareRequest, prepare_host, release_host


@dataclass(frozen=True)
class PrepareHostsRequest:
    hugepages: str = DEFAULT_HUGEPAGES  # SIZE:COUNT[@NODE],... as --hugepages takes it
    subnet: str | None = None  # None: the `subnet` of lab.toml
    nfs: bool = True
    hosts: str | None = None  # None: this machine
    tune: bool = False  # also quiet the knobs that make timings noisy (recorded too)


@dataclass(frozen=True)
class Prepared:
    host: str
    remote: bool
    changes: int  # changes made this time; 0: it was ready already


def prepare(ctx: Context, request: PrepareHostsRequest) -> tuple[Prepared, ...]:
    """Prepare every host ``request`` names, one after the other."""
    done = []
    wanted = PrepareRequest(
        hugepages=parse_hugepages_option(request.hugepages),
        subnet=request.subnet or ctx.config.subnet,
        nfs=request.nfs,
        tune=request.tune,
    )
    for site in chosen_sites(ctx, request.hosts):
        changes = prepare_host(ctx, wanted, site=site)
        done.append(Prepared(site.name, site.remote, len(changes)))
    return tuple(done)


@dataclass(frozen=True)
class Released:
    host: str
    remote: bool
    undone: int  # changes undone; 0: none was recorded


def release(ctx: Context, hosts: str | None = None) -> Iterator[Released]:
    """Undo what `lab host prepare` recorded on each host ``hosts`` names (None: this
    machine), newest first; each is yielded once released."""
    for site in chosen_sites(ctx, hosts):
        yield Released(site.name, site.remote, release_host(ctx, site=site))
