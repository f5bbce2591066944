"""Sizes, CPU lists and subnets as people write them, parsed into numbers; measures and
ratios written as people read them."""

from __future__ import annotations

import datetime
import ipaddress
import math
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


# Units that take a decimal SI prefix when a value is shown (2.66 Gbit/s, 30.0 ms), and the
# prefixes each may take: a time is never shown in ks, a count per second may be in k or M.
_SCALED: dict[str, tuple[int, int]] = {  # unit -> (lowest, highest) power of 1000
    "s": (-3, 0), "bit/s": (0, 4), "B/s": (0, 4), "bit": (0, 4), "B": (0, 4), "Hz": (0, 3),
    "1/s": (0, 3), "op/s": (0, 3), "ops/s": (0, 3), "W": (-1, 1), "J": (-1, 2),
    "": (0, 4),  # a count: 12.65 G, not 12,648,735,312
}  # fmt: skip
_PREFIX = {-3: "n", -2: "µ", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T"}
MAX_DECIMALS = 6


def scale_for(value: float, unit: str) -> tuple[float, str]:
    """(factor, unit shown) for values like ``value``: 2.66e9 bit/s -> (1e9, "Gbit/s"),
    0.03 s -> (1e-3, "ms"); (1, unit) for a unit that takes no prefix (MiB/s, %) or 0."""
    if unit not in _SCALED or not math.isfinite(value) or value == 0:
        return 1.0, unit
    low, high = _SCALED[unit]
    power = max(low, min(high, math.floor(math.log10(abs(value)) / 3)))
    return 1000.0**power, f"{_PREFIX[power]}{unit}"


def decimals_for_width(width: float, value: float = math.nan) -> int:
    """Decimals that show ``width`` (a margin, half an interval) with two significant digits;
    without a width, three significant digits of ``value``."""
    if math.isfinite(width) and width > 0:
        return max(0, min(MAX_DECIMALS, 1 - math.floor(math.log10(width))))
    if math.isfinite(value) and value != 0:
        return max(0, min(MAX_DECIMALS, 2 - math.floor(math.log10(abs(value)))))
    return 0


def _plain(value: float, decimals: int) -> str:
    if not math.isfinite(value):
        return "n/a"
    text = f"{value:,.{decimals}f}"
    return "0" if text.lstrip("-").strip("0.,") == "" and decimals == 0 else text


def format_measure(value: float, margin: float, unit: str) -> str:
    """``value ± margin unit`` as people read it: ``2.66 ± 0.40 Gbit/s``, ``30.0 ± 1.2 ms``:
    a prefix from the value, the digits the margin's width gives (two significant digits of
    it). A value past 10^6 of its shown unit (no prefix fits) keeps its thousands commas up
    to MEASURE_COMPACT_FROM (``4,299,993 KiB``); past it, or so small that MAX_DECIMALS show
    none of its digits, value and margin are compact (``1.2e+56 ± 3.4e+55 %``)."""
    factor, shown = scale_for(value, unit)
    value, margin = value / factor, margin / factor
    decimals = decimals_for_width(margin, value)
    suffix = f" {shown}" if shown else ""
    if _needs_compact(value, decimals):
        if not math.isfinite(margin):
            return f"{compact(value)}{suffix}"
        return f"{compact(value, margin)} ± {compact(margin, margin)}{suffix}"
    if not math.isfinite(margin):
        return f"{_plain(value, decimals)}{suffix}"
    return f"{_plain(value, decimals)} ± {_plain(margin, decimals)}{suffix}"


MEASURE_COMPACT_FROM = 1e12  # a measure's digits, thousands commas and all, up to here


def _needs_compact(value: float, decimals: int) -> bool:
    """Whether ``value`` shown with ``decimals`` is past reading: a dozen digits or more, or
    not one of its digits (1e-50 at six decimals reads 0.000000)."""
    if not math.isfinite(value) or value == 0:
        return False
    return abs(value) >= MEASURE_COMPACT_FROM or round(value, decimals) == 0


# From a million on, a ratio or a percentage is written as 1.2e+56, not digit by digit: below
# it the fixed form has at most six digits before its decimals, read at a glance and no
# wider than the compact form by more than three characters (a table's column fits either);
# past it the reader counts digits, and those past the second say nothing (such a value comes
# from an interval of a handful of samples, or a count near zero).
COMPACT_FROM = 1e6
MAX_MANTISSA_DIGITS = 6


def fixed_or_compact(
    value: float, decimals: int, half_width: float = math.nan, *, tiny: bool = True
) -> str:
    """``value`` with ``decimals`` decimals, or compact (``1.2e+56``) when it is COMPACT_FROM
    or more in size, or (``tiny``) so small that those decimals would show none of its
    digits. A compact value has the significant digits that show ``half_width`` (its
    interval's), at least two; ``n/a`` when it is not finite."""
    if not math.isfinite(value):
        return "n/a"
    rounded = abs(round(value, decimals))
    if rounded < COMPACT_FROM and (rounded != 0 or value == 0 or not tiny):
        return f"{value:.{decimals}f}"
    return compact(value, half_width)


def compact(value: float, half_width: float = math.nan) -> str:
    """``value`` as ``1.2e+56``: the significant digits that show ``half_width`` (its
    interval's), at least two."""
    digits = 2
    if math.isfinite(half_width) and half_width > 0:
        shown = math.floor(math.log10(abs(value))) - math.floor(math.log10(half_width)) + 1
        digits = max(digits, min(MAX_MANTISSA_DIGITS, shown))
    return f"{value:.{digits - 1}e}"


def format_ratio(ratio: float, low: float, high: float) -> tuple[str, str]:
    """A ratio and its interval as hyperfine and pyperf print them: ``("1.05×", "[1.03,
    1.07]")``, with the digits the interval's width gives: one significant digit of its
    half-width, and at least two decimals. A huge or tiny one is compact (``3.4e+07×``,
    ``[3.3e+07, 3.5e+07]``: :func:`fixed_or_compact`)."""
    if not all(map(math.isfinite, (ratio, low, high))):
        return (f"{ratio:.3g}×" if math.isfinite(ratio) else "n/a"), ""
    half_width = (high - low) / 2
    decimals = max(2, decimals_for_width(half_width) - 1)
    low_text, high_text = (fixed_or_compact(end, decimals, half_width) for end in (low, high))
    return f"{fixed_or_compact(ratio, decimals, half_width)}×", f"[{low_text}, {high_text}]"


def format_percent(value: float) -> str:
    """A change in percent for a table: signed, two decimals (``+4.82``), compact from a
    million (``+1.2e+56``: a count's change from near zero); a tiny one reads ``+0.00``, the
    change the two decimals can tell. ``n/a`` when not finite."""
    text = fixed_or_compact(value, 2, tiny=False)
    return text if text == "n/a" or text.startswith("-") else f"+{text}"


def format_timestamp(stamp: float) -> str:
    """A moment (epoch seconds) as every text output writes it: ISO 8601 in local time with
    its offset, to the second (``2026-11-27T12:00:05+01:00``)."""
    moment = _local_moment(stamp)
    if moment is None:  # past year 9999: the number as it is
        return f"{stamp:g} s since the epoch"
    return moment.isoformat(timespec="seconds")


def iso_timestamp(stamp: float | None) -> str | None:
    """A moment (epoch seconds) as every JSON output writes it: ISO 8601 in local time with
    its offset, as text does, but to the microsecond (``2026-11-27T12:00:05.709594+01:00``),
    so that a program reads the stored epoch back within 1 µs. None (JSON null) for no moment
    and for one no date can hold (not finite, past year 9999): a string that is no ISO 8601
    would break every reader of the document."""
    moment = None if stamp is None else _local_moment(stamp)
    return None if moment is None else moment.isoformat(timespec="microseconds")


def _local_moment(stamp: float) -> datetime.datetime | None:
    """``stamp`` (epoch seconds) in local time with its offset; None where no date holds it."""
    try:
        return datetime.datetime.fromtimestamp(stamp, datetime.UTC).astimezone()
    except (OverflowError, ValueError, OSError):
        return None
