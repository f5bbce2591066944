"""Counterbalanced placement: the twins trade CPU sets at planned points of a synchronised run.

Twins pinned to different host CPUs differ by their variant *and* by where they run, so
"which CPUs" could pass for "which page size". With ``lab run --schedule sync --swap-every
K`` iteration i runs on the guests' own CPU sets when ``(i - 1) // K`` is even and on each
other's when it is odd; every iteration's placement is stored, and ``lab compare`` then
separates the two effects (:mod:`lab.stats.placement`).

Only the vCPU pins swap. The emulator threads of both twins share one CPU set in the plan
(``LabState.emulator_cpus``), so each guest keeps it; it is asserted again with every
change, live (``VIR_DOMAIN_AFFECT_LIVE``: the persistent definition keeps its own pins,
so a guest that restarts comes back on its own CPUs, and the controller pins it again
before its next iteration). After pinning, the pins are read back from libvirt and any
difference is an error: a run must never store a placement that was not in force.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lab.core.errors import LabError, UsageError
from lab.guests.labstate import GuestRecord
from lab.guests.verify import check_pinning, cpus_from_bools

OWN = "own"
SWAPPED = "swapped"
AFFECT_LIVE = 1  # libvirt.VIR_DOMAIN_AFFECT_LIVE (a stable part of libvirt's ABI)


class PlacementError(LabError):
    """The guests' CPU pins could not be set, or read back other than asked."""

    exit_code = 4

    def __init__(self, message: str, problems: Sequence[str] = (), hint: str | None = None):
        super().__init__(message, hint=hint)
        self.problems = list(problems)


