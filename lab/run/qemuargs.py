"""What QEMU was really told: the twins' live command lines, compared option by option.

Two domain XMLs that differ only in ``<memoryBacking><hugepages/>`` become QEMU command lines
that differ in more: libvirt gives the hugetlb twin a ``memory-backend-file`` on hugetlbfs
with ``"prealloc":true`` (and a thread context to preallocate with), the other twin a
``memory-backend-ram``. Preallocation is a confound of its own: the hugetlb twin never faults
its RAM in during a run. So every difference is put in one of four kinds:

- ``variant``: the declared delta itself (the memory backend's type, and an option that a
  part of the domain a variant declares it changes becomes: ``<cmdline>`` is ``-append``,
  ``<allocation>`` the backend's ``prealloc``);
- ``consequence``: what libvirt adds because of it (preallocation, the hugetlbfs path, the
  thread context that preallocates), each with what it means for the measurement;
- ``identity``: the guests' names, UUIDs, MACs, file paths and descriptor numbers;
- ``unexplained``: anything else, which should not be there.

The command lines come from ``/proc/PID/cmdline`` (NUL-separated) of the guests' QEMU
processes, recorded with the run's environment (``lab.run.environment``) and read live by
``lab diff --live``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lab.domainxml.boot import KernelBoot
from lab.domainxml.memorybacking import MemoryBacking

SHORT_NAME = 20  # characters of a domain's name in libvirt's domain-N-NAME folders
VARIANT, CONSEQUENCE, IDENTITY, UNEXPLAINED = "variant", "consequence", "identity", "unexplained"

# What libvirt adds to a memory backend because of hugetlb backing, and what it means.
MEMORY_CONSEQUENCES = {
    "prealloc": "guest RAM preallocated when QEMU starts: this twin never faults its memory in"
    " during a run (libvirt preallocates hugetlb-backed memory)",
    "prealloc-context": "a thread context that preallocates the RAM on its NUMA node",
    "mem-path": "guest RAM is a file on hugetlbfs",
    "x-use-canonical-path-for-ramblock-id": "a migration detail of file-backed RAM",
}
THREAD_CONTEXT = "thread-context"  # the object libvirt adds to preallocate with
# Stands for the guest RAM's memory backend object, whatever id libvirt gave it.
MEMORY_BACKEND = "memory-backend"
# The QEMU option (or memory backend field) that a part of the domain a variant may declare
# (Variant.changes) becomes.
OPTION_OF_PART = {
    KernelBoot.CMDLINE_XPATH: "-append",
    MemoryBacking.ALLOCATION_XPATH: f"{MEMORY_BACKEND} prealloc",
}

_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_MAC = re.compile(r"\b(?:[0-9a-f]{2}:){5}[0-9a-f]{2}\b")
_FD = re.compile(r'(\bfd"?[=:]\s*"?)\d+')


@dataclass(frozen=True)
class Option:
    flag: str  # "-object"
    value: str  # its argument, as given ("" for a flag without one)

    @property
    def key(self) -> str:
        """What matches this option with the other twin's: the flag and the id it names."""
        fields = _fields(self.value)
        ident = next((str(fields[k]) for k in ("id", "node-name") if k in fields), None)
        if self.flag == "-object" and fields.get("qom-type") == THREAD_CONTEXT:
            ident = f"{THREAD_CONTEXT} {ident}"
        return f"{self.flag} {ident}" if ident else self.flag


@dataclass(frozen=True)
class QemuDifference:
    kind: str  # VARIANT, CONSEQUENCE, IDENTITY or UNEXPLAINED
    option: str  # "-object pc.ram" or "-object pc.ram prealloc"
    a: str
    b: str
    meaning: str = ""


