"""``lab run --reboot-every K``: the twins are power-cycled between passes of K iterations.

Thousands of iterations in one boot measure that boot: which host pages its QEMU got, how
much of the thp twin's RAM the host could back with huge pages, where the guest kernel put its
memory (Kalibera and Jones, "Rigorous benchmarking in reasonable time", 2013). So the run
holds boots × iterations per boot, and ``lab compare`` can take the boot as the unit.

A cycle is a shutdown (ACPI; destroyed after :data:`SHUTDOWN_S`), a start of the same
domain (a new QEMU process: its memory is allocated again), and a wait until SSH answers
from a new boot. It happens at a balanced point: after both twins did the same iterations
(every schedule runs a pass up to the same iteration), and only when the twins' current
boot already ran iterations of the run, so a resumed run does not cycle again for nothing.
After each cycle every guest's environment is recorded again (its facts in the new boot),
with how long the cycle took (``reboot_s``, which ``lab plan`` takes as the cost of a boot)
and the new boot id, which every iteration records too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from lab.core.clock import Clock
from lab.core.errors import GuestError
from lab.core.waiting import wait_for
from lab.guests.ssh import GuestShell

SHUTDOWN_S = 120.0  # an ACPI shutdown this long unfinished becomes a power-off
BOOT_S = 600.0  # from the start to SSH answering from the new boot
BOOT_ID = "/proc/sys/kernel/random/boot_id"


class Rebooting(Protocol):
    """What a cycle needs of one guest."""

    record: Any  # GuestRecord: its name
    shell: GuestShell


def current_boot(shell: GuestShell) -> str:
    """The guest's boot id (one SSH command)."""
    return shell.run(["cat", BOOT_ID], timeout=60).stdout.strip()


def power_cycle(
    guests: Sequence[Rebooting],
    domain: Callable[[Any], Any],
    clock: Clock,
    note: Callable[[str], None],
) -> dict[str, tuple[float, str]]:
    """Shut every guest down, start them again, wait until each answers from a new boot.
    Returns each guest's (seconds from the shutdown to SSH answering, new boot id)."""
    started = clock.monotonic()
    before = {g.record.name: current_boot(g.shell) for g in guests}
    domains = {g.record.name: domain(g.record) for g in guests}
    note(f"rebooting {', '.join(domains)} (--reboot-every): shutdown, start, wait for SSH")
    for dom in domains.values():
        dom.shutdown()
    for name, dom in domains.items():

        def off(dom: Any = dom) -> bool:
            return not dom.isActive()

        try:
            wait_for(f"{name} to shut down", off, timeout=SHUTDOWN_S, clock=clock)
        except GuestError:
            dom.destroy()  # it did not act on ACPI: power off
    for g in guests:
        g.shell.close()  # its connection went with the old boot
    for dom in domains.values():
        dom.create()
    found: dict[str, tuple[float, str]] = {}
    for g in guests:
        name = g.record.name

        def new_boot(shell: GuestShell = g.shell, old: str = before[name]) -> str | None:
            try:
                boot = current_boot(shell)
            except GuestError:
                shell.close()
                return None
            return boot if boot and boot != old else None

        boot = wait_for(f"{name} to answer from a new boot", new_boot, timeout=BOOT_S,
                        clock=clock, interval=1.0)  # fmt: skip
        found[name] = (clock.monotonic() - started, boot)
    return found
