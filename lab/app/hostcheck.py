"""``lab host check``: the host's facts, and what the pair asked for needs of them.

The host layer reads the host (:func:`lab.host.check.gather_facts`); the pair's plan (its
CPUs, memory and huge pages) and the base image are read here, a layer up, where twins
and images are known. :func:`lab.host.check.rows_from_facts` then judges it all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from lab.core.context import Context
from lab.core.errors import LabError, PlanError
from lab.guests.plan import host_topology, plan_twins, request_from
from lab.guests.sites import chosen_sites
from lab.host.check import OVERHEAD_KIB, CheckFacts, Row, gather_facts, rows_from_facts
from lab.host.row import MISSING
from lab.host.site import HostSite
from lab.images.image import find_image


def check_host(
    ctx: Context, pair: list[str], sizing: object = None, site: HostSite | None = None
) -> list[Row]:
    """The rows for ``pair``; ``sizing`` has the --vcpus/--memory/... options of `lab up`."""
    f = gather_facts(ctx, pair, site=site)
    if site is not None:
        ctx = site.ctx
    _pair_facts(f, ctx, sizing, remote=site is not None and site.remote)
    _image_facts(f, ctx)
    return rows_from_facts(f)


def _pair_facts(f: CheckFacts, ctx: Context, sizing: object, remote: bool) -> None:
    accel_facts = f.accel_facts
    f.cpus = len(host_topology(ctx).cpus) if remote else os.cpu_count() or 0
    request = request_from(sizing or object(), ctx, f.pair)
    try:
        twins = plan_twins(ctx, request, accel_facts=accel_facts)
        # The noise rows judge the CPUs this plan gives each twin, and their SMT siblings
        # (from libvirt's topology when sysfs did not say).
        f.noise.twin_cpus = {g.variant.name: g.placement.vcpu_cpus for g in twins.guests}
        if not f.noise.cpu_siblings:
            f.noise.cpu_siblings = {c.id: c.siblings for c in twins.topology.cpus}
    except PlanError as err:
        f.plan_error = err.message
        # The memory needs do not depend on where the vCPUs go: plan them on any CPU.
        twins = plan_twins(
            ctx, replace(request, vcpus=1, reserve_host_cpus=0), accel_facts=accel_facts
        )
    f.needs = {g.variant.name: list(g.needs) for g in twins.guests}
    f.memory_needed_kib = sum(
        OVERHEAD_KIB + (0 if g.needs else g.spec.memory_kib) for g in twins.guests
    )


def _image_facts(f: CheckFacts, ctx: Context) -> None:
    try:
        image = find_image(Path(ctx.config.image_dir), ctx.config.image)
        f.image = f"{image.name}: {image.directory}"
    except LabError as err:
        f.image_error = str(err)
    f.image_tool = ctx.host.which("mmdebstrap")


@dataclass(frozen=True)
class HostChecked:
    host: str
    remote: bool
    uri: str  # its libvirt URI (lab.toml's [hosts])
    rows: list[Row]

    @property
    def ready(self) -> bool:
        """Whether the pair can be brought up there: no row is missing."""
        return all(row.state != MISSING for row in self.rows)


def check_hosts(
    ctx: Context, hosts: str | None, pair: list[str], sizing: object = None
) -> Iterator[HostChecked]:
    """:func:`check_host` on each host ``hosts`` names (None: this machine), one after the
    other: each is yielded once checked."""
    for site in chosen_sites(ctx, hosts):
        yield HostChecked(
            site.name, site.remote, site.entry.uri, check_host(ctx, pair, sizing=sizing, site=site)
        )
