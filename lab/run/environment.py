"""The environment a run ran in, recorded at every start of it (a resume too, so a change
in the middle of a run is seen): each host's facts (``lab.host.environment``) with the lab's
own version and the accelerator, and each guest's kernel, THP modes, compiler and domain XML.

``lab runs show`` prints them (and ``--json`` carries them), and ``lab compare``
names every fact that differs between the twins beyond their variant (``differences``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lab import __version__
from lab.core.hostexec import Host
from lab.core.paths import CHECKOUT, FROM_CHECKOUT
from lab.host.environment import NOT_AVAILABLE
from lab.host.facts import parse_thp_mode
from lab.run.sources import SOURCE_FACTS
from lab.store.records import EnvironmentRecord

# One fixed script, no user input: a line per fact, in GUEST_FACTS order.
GUEST_SCRIPT = (
    "uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled;"
    " cat /sys/kernel/mm/transparent_hugepage/defrag;"
    " (gcc --version 2>/dev/null || echo) | head -n 1"
)
GUEST_FACTS = ("kernel", "thp_enabled", "thp_defrag", "compiler")
# Facts that differ between twins by construction: their XML (the variant and the names) and
# what it declares for memory; their QEMU's command lines and memory (qemu_*) are compared
# apart, option by option (lab.run.qemuargs) and against the declared backing (lab.run.backing).
# domain_xml_sha256 is the live XML's, as stores before domain_defined_sha256 hold it.
IDENTITY = frozenset({"domain_defined_sha256", "domain_xml_sha256", "memory_backing_declared"})
# What a reboot records of each twin's new boot (lab.run.reboot): a boot id is new in every
# boot and the time a cycle took is each twin's own, so they differ between twins and between
# starts by nature, and say nothing about the experiment.
BOOT_FACTS = frozenset({"reboot_boot_id", "reboot_s", "reboot_before_iteration"})


def guest_environment(output: str, defined_xml: str | None) -> dict[str, str]:
    """A guest's facts from :data:`GUEST_SCRIPT`'s output and its domain XML as defined
    (libvirt's inactive XML): the live one of every new boot has new ids, labels and paths,
    and its hash "changed between starts" of a run that rebooted and changed nothing."""
    lines = [*output.splitlines(), *[""] * len(GUEST_FACTS)]
    facts = dict(zip(GUEST_FACTS, (line.strip() for line in lines), strict=False))
    for name in ("thp_enabled", "thp_defrag"):
        try:
            facts[name] = parse_thp_mode(facts[name])
        except ValueError:
            facts[name] = NOT_AVAILABLE
    facts = {k: v or NOT_AVAILABLE for k, v in facts.items()}
    facts["domain_defined_sha256"] = (
        hashlib.sha256(defined_xml.encode()).hexdigest() if defined_xml else NOT_AVAILABLE
    )
    return facts


def lab_facts(host: Host) -> dict[str, str]:
    """The lab's version, and its commit (``+dirty`` with changes) when run from a checkout."""
    facts = {"lab_version": __version__, "lab_commit": NOT_AVAILABLE}
    if FROM_CHECKOUT and (CHECKOUT / ".git").exists():
        try:
            head = host.run(["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], check=False)
            dirty = host.run(["git", "-C", str(CHECKOUT), "status", "--porcelain"], check=False)
        except Exception:
            return facts
        if head.ok:
            facts["lab_commit"] = head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    return facts


@dataclass(frozen=True)
class Difference:
    """One fact that is not the same everywhere it should be."""

    scope: str  # "guest" or "host"
    fact: str
    values: tuple[tuple[str, str], ...]  # (where, value), in the order given

    @property
    def text(self) -> str:
        shown = ", ".join(f"{where} {value}" for where, value in self.values)
        return f"{self.scope} {self.fact}: {shown}"


def differences(
    sides: Sequence[tuple[str, Mapping[str, str]]], scope: str, ignore: frozenset[str] = IDENTITY
) -> list[Difference]:
    """The facts whose values differ among ``sides`` ((where, facts) pairs), but those in
    ``ignore``; a fact one side lacks counts as differing."""
    names = sorted({k for _, facts in sides for k in facts if not k.startswith("qemu_")} - ignore)
    found = []
    for name in names:
        values = tuple((where, facts.get(name, "(not recorded)")) for where, facts in sides)
        if len({v for _, v in values}) > 1:
            found.append(Difference(scope, name, values))
    return found


def latest(records: Sequence[EnvironmentRecord]) -> dict[tuple[str, str], dict[str, str]]:
    """Each host's and guest's facts at the last start of a run, by (scope, name)."""
    return {(r.scope, r.name): dict(r.facts) for r in records}


def changes(records: Sequence[EnvironmentRecord]) -> list[str]:
    """What changed between starts of a run (a resumed run after a kernel update, a THP mode
    switched in the middle): one line per fact, with its first and last value."""
    first: dict[tuple[str, str], dict[str, str]] = {}
    for r in records:
        first.setdefault((r.scope, r.name), dict(r.facts))
    lines = []
    for (scope, name), facts in latest(records).items():
        before = first[(scope, name)]
        for fact in sorted(set(before) & set(facts)):  # a fact a later lab added is no change
            if fact.startswith("qemu_") or fact in BOOT_FACTS or before[fact] == facts[fact]:
                continue
            lines.append(f"{scope} {name} {fact}: {before.get(fact)} → {facts.get(fact)}")
    return lines


def twin_differences(
    records: Sequence[EnvironmentRecord], declared: Iterable[str] = ()
) -> list[Difference]:
    """The facts in which a run's guests differ beyond their variant (their XML, and the
    guest facts their variants ``declared`` they change), and those of their hosts where
    they ran on different hosts, at the run's last start."""
    now = latest(records)
    guests = [(name, facts) for (scope, name), facts in now.items() if scope == "guest"]
    guest_facts = [(name, {k: v for k, v in f.items() if k not in ("host", "variant")})
                   for name, f in guests]  # fmt: skip
    # The revision of a user's sources each twin runs (lab.run.sources) is the parameters':
    # twins differ in it where those ask (the revision workload, lab bisect's step); a run
    # resumed after its branch moved shows it between starts (changes).
    ignored = IDENTITY | BOOT_FACTS | SOURCE_FACTS | frozenset(declared)
    found = differences(guest_facts, "guest", ignored)
    hosts = [(name, comparable_host(facts)) for (scope, name), facts in now.items()
             if scope == "host"]  # fmt: skip
    if len(hosts) > 1:
        found += differences(hosts, "host")
    return found


# Host facts two hosts of one study may differ in without changing what is measured.
VOLATILE = frozenset({"lab_commit"})


def comparable_host(facts: Mapping[str, str]) -> dict[str, str]:
    """A host's facts as two hosts, or two runs, are compared: without the lab's own commit
    and the huge page pools (their free pages move as guests start)."""
    return {k: v for k, v in facts.items() if k not in VOLATILE and not k.startswith("hugepages.")}
