"""Factors: what sets two variants apart, taken apart, so that a study can ask which part
matters (issue 41).

1 GiB static huge pages differ from the default transparent huge pages in page size, and in
preallocation too (libvirt preallocates hugetlb-backed RAM). Here each such difference is a
factor with levels, each level a delta on the common domain base (or on the guest's kernel),
declaring the part of the domain it changes, as a variant does. One level of each factor of a
study makes a *cell*, which is a variant (:class:`Cell`): its name is its levels joined by dots,
``page-1g.prealloc-on``, and it goes wherever a variant name goes (``lab up --pair``, ``lab
diff``, ``lab xml``, a study file).

A cell whose levels change one part of the domain twice is refused, and so is one libvirt
cannot express (1 GiB pages faulted in on demand: libvirt refuses hugepages with
``<allocation mode='ondemand'/>``), each with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from lab.core.cells import CELL_SEPARATOR, LEVEL_SEPARATOR
from lab.core.errors import UsageError
from lab.core.units import format_kib
from lab.domainxml.boot import KernelBoot
from lab.domainxml.devices import Disk, NetworkInterface, SerialConsole
from lab.domainxml.domain import DomainSpec
from lab.domainxml.memorybacking import HugePages, MemoryBacking
from lab.guests.variant import RunningGuest, TransparentHugePages, Variant, with_guest_thp
from lab.guests.verify import GUEST_THP_ENABLED, THP_MODES, check_guest_thp
from lab.host.hugepages import HugePageNeed


@dataclass(frozen=True)
class Level:
    """One level of a factor: a delta on the domain, the parts of it the delta changes, what
    the host must have for it, and how to see it took effect in a running guest."""

    factor: str
    name: str
    description: str
    apply: Callable[[DomainSpec], DomainSpec]
    changes: tuple[str, ...] = ()
    guest_facts: tuple[str, ...] = ()
    needs: Callable[[DomainSpec, int], list[HugePageNeed]] = lambda spec, node: []
    verify: Callable[[RunningGuest], list[str]] = lambda guest: []

    @property
    def label(self) -> str:
        """``factor-level``, as a cell's name spells it."""
        return f"{self.factor}{LEVEL_SEPARATOR}{self.name}"


@dataclass(frozen=True)
class Factor:
    name: str
    description: str
    levels: dict[str, Level] = field(default_factory=dict)

    def level(self, name: str) -> Level:
        try:
            return self.levels[name]
        except KeyError:
            raise UsageError(
                f"factor {self.name!r} has no level {name!r}",
                hint=f"Its levels: {', '.join(self.levels)} (`lab variants` lists every factor)",
            ) from None


def _backing(spec: DomainSpec, **fields: object) -> DomainSpec:
    """``spec`` with its memory backing's ``fields`` set (None when nothing is left set)."""
    backing = replace(spec.memory_backing or MemoryBacking(), **fields)  # type: ignore[arg-type]
    empty = backing.hugepages is None and backing.allocation is None
    return replace(spec, memory_backing=None if empty else backing)


def _page_level(name: str, page_kib: int | None) -> Level:
    if page_kib is None:
        return Level(
            "page", name, "guest RAM left to the host's transparent huge pages",
            lambda spec: _backing(spec, hugepages=None), (MemoryBacking.XPATH,),
        )  # fmt: skip

    def needs(spec: DomainSpec, node: int) -> list[HugePageNeed]:
        return [HugePageNeed(page_kib, math.ceil(spec.memory_kib / page_kib), node)]

    return Level(
        "page", name, f"guest RAM backed by static {format_kib(page_kib)}B huge pages",
        lambda spec: _backing(spec, hugepages=HugePages(page_kib)), (MemoryBacking.XPATH,),
        needs=needs,
    )  # fmt: skip


def _nothing_to_check(guest: RunningGuest) -> list[str]:
    return []


def _prealloc_level(name: str, mode: str) -> Level:
    verify = _nothing_to_check  # faulted in on demand: what booting touched, nothing to see
    if mode == "immediate":  # QEMU holds all guest RAM once up, as thp-prealloc's check says
        verify = TransparentHugePages("prealloc", "", prealloc=True).verify
    return Level(
        "prealloc", name,
        f"<allocation mode='{mode}'/>: guest RAM "
        + ("allocated as QEMU starts" if mode == "immediate" else "faulted in as touched"),
        lambda spec: _backing(spec, allocation=mode), (MemoryBacking.ALLOCATION_XPATH,),
        verify=verify,
    )  # fmt: skip


def _guest_thp_level(mode: str) -> Level:
    def apply(spec: DomainSpec) -> DomainSpec:
        return with_guest_thp(spec, mode, f"level guest-thp-{mode}")

    def verify(guest: RunningGuest) -> list[str]:
        enabled = guest.shell.run(["cat", GUEST_THP_ENABLED], timeout=60).stdout
        return check_guest_thp(guest.name, mode, enabled)

    return Level(
        "guest-thp", mode, f"the guest kernel runs transparent huge pages '{mode}'",
        apply, (KernelBoot.CMDLINE_XPATH,), ("thp_enabled",), verify=verify,
    )  # fmt: skip


def _factor(name: str, description: str, levels: Iterable[Level]) -> Factor:
    return Factor(name, description, {level.name: level for level in levels})


