"""``lab host age``'s action: this machine's free memory fragmented to a level, held so, and
given back (lab.host.aging does the work; this hands it the context's host and clock)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.core.context import Context
from lab.core.units import parse_size_kib
from lab.host.agelevels import age_index
from lab.host.aging import Aged, Ager, AgingState, Processes, Unaged

__all__ = [
    "AgeRequest", "Aged", "AgingState", "Unaged", "age", "aging_state", "hold_age", "unage",
]  # fmt: skip


@dataclass(frozen=True)
class AgeRequest:
    level: float
    keep_free: str | None = None  # SIZE left free for the guests; None: both twins' memory


def _ager(ctx: Context) -> Ager:
    return Ager(ctx.host, ctx.clock, Path(ctx.config.state_dir), Processes(ctx.host))


def keep_free_bytes(ctx: Context, keep_free: str | None) -> int:
    """The memory left free for the guests: as asked, or both twins' configured memory."""
    if keep_free is not None:
        return parse_size_kib(keep_free) * 1024
    return 2 * parse_size_kib(ctx.config.memory) * 1024


def age(ctx: Context, request: AgeRequest) -> Aged:
    return _ager(ctx).age(request.level, keep_free_bytes(ctx, request.keep_free))


def unage(ctx: Context) -> Unaged | None:
    return _ager(ctx).undo()


def aging_state(ctx: Context) -> AgingState:
    return _ager(ctx).state()


def hold_age(ctx: Context, level: str, ager: Ager | None = None) -> Aged | Unaged | None:
    """The host held at a study's age ``level`` (``fresh`` or ``f80``, lab.host.agelevels):
    what the lab holds given back for fresh; else held at the level, kept where the lab holds
    it there already, first given back where it holds another."""
    ager = ager or _ager(ctx)
    index = age_index(level)
    state = ager.state()
    if state.running and state.level == index:
        return None
    undone = ager.undo()
    if index is None:
        return undone
    aged = ager.age(index, keep_free_bytes(ctx, None))
    if aged.pid is None:  # nothing held: the runs record the level they were asked for
        ctx.warn(
            f"the host's unusable free space index is {aged.index:.2f} already, at or above"
            f" host age {level}: nothing is held, the runs go ahead as at {level} (a fresh"
            " level of the same study is then not much fresher: see `lab host age --status`)"
        )
    return aged
