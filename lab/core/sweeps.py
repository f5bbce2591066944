"""Parameter sweeps as people write them: ``KEY=V1,V2,…`` and ranges, parsed into axes.

``lab run --sweep`` and a study file's ``sweep`` key give, for each swept parameter, its
values as a list or as a range, and the sweep makes one run per point of their cartesian
product. This module only reads the text; the workload then converts and checks each value
(``lab.app.run``).

* ``KEY=V1,V2,…``: the values as written (a number, a size such as ``64M``, or a word);
* ``KEY=A..B:xF``: a geometric range, A, A·F, A·F², … up to B (F above 1), e.g.
  ``total_size=4M..4G:x4`` is 4M, 16M, 64M, 256M, 1G, 4G;
* ``KEY=A..B:+S``: an arithmetic range, A, A+S, … up to B, e.g. ``threads=1..8:+1``;
* items may be mixed: ``block_size=4K..64K:x4,1M``.

A size is a number with a binary suffix: K, M, G, T multiply by 1024, 1024², 1024³, 1024⁴
of whatever the parameter counts when bare (bytes for sysbench). Both ends of a range of
sizes carry a suffix, and the range's values are written back with the largest suffix that
divides them exactly (``4M..16M:x2`` is 4M, 8M, 16M).

A sweep makes at most :data:`MAX_SWEEP_RUNS` runs: a typo such as ``x1.0001`` for ``x4``
would otherwise ask for thousands of runs, so a larger one is refused before anything runs.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from lab.core.errors import UsageError

MAX_SWEEP_RUNS = 64
"""The most runs (points of the cartesian product) one sweep may make."""

ORDERS = ("interleaved", "blocked")
"""interleaved: iteration i of every value before iteration i+1 of any (drift spreads over
every value); blocked: one value's n iterations, then the next value's."""

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_NUMBER = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGT]?)", re.ASCII | re.IGNORECASE)
_RANGE = re.compile(r"(?P<a>[^:]+?)\.\.(?P<b>[^:]+):(?P<op>[x+])(?P<step>.+)", re.ASCII)
_SUFFIXES = ("", "K", "M", "G", "T")
_EXAMPLES = "e.g. total_size=16M,64M,256M or total_size=4M..4G:x4"


@dataclass(frozen=True)
class Axis:
    """One swept parameter and its values, as text, in the order given."""

    key: str
    values: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.key} = {', '.join(self.values)}"


def parse_axis(text: str, what: str = "--sweep") -> Axis:
    """``KEY=…`` as an :class:`Axis`; a key that is no name, an empty list or a range that
    does not parse is refused, naming ``what``."""
    key, sep, rest = text.partition("=")
    key = key.strip()
    if not sep or not _KEY.fullmatch(key):
        raise UsageError(f"{what} {text!r} is not KEY=VALUES", hint=_EXAMPLES)
    items = [item.strip() for item in rest.split(",")]
    if not rest.strip():
        raise UsageError(f"{what} {text!r} gives {key} no values", hint=_EXAMPLES)
    if any(not item for item in items):
        raise UsageError(
            f"{what} {text!r} has an empty value in its list", hint="Separate values by one comma"
        )
    values: list[str] = []
    for item in items:
        values += _range(item, what, key) if ".." in item else [item]
        if len(values) > MAX_SWEEP_RUNS:
            raise too_many(f"{what} {key}", len(values), exact=False)
    return Axis(key, tuple(values))


def axis_of(key: str, values: object, what: str) -> Axis:
    """An axis from a study file: ``key = [V1, V2, …]`` (strings or numbers, each one value)
    or ``key = "A..B:xF"`` (a range, or a list, read as ``--sweep`` reads it)."""
    if isinstance(values, str):
        return parse_axis(f"{key}={values}", what)
    if not isinstance(values, list):
        raise UsageError(
            f"{what}: {key} must be a list of values or a range string, not"
            f" {type(values).__name__} ({values!r})",
            hint=f'e.g. {key} = ["16M", "64M"] or {key} = "4M..4G:x4"',
        )
    if not values:
        raise UsageError(f"{what}: {key} is an empty list", hint=f'e.g. {key} = ["16M", "64M"]')
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, str | int | float)]
    if bad:
        raise UsageError(
            f"{what}: {key} holds {bad[0]!r}, which is not a string or a number",
            hint=f'e.g. {key} = ["16M", "64M"]',
        )
    if not _KEY.fullmatch(key):
        raise UsageError(f"{what}: {key!r} is not a parameter name", hint="e.g. total_size = […]")
    texts = tuple(str(v).strip() for v in values)
    if not all(texts):
        raise UsageError(f"{what}: {key} holds an empty value", hint=f'e.g. {key} = ["16M", "64M"]')
    if any("," in t for t in texts):  # `lab run --sweep` could not be given it
        raise UsageError(f"{what}: {key} holds a value with a comma", hint="Give one value each")
    if len(texts) > MAX_SWEEP_RUNS:
        raise too_many(f"{what} {key}", len(texts))
    return Axis(key, texts)


def too_many(what: str, count: int, exact: bool = True) -> UsageError:
    said = f"{count}" if exact else f"more than {MAX_SWEEP_RUNS}"
    return UsageError(
        f"{what} makes {said} runs; a sweep makes at most {MAX_SWEEP_RUNS}",
        hint="Sweep fewer values (a larger factor in A..B:xF, a larger step in A..B:+S), or"
        " split the sweep into studies",
    )


def check_axes(axes: Sequence[Axis], what: str = "--sweep") -> None:
    """Refuse a key swept twice, a value given twice (the same run twice) and a sweep of
    more than :data:`MAX_SWEEP_RUNS` runs."""
    keys = [a.key for a in axes]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise UsageError(f"{what} sweeps {twice[0]} twice", hint="Give each key's values once")
    for axis in axes:
        seen: dict[object, str] = {}
        for value in axis.values:
            same = magnitude(value)
            found = seen.get(value if same is None else same)
            if found is not None:
                raise UsageError(
                    f"{what} {axis.key}: {value} is {found} again",
                    hint="Give each value once: the same value twice would be the same run",
                )
            seen[value if same is None else same] = value
    count = math.prod(len(a.values) for a in axes)
    if count > MAX_SWEEP_RUNS:
        listed = " × ".join(f"{len(a.values)} {a.key}" for a in axes)
        raise too_many(f"{what} ({listed})", count)


def points(axes: Sequence[Axis]) -> list[tuple[tuple[str, str], ...]]:
    """Every point of the axes' cartesian product as ((key, value), …), the first axis
    varying slowest, each axis's values in the order given."""
    return [
        tuple(zip((a.key for a in axes), values, strict=True))
        for values in itertools.product(*(a.values for a in axes))
    ]