def parse_cmdline(raw: str | bytes) -> list[Option]:
    """``/proc/PID/cmdline`` (arguments separated by NUL) as options: each flag with the
    argument that follows it, unless that is a flag itself."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    args = [a for a in text.split("\0") if a][1:]  # the program itself aside
    options = []
    i = 0
    while i < len(args):
        flag = args[i]
        value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("-") else ""
        options.append(Option(flag, value))
        i += 2 if value else 1
    return options


def _fields(value: str) -> dict[str, object]:
    """A JSON object argument, or ``k=v,...`` (a first bare word is the key ``""``)."""
    if value.startswith("{"):
        try:
            found = json.loads(value)
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}
    fields: dict[str, object] = {}
    for part in value.split(","):
        key, sep, val = part.partition("=")
        fields[key if sep else ""] = val if sep else key
    return fields


def normalise(value: str, names: Sequence[str]) -> str:
    """The argument with the guest's identity replaced: its name (also in libvirt's
    ``domain-N-NAME`` and ``N-NAME`` paths, where libvirt cuts a name to its first 20
    characters: ``domain-30-lab-page-thp.guest-t``), UUIDs, MACs and descriptor numbers."""
    for name in names:
        value = re.sub(rf"(?:domain-)?\d+-{re.escape(name)}\b", "<domain>", value)
        value = re.sub(rf"domain-\d+-{re.escape(name[:SHORT_NAME])}", "<domain>", value)
        value = value.replace(name, "<name>")
    value = _UUID.sub("<uuid>", value)
    value = _MAC.sub("<mac>", value)
    return _FD.sub(r"\1<fd>", value)


def declared_options(declared: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Option -> the variants (by name, comma-separated) whose declared parts of the domain
    (``declared``: variant name -> its ``changes``) become that QEMU option."""
    found: dict[str, list[str]] = {}
    for name, parts in declared.items():
        for part in parts:
            if part in OPTION_OF_PART:
                found.setdefault(OPTION_OF_PART[part], []).append(name)
    return {option: ", ".join(sorted(set(names))) for option, names in found.items()}


def compare_cmdlines(
    a: Sequence[Option],
    b: Sequence[Option],
    name_a: str,
    name_b: str,
    declared: Mapping[str, str] | None = None,
) -> list[QemuDifference]:
    """Every option that differs between two twins' command lines, with its kind;
    ``declared`` (:func:`declared_options`) names the options the variants change."""
    by_a = {o.key: o for o in a}
    by_b = {o.key: o for o in b}
    declared = declared or {}
    found: list[QemuDifference] = []
    for key in sorted(set(by_a) | set(by_b)):
        oa, ob = by_a.get(key), by_b.get(key)
        va, vb = (oa.value if oa else "(absent)"), (ob.value if ob else "(absent)")
        if va == vb:
            continue
        if oa and ob and normalise(va, [name_a]) == normalise(vb, [name_b]):
            found.append(QemuDifference(IDENTITY, key, va, vb))
            continue
        if key in declared:
            found.append(QemuDifference(VARIANT, key, va, vb, f"declared by {declared[key]}"))
            continue
        fa, fb = _fields(va) if oa else {}, _fields(vb) if ob else {}
        if THREAD_CONTEXT in (fa.get("qom-type"), fb.get("qom-type")):
            meaning = MEMORY_CONSEQUENCES["prealloc-context"]
            found.append(QemuDifference(CONSEQUENCE, key, va, vb, meaning))
        elif _memory_backend(fa) or _memory_backend(fb):
            found += _backend_differences(key, fa, fb, name_a, name_b, declared)
        else:
            found.append(QemuDifference(UNEXPLAINED, key, va, vb))
    return found


def _memory_backend(fields: dict[str, object]) -> bool:
    return str(fields.get("qom-type", "")).startswith("memory-backend-")


def _backend_differences(
    key: str,
    fa: dict[str, object],
    fb: dict[str, object],
    name_a: str,
    name_b: str,
    declared: Mapping[str, str],
) -> list[QemuDifference]:
    """A memory backend field by field: its type and the fields a variant declares are the
    variant, what libvirt adds for hugetlb pages the consequences, the rest unexplained."""
    found = []
    for field in sorted(set(fa) | set(fb)):
        va, vb = json.dumps(fa.get(field)), json.dumps(fb.get(field))
        if field not in fa:
            va = "(absent)"
        if field not in fb:
            vb = "(absent)"
        if va == vb or normalise(va, [name_a]) == normalise(vb, [name_b]):
            continue
        where = f"{key} {field}"
        by = declared.get(f"{MEMORY_BACKEND} {field}")
        if field == "qom-type":
            found.append(QemuDifference(VARIANT, where, va, vb, "the memory backend"))
        elif by:
            meaning = MEMORY_CONSEQUENCES.get(field, "").split(" (")[0]
            found.append(QemuDifference(VARIANT, where, va, vb, f"declared by {by}: {meaning}"))
        elif field in MEMORY_CONSEQUENCES:
            found.append(QemuDifference(CONSEQUENCE, where, va, vb, MEMORY_CONSEQUENCES[field]))
        else:
            found.append(QemuDifference(UNEXPLAINED, where, va, vb))
    return found
