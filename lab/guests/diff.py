"""Twin fairness made visible: the structural difference between two domains.

Each domain is flattened to ``path -> value`` pairs (elements indexed among same-tag
siblings, attributes as ``/@name``, text as ``/text()``). Every differing path is then
classified as the guest's identity, a variant's declared delta (a path inside a part of the
domain the variant says it changes), or *unexplained*; twins must have no unexplained
difference.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lxml import etree

# What is unavoidably per guest: its name, the files that are its own, MAC and CPU pins.
IDENTITY_PATTERNS = tuple(
    re.compile(p)
    for p in (
        r"^/domain/name/text\(\)$",
        r"^/domain/uuid/text\(\)$",
        r"^/domain/devices/disk(\[\d+\])?/source/@file$",
        r"^/domain/devices/interface(\[\d+\])?/mac/@address$",
        r"^/domain/devices/serial(\[\d+\])?/log/@file$",
        r"^/domain/devices/console(\[\d+\])?/log/@file$",
        r"^/domain/cputune/vcpupin(\[\d+\])?/@cpuset$",
    )
)


@dataclass(frozen=True)
class Change:
    path: str
    a: str | None
    b: str | None
    kind: str  # "identity", "variant" or "unexplained"
    by: str | None = None  # for "variant": the variant(s) whose declared parts hold the path


def flatten(root: etree._Element) -> dict[str, str]:
    """``path -> value`` for every element, attribute and text under ``root``.

    An element is indexed (``disk[2]``) only where siblings share its tag.
    """
    out: dict[str, str] = {}

    def walk(node: etree._Element, path: str) -> None:
        out[path] = ""  # the element itself exists
        for key, value in sorted(node.attrib.items()):
            out[f"{path}/@{key!s}"] = str(value)
        text = (node.text or "").strip()
        if text:
            out[f"{path}/text()"] = text
        children = [c for c in node if isinstance(c.tag, str)]  # skip comments
        totals: dict[str, int] = {}
        for child in children:
            totals[str(child.tag)] = totals.get(str(child.tag), 0) + 1
        seen: dict[str, int] = {}
        for child in children:
            tag = str(child.tag)
            seen[tag] = seen.get(tag, 0) + 1
            walk(child, f"{path}/{tag}[{seen[tag]}]" if totals[tag] > 1 else f"{path}/{tag}")

    walk(root, f"/{root.tag}")
    return out


def within(path: str, part: str) -> bool:
    """Whether flattened ``path`` is element ``part`` or lies inside it (``part`` is a path
    without indexes, like ``/domain/os/cmdline``; ``path`` may index its elements)."""
    bare = re.sub(r"\[\d+\]", "", path)
    return bare == part or bare.startswith(part + "/")


def diff_domains(
    a: etree._Element, b: etree._Element, declared: Mapping[str, Iterable[str]] | None = None
) -> list[Change]:
    """Every path whose value differs between ``a`` and ``b``, classified; ``declared``
    maps each variant's name to the parts of the domain it changes."""
    flat_a, flat_b = flatten(a), flatten(b)
    parts = [(name, part) for name, found in (declared or {}).items() for part in found]
    changes = []
    for path in sorted(set(flat_a) | set(flat_b)):
        va, vb = flat_a.get(path), flat_b.get(path)
        if va == vb:
            continue
        names = sorted({name for name, part in parts if within(path, part)})
        by = None
        if any(p.match(path) for p in IDENTITY_PATTERNS):
            kind = "identity"
        elif names:
            kind, by = "variant", ", ".join(names)
        else:
            kind = "unexplained"
        changes.append(Change(path=path, a=va, b=vb, kind=kind, by=by))
    return changes


def variant_delta_paths(base: etree._Element, changed: etree._Element) -> set[str]:
    """The paths a variant's ``apply`` changed on a base: what it must have declared."""
    flat_base, flat_changed = flatten(base), flatten(changed)
    return {
        p for p in set(flat_base) | set(flat_changed) if flat_base.get(p) != flat_changed.get(p)
    }