FACTORS: dict[str, Factor] = {
    f.name: f
    for f in (
        _factor(
            "page",
            "the page size backing guest RAM",
            [_page_level("thp", None), _page_level("2m", 2048), _page_level("1g", 1024 * 1024)],
        ),
        _factor(
            "prealloc",
            "whether guest RAM is allocated as QEMU starts",
            [_prealloc_level("off", "ondemand"), _prealloc_level("on", "immediate")],
        ),
        _factor("guest-thp", "the guest kernel's THP mode", map(_guest_thp_level, THP_MODES)),
    )
}


def _inexpressible(spec: DomainSpec) -> str | None:
    """Why libvirt refuses the composed domain; None when it takes it."""
    backing = spec.memory_backing
    if backing is not None and backing.hugepages is not None and backing.allocation == "ondemand":
        return (
            "libvirt refuses huge pages faulted in on demand ('hugepages are not allowed with"
            " memory allocation ondemand'): hugetlb-backed RAM is always preallocated"
        )
    return None


class Cell(Variant):
    """One level of each of some factors, composed into a variant: the levels' deltas applied
    in turn to the common base, their parts of the domain and guest facts together."""

    def __init__(self, levels: list[Level]) -> None:
        self.levels = tuple(levels)
        self.name = CELL_SEPARATOR.join(level.label for level in levels)
        self.description = "; ".join(level.description for level in levels)
        owner: dict[str, Level] = {}
        for level in levels:
            for path in level.changes:
                if path in owner:
                    raise UsageError(
                        f"cell {self.name}: {owner[path].label} and {level.label} both change"
                        f" {path}",
                        hint="Give each part of the domain to one factor of the cell",
                    )
                owner[path] = level
        self.changes = tuple(owner)
        self.guest_facts = tuple(f for level in levels for f in level.guest_facts)

    @property
    def factor_levels(self) -> dict[str, str]:
        """The cell's level of each of its factors, by factor name."""
        return {level.factor: level.name for level in self.levels}

    def apply(self, base: DomainSpec) -> DomainSpec:
        spec = base
        for level in self.levels:
            spec = level.apply(spec)
        why = _inexpressible(spec)
        if why is not None:
            raise UsageError(
                f"cell {self.name} cannot be a libvirt domain: {why}",
                hint="Leave that cell out of the design (an incomplete factorial still"
                " estimates what its other cells contrast)",
            )
        return spec

    def needs(self, spec: DomainSpec, host_node: int) -> list[HugePageNeed]:
        return [need for level in self.levels for need in level.needs(spec, host_node)]

    def requirement_text(self) -> str:
        needs = [level.description for level in self.levels if level.factor == "page"]
        return needs[0] if needs else "nothing beyond the base"

    def verify(self, guest: RunningGuest) -> list[str]:
        return [problem for level in self.levels for problem in level.verify(guest)]


def looks_like_cell(name: str, factors: dict[str, Factor] = FACTORS) -> bool:
    """Whether ``name`` starts as a cell does, with a factor's name and a dash: such a name is
    parsed as a cell, and its mistakes named (a level a factor lacks, a factor twice)."""
    first = name.split(CELL_SEPARATOR)[0]
    return any(first.startswith(f + LEVEL_SEPARATOR) for f in factors)


def parse_cell(name: str, factors: dict[str, Factor] = FACTORS) -> Cell:
    """The cell a name spells: ``FACTOR-LEVEL`` parts joined by dots, each factor once."""
    levels: list[Level] = []
    for part in name.split(CELL_SEPARATOR):
        # the longest factor name the part starts with: guest-thp-never is guest-thp's never
        matches = [f for f in factors if part.startswith(f + LEVEL_SEPARATOR)]
        if not matches:
            raise UsageError(
                f"{part!r} of {name!r} names no factor's level",
                hint="A cell is FACTOR-LEVEL parts joined by dots, e.g. page-1g.prealloc-on;"
                f" the factors: {', '.join(factors)} (`lab variants` lists their levels)",
            )
        factor = factors[max(matches, key=len)]
        if any(level.factor == factor.name for level in levels):
            raise UsageError(
                f"cell {name!r} gives factor {factor.name!r} two levels",
                hint="Give each factor one level in a cell",
            )
        levels.append(factor.level(part[len(factor.name) + 1 :]))
    return Cell(levels)


def cell_problem(name: str) -> str | None:
    """Why the cell ``name`` cannot be brought up (a level no factor has, a part of the
    domain changed twice, a domain libvirt refuses); None where it can. Its levels are tried
    on a bare domain, as ``lab up`` applies them to a guest's."""
    try:
        parse_cell(name).apply(_PROBE)
    except UsageError as err:
        return err.message
    return None


# The lab's own images boot their kernel directly (`lab image build`), so the probe does: a
# guest-thp level needs a kernel command line, and an image that lacks one is refused by `lab
# up` (with_guest_thp), not by a design, which is the same for every image.
_PROBE = DomainSpec(
    name="probe", memory_kib=1024 * 1024, vcpus=1, accelerator="qemu",
    boot=KernelBoot("/probe/vmlinuz", "/probe/initrd.img", "root=/dev/vda1"),
    disk=Disk(path="/probe.qcow2"), network=NetworkInterface("probe", "52:54:00:00:00:00"),
    console=SerialConsole("/probe.log"),
)  # fmt: skip
