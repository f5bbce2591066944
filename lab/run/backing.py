"""What really backed each twin's memory: the fact an A/B study of page sizes rests on.

A "thp" twin whose RAM sits in 4 KiB pages, or a "shp1g" twin that got no hugetlb pages,
makes a different study from the one declared. The host knows: the guest's QEMU process's
``/proc/PID/smaps`` sums ``AnonHugePages`` (transparent huge pages) and
``Shared_Hugetlb``/``Private_Hugetlb`` (hugetlbfs, what ``<memoryBacking><hugepages/>``
gives) over its mappings, less TCG's translation buffer under emulation (up to 1 GiB of
anonymous, THP-backed code that is not the guest's RAM: ``lab.host.qemuproc.qemu_memory``);
libvirt writes the PID to ``/run/libvirt/qemu/NAME.pid``. The controller reads them at
every start of a run and at its end (``lab.run.environment``), and ``lab compare`` says in
a line per twin what backed its RAM, loudly when a variant did not take effect.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lxml import etree

from lab.host.environment import NOT_AVAILABLE
from lab.host.qemuproc import read_qemu_memory

# the facts, in KiB, as recorded
ANON_HUGE, HUGETLB, RSS, DECLARED, MEMORY = (
    "qemu_anon_huge_kib", "qemu_hugetlb_kib", "qemu_rss_kib", "memory_backing_declared",
    "memory_kib",
)  # fmt: skip
HUGETLB_DECLARED = "hugetlb"
DEFAULT_DECLARED = "default (transparent huge pages where the host allows)"


def declared_backing(domain_xml: str | None) -> str:
    """What the domain asks for: hugetlb pages (``<memoryBacking><hugepages>``) or not."""
    if not domain_xml:
        return NOT_AVAILABLE
    root = etree.fromstring(domain_xml.encode())
    return (
        HUGETLB_DECLARED if root.find("memoryBacking/hugepages") is not None else DEFAULT_DECLARED
    )


def memory_kib(domain_xml: str | None) -> str:
    """The guest's RAM in KiB from its domain's ``<memory>`` (libvirt writes it in KiB)."""
    if not domain_xml:
        return NOT_AVAILABLE
    memory = etree.fromstring(domain_xml.encode()).find("memory")
    if memory is None or memory.get("unit", "KiB") != "KiB" or not (memory.text or "").isdigit():
        return NOT_AVAILABLE
    return str(int(memory.text or 0))


def backing_facts(read: Callable[[str], str], name: str, domain_xml: str | None) -> dict[str, str]:
    """The guest's QEMU process's huge pages and resident memory now, in KiB, and what its
    domain declares; "not available" where the process or its files cannot be read."""
    facts = {DECLARED: declared_backing(domain_xml), MEMORY: memory_kib(domain_xml)}
    try:
        fields = read_qemu_memory(read, name)
    except (OSError, ValueError):
        return {**facts, ANON_HUGE: NOT_AVAILABLE, HUGETLB: NOT_AVAILABLE, RSS: NOT_AVAILABLE}
    hugetlb = fields.get("Shared_Hugetlb", 0) + fields.get("Private_Hugetlb", 0)
    return {
        **facts,
        ANON_HUGE: str(fields.get("AnonHugePages", 0)),
        HUGETLB: str(hugetlb),
        RSS: str(fields.get("Rss", 0)),
    }


def kib_fact(facts: Mapping[str, str], key: str) -> int | None:
    """A recorded fact in KiB (``MEMORY``, ``ANON_HUGE``, ...) as a number; None when it
    was not available."""
    value = facts.get(key, NOT_AVAILABLE)
    return int(value) if value.isdigit() else None


def describe(name: str, facts: Mapping[str, str]) -> str | None:
    """'lab-thp: 98 % of its 1,048,576 KiB of RAM in transparent huge pages, …', or None when
    nothing was recorded."""
    anon, hugetlb = kib_fact(facts, ANON_HUGE), kib_fact(facts, HUGETLB)
    guest_kib = kib_fact(facts, MEMORY)
    if anon is None or hugetlb is None:
        return None

    def share(kib: int) -> str:
        if guest_kib:
            return f"{kib / guest_kib * 100:.0f} % of its {guest_kib:,} KiB of RAM"
        return f"{kib:,} KiB"

    return (
        f"{name}: {share(hugetlb)} in hugetlb pages, {share(anon)} in transparent huge pages"
        f" (declared: {facts.get(DECLARED, NOT_AVAILABLE)})"
    )


def aged(host_facts: Mapping[str, str]) -> str | None:
    """How the host was aged where a run's host facts say so ("held at level 1.0 by `lab host
    age`, index 0.999"); None for a host not aged by the lab (``host_aged`` "no" or absent)."""
    level = host_facts.get("host_aged", "no")
    if level == "no":
        return None
    index = host_facts.get("thp_unusable_index")
    return f"held at level {level} by `lab host age`" + (f", index {index}" if index else "")


def problem(
    name: str, variant: str, facts: Mapping[str, str], host_facts: Mapping[str, str] | None = None
) -> str | None:
    """The variant that did not take effect: hugetlb declared and none in use, or no huge
    pages at all behind a twin that relies on transparent ones, on a host not aged (aged,
    that is what the age does to a THP twin: :func:`aged_note`)."""
    anon, hugetlb = kib_fact(facts, ANON_HUGE), kib_fact(facts, HUGETLB)
    declared = facts.get(DECLARED)
    if anon is None or hugetlb is None:
        return None
    if declared == HUGETLB_DECLARED and hugetlb == 0:
        return (
            f"{name} ({variant}) declares hugetlb pages but its QEMU process holds none: the"
            " variant did not take effect"
        )
    if no_huge_pages(facts):
        if aged(host_facts or {}) is not None:
            return None  # the age took effect, not the variant that failed
        return (
            f"{name} ({variant}): no huge pages at all backed its memory (AnonHugePages 0): its"
            " RAM was in 4 KiB pages, so it is not a THP twin (check the host's THP mode)"
        )
    return None


def no_huge_pages(facts: Mapping[str, str]) -> bool:
    """A twin that relies on transparent huge pages, with none (nor hugetlb) behind its RAM."""
    anon, hugetlb = kib_fact(facts, ANON_HUGE), kib_fact(facts, HUGETLB)
    return facts.get(DECLARED) == DEFAULT_DECLARED and anon == 0 and hugetlb == 0


def aged_note(name: str, variant: str, facts: Mapping[str, str],
              host_facts: Mapping[str, str]) -> str | None:  # fmt: skip
    """Said instead of :func:`problem` of a THP twin with no huge page on an aged host."""
    how = aged(host_facts)
    if how is None or not no_huge_pages(facts):
        return None
    return (
        f"{name} ({variant}): no huge pages backed its memory (AnonHugePages 0) on a host {how}:"
        " no 2 MiB block was left for THP, which is what the host's age does to a THP twin"
    )
