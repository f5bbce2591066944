"""Whether the host can give a pair the memory asked for, checked before `lab up` makes anything.

A guest backed by static huge pages takes its RAM from the reserved pool (checked against
the pools by :mod:`lab.host.hugepages`); every other guest takes it from the host's
available memory (``MemAvailable``), and each guest's QEMU needs some more on top. The
rule is the one `lab host check` shows in its memory row.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lab.core.context import Context
from lab.core.errors import PlanError
from lab.core.units import format_kib
from lab.guests.labstate import load_state
from lab.guests.plan import TwinRequest, plan_twins
from lab.guests.twins import Guest
from lab.host.check import OVERHEAD_KIB
from lab.host.facts import parse_meminfo

MEMINFO = "/proc/meminfo"


def needed_kib(guests: Sequence[Guest]) -> int:
    """Host memory outside huge page pools that ``guests`` take when they run."""
    return sum(OVERHEAD_KIB + (0 if g.needs else g.spec.memory_kib) for g in guests)


def check_memory(guests: Sequence[Guest], meminfo: str) -> None:
    """Refuse guests that need more memory than ``/proc/meminfo`` (its text) says is available.

    Without a ``MemAvailable`` line nothing is refused: the kernel will say so at start.
    """
    available = parse_meminfo(meminfo).get("MemAvailable")
    needed = needed_kib(guests)
    if available is None or needed <= available:
        return
    from_ram = [g for g in guests if not g.needs]
    step = 256 * 1024  # suggest a round size that fits beside every guest's QEMU
    fit = (available - OVERHEAD_KIB * len(guests)) // max(1, len(from_ram)) // step * step
    sizes = ", ".join(f"{g.name} {format_kib(g.spec.memory_kib)}" for g in from_ram)
    raise PlanError(
        f"the guests need about {needed // 1024} MiB of host memory outside huge page pools"
        f" ({sizes}, plus {OVERHEAD_KIB // 1024} MiB each for QEMU), but the host has"
        f" {available // 1024} MiB available",
        hint=(f"Use --memory {format_kib(fit)} or less" if fit > 0 else "Use a smaller --memory")
        + ", or stop other guests; `lab host check` shows the memory row",
    )


def check_host_memory(ctx: Context, request: TwinRequest) -> None:
    """:func:`check_memory` for the twins ``request`` asks for, on this host (reads only).

    With a lab already up its guests hold memory: `lab up` refuses that case itself, with
    the fix (`lab down`), so nothing is judged here.
    """

    twins = plan_twins(ctx, request)
    if load_state(Path(ctx.config.state_dir)) is not None:
        return
    try:
        meminfo = ctx.host.read_text(MEMINFO)
    except OSError:
        return
    check_memory(twins.guests, meminfo)
