"""What a variant is: a declared delta on the common domain base, plus host requirements.

A variant plug-in is one small file in ``domains/`` that defines ``VARIANT``. It never
builds a domain of its own: it receives the common base and returns it changed, and it
declares which parts of the domain that change touches (:attr:`Variant.changes`), so
``lab diff`` shows the twins differ only where their variants say. Once its guest is up,
:meth:`Variant.verify` checks that the change took effect, from inside the guest or from
its host.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from lab.core.errors import UsageError
from lab.core.hostexec import Result
from lab.core.units import format_kib
from lab.domainxml.boot import KernelBoot
from lab.domainxml.domain import DomainSpec
from lab.domainxml.memorybacking import HugePages, MemoryBacking
from lab.guests.verify import GUEST_THP_ENABLED, THP_MODES, check_guest_thp, check_preallocated
from lab.host.hugepages import HugePageNeed
from lab.host.qemuproc import SMAPS, qemu_pid


class GuestCommands(Protocol):
    """Commands in one guest: :class:`lab.guests.ssh.GuestShell`, or a test's fake."""

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        timeout: float | None = None,
        sudo: bool = False,
    ) -> Result: ...


@dataclass(frozen=True)
class RunningGuest:
    """A guest just brought up, as :meth:`Variant.verify` sees it: what was declared
    (``spec``), commands in the guest over its SSH (``shell``), and the files of its host
    (``read_host``, for ``/proc`` of its QEMU process). Every side effect is handed in."""

    name: str
    spec: DomainSpec
    shell: GuestCommands
    read_host: Callable[[str], str]


class Variant:
    """Base class of variant plug-ins. Subclasses override :meth:`apply` and declare
    :attr:`changes`; :meth:`needs` and :meth:`verify` where the variant has any."""

    name: str = ""
    description: str = ""
    # The parts of the domain apply() changes, as paths of elements (the models' XPATH,
    # e.g. "/domain/memoryBacking"): lab diff explains a difference inside them as this
    # variant's, and reports any other as unexplained.
    changes: tuple[str, ...] = ()
    # The facts of the guest's recorded environment (``lab.run.environment``'s GUEST_FACTS,
    # e.g. "thp_enabled") this variant changes inside the guest: lab compare does not warn
    # that the twins differ in them.
    guest_facts: tuple[str, ...] = ()

    def apply(self, base: DomainSpec) -> DomainSpec:
        """Return ``base`` with this variant's delta applied."""
        return base

    def needs(self, spec: DomainSpec, host_node: int) -> list[HugePageNeed]:
        """Host resources this variant's guest ``spec`` needs before it can start."""
        return []

    def requirement_text(self) -> str:
        """A human summary of what this variant needs from the host, for ``lab variants``."""
        return "nothing beyond the base"

    def verify(self, guest: RunningGuest) -> list[str]:
        """Problems showing this variant did not take effect in ``guest``, booted and ready
        (empty: it did). `lab up` fails on any, beside its own checks of every guest
        (the live XML, the pinning, the huge pages). The shell connects on first use, so
        a variant with nothing to check in the guest costs it nothing."""
        return []


class TransparentHugePages(Variant):
    """Leave guest RAM to the host's transparent huge pages: no ``<memoryBacking>``.

    With ``prealloc`` all of it is allocated as QEMU starts (``<allocation
    mode='immediate'/>``), as libvirt does for every hugetlb-backed guest: against a static
    huge page twin, a study then tells "the pages were 1 GiB" from "the memory was
    preallocated". Checked once up: QEMU's resident memory covers the guest's RAM.
    """

    changes: tuple[str, ...] = (MemoryBacking.XPATH,)

    def __init__(self, name: str, description: str, *, prealloc: bool = False) -> None:
        self.name = name
        self.description = description
        self.prealloc = prealloc
        if prealloc:  # the backend's prealloc is this variant's, not a consequence
            self.changes = (MemoryBacking.XPATH, MemoryBacking.ALLOCATION_XPATH)

    def apply(self, base: DomainSpec) -> DomainSpec:
        backing = MemoryBacking(allocation="immediate") if self.prealloc else None
        return replace(base, memory_backing=backing)

    def requirement_text(self) -> str:
        if self.prealloc:
            return "free host memory for all guest RAM at start (THP mode of the host applies)"
        return "none (THP mode of the host applies: see `lab host check`)"

    def verify(self, guest: RunningGuest) -> list[str]:
        if not self.prealloc:
            return []
        try:
            pid = qemu_pid(guest.read_host, guest.name)
            smaps = guest.read_host(SMAPS.format(pid=pid))
        except (OSError, ValueError) as err:
            return [f"{guest.name}: cannot read its QEMU's memory to see it preallocated: {err}"]
        return check_preallocated(guest.name, guest.spec.memory_kib, smaps)


class GuestTHPMode(TransparentHugePages):
    """As ``thp`` on the host, with the guest's own kernel running THP in ``mode``: the guest
    kernel's command line (the lab boots it directly) says ``transparent_hugepage=MODE``.
    Checked once up, in the guest: its sysfs says ``[MODE]``."""

    changes = (MemoryBacking.XPATH, KernelBoot.CMDLINE_XPATH)
    guest_facts = ("thp_enabled",)

    def __init__(self, name: str, description: str, mode: str) -> None:
        super().__init__(name, description)
        if mode not in THP_MODES:
            raise ValueError(f"a THP mode is one of {', '.join(THP_MODES)}, not {mode!r}")
        self.mode = mode

    def apply(self, base: DomainSpec) -> DomainSpec:
        return with_guest_thp(super().apply(base), self.mode, f"variant {self.name}")

    def requirement_text(self) -> str:
        return "an image the lab boots directly (`lab image build`), for the kernel command line"

    def verify(self, guest: RunningGuest) -> list[str]:
        enabled = guest.shell.run(["cat", GUEST_THP_ENABLED], timeout=60).stdout
        return check_guest_thp(guest.name, self.mode, enabled)


def with_guest_thp(spec: DomainSpec, mode: str, who: str) -> DomainSpec:
    """``spec`` with the guest kernel's command line saying ``transparent_hugepage=MODE``;
    refused (naming ``who``) for an image that boots through its own bootloader."""
    if not isinstance(spec.boot, KernelBoot):
        raise UsageError(
            f"{who} sets the guest kernel's command line, and this image boots through its own"
            " bootloader",
            hint="Use an image the lab boots directly (`lab image build`)",
        )
    return replace(spec, boot=spec.boot.with_args(f"transparent_hugepage={mode}"))


class StaticHugePages(Variant):
    """Back guest RAM with static huge pages of one size, reserved on the guest's node."""

    changes = (MemoryBacking.XPATH,)

    def __init__(self, name: str, description: str, page_kib: int) -> None:
        self.name = name
        self.description = description
        self.page_kib = page_kib

    def apply(self, base: DomainSpec) -> DomainSpec:
        # No page nodeset: it names *guest* NUMA nodes, and for a guest without a NUMA
        # topology libvirt drops nodeset='0' on define anyway. Which *host* node the
        # pages come from is <numatune>'s job, set in the common base.
        pages = HugePages(page_kib=self.page_kib)
        return replace(base, memory_backing=MemoryBacking(hugepages=pages))

    def needs(self, spec: DomainSpec, host_node: int) -> list[HugePageNeed]:
        count = math.ceil(spec.memory_kib / self.page_kib)
        return [HugePageNeed(page_kib=self.page_kib, count=count, node=host_node)]

    def requirement_text(self) -> str:
        size = format_kib(self.page_kib)
        return f"ceil(memory / {size}) free {size}B huge pages on the guest's NUMA node"