def label(point: Sequence[tuple[str, object]]) -> str:
    """``total_size=16M`` (``k=v, k=v`` for several keys)."""
    return ", ".join(f"{key}={value}" for key, value in point)


def magnitude(value: object) -> float | None:
    """A value's size as a number, for ordering and plotting: a number as it is, a size
    with its suffix multiplied out (``64M`` is 64·1024²); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    match = _NUMBER.fullmatch(str(value).strip())
    if not match:
        return None
    return float(match.group(1)) * 1024.0 ** _SUFFIXES.index(match.group(2).upper())


def is_size(value: object) -> bool:
    """Whether ``value`` is written as a size with a suffix (``64M``)."""
    match = _NUMBER.fullmatch(str(value).strip())
    return bool(match and match.group(2))


# -- ranges ------------------------------------------------------------------------------


def _range(item: str, what: str, key: str) -> list[str]:
    match = _RANGE.fullmatch(item)
    shown = f"{what} {key}={item}"
    if not match:
        raise UsageError(
            f"cannot read the range {shown}",
            hint="Write A..B:xF for A, A·F, … up to B, or A..B:+S for A, A+S, … up to B,"
            " e.g. 4M..4G:x4 or 1..8:+1",
        )
    low, high = _end(match["a"], shown), _end(match["b"], shown)
    if low[1] != high[1]:
        raise UsageError(
            f"the range {shown} mixes a size and a plain number",
            hint="Give both ends with a size suffix (K, M, G, T), or neither",
        )
    sized = low[1]
    start, stop = low[0], high[0]
    if start > stop:
        raise UsageError(f"the range {shown} runs backwards", hint="Write the smaller end first")
    if match["op"] == "x":
        factor = _number(match["step"], shown, "factor")
        if factor <= 1:
            raise UsageError(
                f"the range {shown}: factor {match['step']} must be above 1",
                hint="e.g. x2 or x4",
            )
        if start <= 0:
            raise UsageError(
                f"the geometric range {shown} must start above 0", hint="e.g. 1K..1G:x4"
            )
        values = _steps(start, stop, lambda v: v * factor)
    else:
        step, step_sized = _end(match["step"], shown)
        if step_sized != sized and step_sized:
            raise UsageError(
                f"the range {shown}: a step with a size suffix needs ends with one too",
                hint="e.g. 4M..64M:+4M",
            )
        if step <= 0:
            raise UsageError(f"the range {shown}: step {match['step']} must be above 0")
        values = _steps(start, stop, lambda v: v + step)
    return [_write(v, sized) for v in values]


def _steps(start: Decimal, stop: Decimal, nxt: Callable[[Decimal], Decimal]) -> Iterator[Decimal]:
    """start, nxt(start), … while at most stop, in decimal arithmetic (0.1 + 0.2 is 0.3, so a
    step cannot fall just short of the end); stops once past the sweep's bound."""
    value, made = start, 0
    while value <= stop and made <= MAX_SWEEP_RUNS:
        yield value
        made += 1
        value = nxt(value)


def _end(text: str, shown: str) -> tuple[Decimal, bool]:
    """A range's end or step in bare units, and whether it carried a size suffix."""
    match = _NUMBER.fullmatch(text.strip())
    if not match:
        raise UsageError(
            f"cannot read {text.strip()!r} in the range {shown}",
            hint="Write a number, or a size such as 4M",
        )
    power = _SUFFIXES.index(match.group(2).upper())
    return Decimal(match.group(1)) * 1024**power, bool(match.group(2))


def _number(text: str, shown: str, what: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise UsageError(f"cannot read the {what} {text!r} in the range {shown}") from None
    if not value.is_finite():
        raise UsageError(f"the {what} {text!r} in the range {shown} is not a number")
    return value


def _write(value: Decimal, sized: bool) -> str:
    """A range's value as text: a size with the largest suffix that divides it exactly (a
    size that is no whole number of units is rounded to one), else the number as it is."""
    if sized:
        units = int(value.to_integral_value())
        for power in range(len(_SUFFIXES) - 1, 0, -1):
            if units % 1024**power == 0:
                return f"{units // 1024**power}{_SUFFIXES[power]}"
        return str(units)
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")