def placement_for(iteration: int, swap_every: int) -> str:
    """OWN for iterations 1..K, SWAPPED for K+1..2K, OWN again for 2K+1..3K, and so on."""
    return SWAPPED if ((iteration - 1) // swap_every) % 2 else OWN


def check_swap_plan(schedule: str, guests: Sequence[GuestRecord], swap_every: int) -> None:
    """Refuse a swap that cannot be made: between synchronised iterations, of two twins."""
    check_swap_schedule(schedule, swap_every)
    check_swappable(guests)


def check_swap_schedule(schedule: str, swap_every: int) -> None:
    """K must be 1 or more, and only the sync schedule has a moment to swap in."""
    if swap_every < 1:
        raise UsageError(f"--swap-every must be 1 or more, not {swap_every}", hint="e.g. 10")
    if schedule != "sync":
        raise UsageError(
            f"--swap-every needs --schedule sync, not {schedule}: only a synchronised run has"
            " a moment between iterations when neither guest runs, to swap their CPU sets in",
            hint="Add --schedule sync, or drop --swap-every",
        )


def check_swappable(guests: Sequence[GuestRecord]) -> None:
    """Refuse a swap that cannot be made: it needs two guests with as many vCPUs each."""
    if len(guests) != 2:
        raise UsageError(
            f"--swap-every swaps the CPU sets of two guests, not {len(guests)}",
            hint="Run on the pair (leave out --guests) or drop --swap-every",
        )
    first, second = guests
    if len(first.vcpu_cpus) != len(second.vcpu_cpus):
        raise UsageError(
            f"--swap-every needs twins of equal size: {first.name} has"
            f" {len(first.vcpu_cpus)} vCPUs, {second.name} {len(second.vcpu_cpus)}",
            hint="Bring the pair up again with one --vcpus for both",
        )


class Placement:
    """Sets and checks the live vCPU pins of two twins: their own CPU sets, or swapped.

    ``conn`` is a libvirt connection (or a fake with ``lookupByName``); nothing else is
    touched. ``current`` is the placement last set or read, None while unknown.
    """

    def __init__(
        self, conn: Any, guests: Sequence[GuestRecord], emulator_cpus: Sequence[int]
    ) -> None:
        check_swappable(guests)
        self.conn = conn
        self.guests = list(guests)
        self.emulator_cpus = tuple(sorted(emulator_cpus))
        self.current: str | None = None

    def cpus(self, label: str) -> dict[str, tuple[int, ...]]:
        """Host CPU of each vCPU (in vCPU order) of every guest under ``label``."""
        own = [tuple(g.vcpu_cpus) for g in self.guests]
        if label == SWAPPED:
            own.reverse()
        elif label != OWN:
            raise ValueError(f"unknown placement {label!r}")
        return {g.name: cpus for g, cpus in zip(self.guests, own, strict=True)}

    def read(self) -> str | None:
        """The placement libvirt reports now: OWN, SWAPPED, or None for anything else."""
        found: dict[str, tuple[int, ...]] = {}
        for guest in self.guests:
            try:
                masks = self._domain(guest).vcpuPinInfo(0)
            except LabError:
                raise
            except Exception as err:  # libvirt.libvirtError
                raise PlacementError(f"cannot read the pins of {guest.name}: {err}") from None
            found[guest.name] = tuple(_only_cpu(mask) for mask in masks)
        for label in (OWN, SWAPPED):
            if found == self.cpus(label):
                return label
        return None

    def ensure(self, label: str) -> bool:
        """Put the guests on ``label``'s CPU sets unless they are there; True if pins changed.

        The pins are read every time, not remembered: a resumed run finds what a killed one
        left, and a guest that restarted (back on its own CPUs) is pinned again.
        """
        self.current = self.read()
        if self.current == label:
            return False
        self.apply(label)
        return True

    def apply(self, label: str) -> None:
        """Pin every vCPU (and the emulator threads) live, then read the pins back."""
        wanted = self.cpus(label)
        self.current = None  # unknown until read back
        problems: list[str] = []
        for guest in self.guests:
            dom = self._domain(guest)
            try:
                width = self._width(dom)
                for vcpu, cpu in enumerate(wanted[guest.name]):
                    dom.pinVcpuFlags(vcpu, _mask({cpu}, width), AFFECT_LIVE)
                dom.pinEmulator(_mask(set(self.emulator_cpus), width), AFFECT_LIVE)
                problems += check_pinning(
                    guest.name,
                    wanted[guest.name],
                    self.emulator_cpus,
                    dom.vcpuPinInfo(0),
                    dom.emulatorPinInfo(0),
                )
            except LabError:
                raise
            except Exception as err:  # libvirt.libvirtError, without importing libvirt here
                raise PlacementError(
                    f"cannot pin {guest.name} to its {label} CPU set: {err}",
                    hint="Check the guest runs (lab status); re-running the same command"
                    " resumes and pins it again",
                ) from None
        if problems:
            raise PlacementError(
                f"the {label} placement did not take: " + "; ".join(problems),
                problems,
                hint="Something else changes the guests' pins (virsh vcpupin?); stop it and"
                " re-run the same command to resume",
            )
        self.current = label

    def _domain(self, guest: GuestRecord) -> Any:
        try:
            return self.conn.lookupByName(guest.name)
        except Exception as err:
            raise PlacementError(
                f"cannot find guest {guest.name} to pin it: {err}",
                hint="Bring the pair up (lab up), then re-run the same command",
            ) from None

    @staticmethod
    def _width(dom: Any) -> int:
        """How many host CPUs libvirt's maps cover: the width of the pin map it reports."""
        return max(len(mask) for mask in dom.vcpuPinInfo(0))


def _only_cpu(mask: Sequence[bool]) -> int:
    """The one host CPU a pin map allows, or -1 when it allows several or none."""
    cpus = cpus_from_bools(tuple(mask))
    return cpus[0] if len(cpus) == 1 else -1


def _mask(cpus: set[int], width: int) -> tuple[bool, ...]:
    # libvirt's Python binding wants a tuple of booleans, one per host CPU.
    return tuple(i in cpus for i in range(max(width, max(cpus) + 1)))


class SwapSchedule:
    """The controller's hook for ``--swap-every K``: each iteration's placement, set and stored.

    :meth:`before` runs between iterations (no runner running): it puts the guests on the
    placement of the coming iteration if they are not on it, and stores that placement for
    each guest about to run it (INSERT OR REPLACE, so a repeated iteration keeps the last).
    :meth:`finish` puts the guests back on their own CPU sets. Without a ``placement``
    (a run without --swap-every) both do nothing.
    """

    def __init__(
        self, placement: Placement | None, swap_every: int, store: Any, run_id: int
    ) -> None:
        if placement is not None and swap_every < 1:
            raise UsageError(f"--swap-every must be 1 or more, not {swap_every}")
        self.placement, self.swap_every = placement, swap_every
        self.store, self.run_id = store, run_id

    def before(self, iteration: int, guests: Sequence[tuple[str, int]]) -> str | None:
        """Place the guests for ``iteration``; ``guests`` are (name, store id) about to run it."""
        if self.placement is None:
            return None
        label = placement_for(iteration, self.swap_every)
        self.placement.ensure(label)
        cpus = self.placement.cpus(label)
        for name, guest_id in guests:
            self.store.record_placement(self.run_id, guest_id, iteration, label, cpus[name])
        return label

    def finish(self, warn: Callable[[str], None] | None = None) -> None:
        """Back on their own CPU sets; with ``warn``, a failure is said, not raised (the
        run is ending on another error, which must not be hidden by this one)."""
        if self.placement is None:
            return
        try:
            self.placement.ensure(OWN)
        except LabError as err:
            if warn is None:
                raise
            warn(f"could not put the guests back on their own CPUs: {err.message}")

    @contextmanager
    def in_force(self, warn: Callable[[str], None]) -> Iterator[None]:
        """Around a run: own CPU sets again when it ends, also when it fails.

        Not on Ctrl-C: the runners may still run then, and ``lab run`` stops them first
        (``Controller.stop_runners``, which calls :meth:`finish`).
        """
        try:
            yield
        except KeyboardInterrupt:
            raise
        except BaseException:
            self.finish(warn)
            raise
        self.finish()
