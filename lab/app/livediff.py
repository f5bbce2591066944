"""``lab diff --live``: the running twins' QEMU command lines compared option by option, so
what QEMU was really told is seen beside what the domain XML says (``lab.run.qemuargs``)."""

from __future__ import annotations

from lab.core.context import Context
from lab.core.errors import UsageError
from lab.guests.sites import guests_of, require_up
from lab.guests.variants import find_variant, variants_for
from lab.host.qemuproc import qemu_cmdline
from lab.run.qemuargs import QemuDifference, compare_cmdlines, declared_options, parse_cmdline


def live_differences(ctx: Context, a: str, b: str) -> tuple[str, str, list[QemuDifference]]:
    """The running guests of variants ``a`` and ``b`` (on one host) and every option their
    QEMU command lines differ in."""
    up = require_up(ctx)
    sites = {site.name: site for site, _ in up}
    guests = guests_of(up)
    chosen = []
    for variant in (a, b):
        found = [g for g in guests if g.variant == variant]
        if not found:
            raise UsageError(
                f"no running guest of variant {variant!r}",
                hint=f"The guests up are {', '.join(g.name for g in guests) or 'none'}",
            )
        chosen.append(found[0])
    args = []
    for guest in chosen:
        site = sites.get(guest.host)
        host = site.ctx.host if site is not None else ctx.host
        got = qemu_cmdline(host.read_text, guest.name)
        if not got:
            raise UsageError(
                f"cannot read the QEMU command line of {guest.name}",
                hint="lab diff --live reads /run/libvirt/qemu/NAME.pid and /proc: run it as root"
                " on the guests' host",
            )
        args.append(parse_cmdline("\0".join(got)))
    # What the twins' variants declare they change: a variant since removed, or whose file
    # no longer loads, declares nothing, so its change shows as unexplained.
    variants = variants_for(ctx.config)
    known = {g.variant: find_variant(g.variant, variants) for g in chosen}
    declared = {name: v.changes for name, v in known.items() if v is not None}
    a, b = chosen[0].name, chosen[1].name
    return a, b, compare_cmdlines(args[0], args[1], a, b, declared_options(declared))
