"""``lab up``'s action: twin guests on one host or several at once, one outcome per host.

Like Fabric's ``GroupResult``, bringing pairs up on several hosts answers host by host:
each :class:`HostOutcome` holds the pair that came up there or the error that stopped it,
and one host's failure leaves the others' pairs up. On a single host its error is raised
as it is. A run that holds the lab keeps its guests: ``lab up`` is refused then, unless
forced (:func:`lab.run.lock.changing_guests`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from lab.core.context import Context
from lab.core.errors import LabError
from lab.core.inventory import spread_pairs
from lab.core.progress import PhaseBoard
from lab.guests.bringup import UpResult, bring_up, check_not_up
from lab.guests.memory import check_host_memory
from lab.guests.plan import TwinRequest
from lab.guests.sites import Site, chosen_sites
from lab.run.lock import changing_guests

PHASES = ("clone", "define", "start", "booting", "lease", "ssh", "cloud-init", "verified")


@dataclass(frozen=True)
class UpRequest:
    twins: TwinRequest
    hosts: str | None = None  # --hosts: None is this machine (with `pairs`: every host)
    pairs: int | None = None  # --pairs N: one pair on each of the first N free hosts
    image: str | None = None  # None: the `image` of lab.toml
    allow_overcommit: bool = False
    force: bool = False  # even while a run holds the lab (it then loses its guests)


@dataclass(frozen=True)
class HostOutcome:
    """What bringing a pair up did on one host: the pair that is up, or why not."""

    host: str
    result: UpResult | None = None
    error: LabError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class UpOutcome:
    hosts: tuple[HostOutcome, ...]  # in the order of the hosts asked for
    skipped: tuple[str, ...] = ()  # with --pairs: the hosts passed over, a lab is up there

    @property
    def ok(self) -> bool:
        return all(h.ok for h in self.hosts)

    @property
    def failed(self) -> tuple[HostOutcome, ...]:
        return tuple(h for h in self.hosts if not h.ok)


BringUp = Callable[[Context, TwinRequest, Callable[[str, str], None], Site, bool], UpResult]


def choose_sites(ctx: Context, request: UpRequest) -> tuple[list[Site], tuple[str, ...]]:
    """The sites ``request`` asks for, and (with ``pairs``) those passed over."""
    hosts = request.hosts if request.pairs is None or request.hosts else "all"
    sites = chosen_sites(ctx, hosts)
    if request.pairs is None:
        return sites, ()
    up_already = {s.name for s in sites if s.load_state() is not None}
    names = spread_pairs([s.name for s in sites], up_already, request.pairs)
    return [s for s in sites if s.name in names], tuple(sorted(up_already))


def up(
    ctx: Context,
    request: UpRequest,
    bring: BringUp = bring_up,
    check_memory: Callable[[Context, TwinRequest], None] = check_host_memory,
) -> UpOutcome:
    """Bring a pair up on every host ``request`` names, at once; one outcome per host.

    ``bring`` and ``check_memory`` are the bring-up and the host memory check; tests hand
    in fakes. With one host its error is raised; with several it is that host's outcome.
    """
    if request.image:
        ctx.config = replace(ctx.config, image=request.image)
    sites, skipped = choose_sites(ctx, request)
    if request.pairs is not None:
        names = ", ".join(s.name for s in sites)
        passed = f" (a lab is up on {', '.join(skipped)})" if skipped else ""
        ctx.note(f"{request.pairs} pair(s), one per host: on {names}{passed}")
    if len(sites) == 1:  # its error is raised as it is: before the lock is made or taken
        check_not_up(sites[0])
    if any(not s.remote for s in sites):  # variants, CPU plan and memory, before anything
        check_memory(ctx, request.twins)
    argv = ["lab", "up", "--pair", ",".join(request.twins.variants)]
    argv += ["--hosts", request.hosts] if request.hosts else []
    with (
        changing_guests(Path(ctx.config.state_dir), argv, "lab up", request.force, ctx.warn),
        PhaseBoard(ctx.err, PHASES) as board,
    ):

        def one(site: Site) -> HostOutcome:
            try:
                result = bring(ctx, request.twins, board.update, site, request.allow_overcommit)
            except LabError as err:
                if len(sites) == 1:
                    raise
                return HostOutcome(site.name, error=err)
            return HostOutcome(site.name, result=result)

        with ThreadPoolExecutor(max_workers=len(sites)) as pool:
            outcomes = tuple(pool.map(one, sites))
    return UpOutcome(outcomes, skipped)
