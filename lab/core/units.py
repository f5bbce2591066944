"""Sizes, CPU lists and subnets as people write them, parsed into numbers."""

from __future__ import annotations

import ipaddress
import re
from decimal import Decimal

from lab.core.errors import UsageError

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE | re.ASCII)
_FACTOR = {"": 1, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3}
MAX_KIB = 1024**5  # an exbibyte: larger is a typo, not a machine
MAX_CPU = 65535  # above the kernel's largest NR_CPUS
_CPU_RANGE = re.compile(r"([0-9]{1,6})(?:-([0-9]{1,6}))?", re.ASCII)


def parse_size_kib(text: str) -> int:
    """Parse ``1G``, ``512M``, ``1GiB`` or a bare number of KiB into KiB.

    Suffixes are binary (1G = 1 GiB), as libvirt and the kernel use them. The arithmetic is
    exact (``1.5G`` is 1572864), so a size that is no whole number of KiB is refused.
    """
    match = _SIZE.match(text)
    if not match or len(match.group(1)) > 40:
        raise UsageError(
            f"cannot read size {text[:60]!r}",
            hint="Write it as a number with K, M, G or T, e.g. 1G",
        )
    value = Decimal(match.group(1)) * _FACTOR[match.group(2).upper()]
    if value <= 0 or value != value.to_integral_value():
        raise UsageError(
            f"size {text!r} is not a positive whole number of KiB", hint="e.g. 1G, 512M or 1536M"
        )
    if value > MAX_KIB:
        raise UsageError(f"size {text!r} is larger than any machine", hint="e.g. 1G")
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
        match = _CPU_RANGE.fullmatch(part)
        if not match:
            raise UsageError(f"cannot read CPU list {text!r}", hint="Write it like 0-3,8")
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) is not None else start
        if end < start:
            raise UsageError(f"CPU list {text!r}: range {part} runs backwards")
        if end > MAX_CPU:
            raise UsageError(f"CPU list {text!r}: CPU {end} is beyond any host's CPUs")
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


def parse_subnet(subnet: str) -> ipaddress.IPv4Network:
    try:
        network = ipaddress.ip_network(subnet, strict=True)
    except ValueError as err:
        raise UsageError(
            f"cannot use subnet {subnet!r}: {err}",
            hint="Give an IPv4 network such as 198.18.0.0/24",
        ) from None
    if not isinstance(network, ipaddress.IPv4Network):
        raise UsageError(f"subnet {subnet!r} is not IPv4", hint="Use e.g. 198.18.0.0/24")
    if network.num_addresses < 256:
        raise UsageError(
            f"subnet {subnet!r} is smaller than a /24",
            hint="Guests lease from .100 to .254; use a /24 or larger",
        )
    return network


def format_duration(seconds: float) -> str:
    """A duration as people read it: ``5 s``, ``2 min 05 s``, ``2 h 01 min``, ``1 d 1 h``."""
    minutes, sec = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {sec:02d} s" if minutes else f"{sec} s"
