"""Sizes and CPU lists as people write them, parsed into numbers."""

from __future__ import annotations

import re

from lab.errors import UsageError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)
_FACTOR = {"": 1, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3}


def parse_size_kib(text: str) -> int:
    """Parse ``1G``, ``512M``, ``1GiB`` or a bare number of KiB into KiB.

    Suffixes are binary (1G = 1 GiB), as libvirt and the kernel use them.
    """
    match = _SIZE.match(text)
    if not match:
        raise UsageError(
            f"cannot read size {text!r}", hint="Write it as a number with K, M, G or T, e.g. 1G"
        )
    value = float(match.group(1)) * _FACTOR[match.group(2).upper()]
    if value <= 0 or value != int(value):
        raise UsageError(f"size {text!r} is not a positive whole number of KiB")
    return int(value)


def format_kib(kib: int) -> str:
    """Render KiB the way a person reads it: 1048576 -> '1G', 2048 -> '2M'."""
    for suffix, factor in (("T", 1024**3), ("G", 1024**2), ("M", 1024)):
        if kib % factor == 0:
            return f"{kib // factor}{suffix}"
    return f"{kib}K"


def parse_cpuset(text: str) -> list[int]:
    """Parse a libvirt/kernel CPU list such as ``0-3,8,10-11`` into sorted CPU ids."""
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if part.startswith("^"):
            raise UsageError(f"CPU list {text!r}: exclusions (^) are not supported")
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise UsageError(f"cannot read CPU list {text!r}", hint="Write it like 0-3,8")
        start, end = int(lo), int(hi) if sep else int(lo)
        if end < start:
            raise UsageError(f"CPU list {text!r}: range {part} runs backwards")
        cpus.update(range(start, end + 1))
    return sorted(cpus)


def format_cpuset(cpus: list[int] | tuple[int, ...] | set[int]) -> str:
    """Render CPU ids as a compact libvirt CPU list: [0, 1, 2, 5] -> '0-2,5'."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
