"""``lab xml`` and ``lab diff``'s actions, and the twins ``lab up`` asks for: a pair planned
on this host as `lab up` would plan it, each guest's domain, and how the two domains differ.

A sizing left out (None) is lab.toml's: ``vcpus``, ``memory``, ``reserve_host_cpus``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core.context import Context
from lab.guests.fairness import Change, pair_changes
from lab.guests.plan import TwinRequest, Twins, plan_twins, request_from


@dataclass(frozen=True)
class TwinSizing:
    vcpus: int | None = None  # per guest
    memory: str | None = None  # per guest, e.g. 1G
    reserve_host_cpus: int | None = None  # host CPUs kept free of vCPUs


@dataclass(frozen=True)
class PairDifference:
    a: str  # the guests' names
    b: str
    changes: list[Change]  # the variants', the identity's, and the unexplained


def twin_request(ctx: Context, variants: list[str], sizing: TwinSizing) -> TwinRequest:
    """The twins of ``variants``, each sized by ``sizing``, else by lab.toml."""
    return request_from(sizing, ctx, variants)


def plan(ctx: Context, variants: list[str], sizing: TwinSizing) -> Twins:
    """The guests of ``variants`` as `lab up` would make them on this host: domains,
    pinning, accelerator (nothing is defined in libvirt)."""
    return plan_twins(ctx, twin_request(ctx, variants, sizing))


def pair_difference(ctx: Context, a: str, b: str, sizing: TwinSizing) -> PairDifference:
    """Every difference between the planned domains of the twins of variants ``a`` and
    ``b``, classified."""
    twins = plan(ctx, [a, b], sizing)
    first, second = twins.guests
    return PairDifference(first.name, second.name, pair_changes(first, second))
