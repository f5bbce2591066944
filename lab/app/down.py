"""``lab down``'s action: every pair among the hosts asked for destroyed, host by host.

An unreachable host does not keep the others up: each host's outcome is its own. A run
that holds the lab keeps its guests: ``lab down`` is refused then, unless forced
(:func:`lab.run.lock.changing_guests`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.core.context import Context
from lab.core.errors import LabError
from lab.guests.bringup import bring_down
from lab.guests.sites import sites_up
from lab.run.lock import changing_guests


@dataclass(frozen=True)
class DownRequest:
    hosts: str | None = None  # None: every host where a lab is up
    force: bool = False  # even while a run holds the lab (it then loses its guests)


@dataclass(frozen=True)
class HostDown:
    host: str
    removed: tuple[str, ...] = ()  # the guests destroyed there
    error: LabError | None = None  # why that host's pair is still recorded as up


@dataclass(frozen=True)
class DownOutcome:
    hosts: tuple[HostDown, ...]

    @property
    def removed(self) -> list[str]:
        return [name for host in self.hosts for name in host.removed]

    @property
    def failed(self) -> tuple[HostDown, ...]:
        return tuple(h for h in self.hosts if h.error is not None)


def down(ctx: Context, request: DownRequest) -> DownOutcome:
    """Bring down the pair of every host ``request`` names that has one up."""
    argv = ["lab", "down", *(["--hosts", request.hosts] if request.hosts else [])]
    outcomes = []
    with changing_guests(Path(ctx.config.state_dir), argv, "lab down", request.force, ctx.warn):
        for site, _ in sites_up(ctx, request.hosts):
            try:
                outcomes.append(HostDown(site.name, tuple(bring_down(ctx, site=site))))
            except LabError as err:  # an unreachable host must not keep the others up
                outcomes.append(HostDown(site.name, error=err))
    return DownOutcome(tuple(outcomes))
