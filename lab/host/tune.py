"""``lab host prepare --tune``: write the quiet value of every noisy knob, each one recorded.

The knobs are :mod:`lab.host.noise`'s (governor per CPU, boost, KSM, NUMA balancing, THP
defrag), written like ``pyperf system tune``; irqbalance is stopped when it is an active
systemd unit. Every write is recorded in the :class:`~lab.host.changes.ChangeLog` with
the value before, so ``lab host release`` writes back exactly those. A knob this host
does not have is skipped, and said; a write the kernel refuses is a warning, not a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.core.errors import LabError
from lab.host.changes import ChangeLog
from lab.host.noise import (
    IRQBALANCE,
    KNOBS,
    Knob,
    available_governors_file,
    governor_knob,
    online_cpus,
)

if TYPE_CHECKING:
    from lab.core.context import Context

KNOB, UNIT = "knob", "unit"  # the change kinds recorded


def tune_host(ctx: Context, log: ChangeLog, where: Callable[[str], Path], systemd: bool) -> None:
    """Write every noisy knob's quiet value; the changes go to ``log``. ``where(path)`` is
    the file a /sys or /proc path is on this host (tests point it into a tree)."""
    host = ctx.host

    def read(path: str) -> str:
        return host.read_text(where(path))

    governors = {cpu: governor_knob(cpu) for cpu in online_cpus(read)}
    present = {cpu: k for cpu, k in governors.items() if k.value(read) is not None}
    if not present:
        ctx.note("tune: CPU governor not available on this host (no cpufreq); skipped")
    for cpu, knob in present.items():
        if _offers(read, cpu, knob.quiet):
            _write(ctx, log, where, knob, read)
        else:
            ctx.note(f"tune: cpu{cpu} offers no {knob.quiet} governor; skipped")
    for knob in KNOBS:
        _write(ctx, log, where, knob, read)
    for name in dict.fromkeys(k.name for k in KNOBS):  # boost is one of two files
        if all(k.value(read) is None for k in KNOBS if k.name == name):
            ctx.note(f"tune: {name} not available on this host; skipped")
    _stop_irqbalance(ctx, log, systemd)


def _offers(read: Callable[[str], str], cpu: int, governor: str) -> bool:
    try:
        return governor in read(available_governors_file(cpu)).split()
    except OSError:
        return True  # not listed: the kernel says when it refuses


def _write(
    ctx: Context,
    log: ChangeLog,
    where: Callable[[str], Path],
    knob: Knob,
    read: Callable[[str], str],
) -> None:
    before = knob.value(read)
    if before is None or not knob.is_noisy(before):
        return
    path = where(knob.path)
    try:
        ctx.host.write_text(path, f"{knob.quiet}\n")
    except (OSError, LabError) as err:
        ctx.warn(f"tune: could not write {knob.quiet} to {path}: {err}")
        return
    earlier = log.find(KNOB, path=str(path))
    if earlier is not None:  # changed back since an earlier --tune: keep the first before
        return
    log.add(KNOB, name=knob.name, path=str(path), before=before, after=knob.quiet, modes=knob.modes)


def _stop_irqbalance(ctx: Context, log: ChangeLog, systemd: bool) -> None:
    if not systemd:
        ctx.note(
            "tune: irqbalance is left alone without systemd (stop it or set"
            " IRQBALANCE_BANNED_CPULIST yourself when `lab host check` warns)"
        )
        return
    active = ctx.host.run(["systemctl", "is-active", "--quiet", IRQBALANCE], check=False)
    if not active.ok:
        return
    ctx.host.run(["systemctl", "stop", IRQBALANCE])
    log.add(UNIT, unit=IRQBALANCE, action="stopped")


def undo(ctx: Context, kind: str, d: dict[str, Any]) -> None:
    """Put back one recorded tune change: the value before, or the unit started again."""
    if kind == UNIT:
        ctx.host.run(["systemctl", "start", d["unit"]])
        return
    path = d["path"]
    now = Knob(d["name"], path, d["after"], modes=bool(d.get("modes"))).value(ctx.host.read_text)
    if now is not None and now != d["after"]:
        ctx.warn(f"{path} is {now} since lab host prepare --tune wrote {d['after']}; left as it is")
        return
    ctx.host.write_text(path, f"{d['before']}\n")
