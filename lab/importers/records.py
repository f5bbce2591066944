"""What the readers produce: samples with their line, and the lines they could not read."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from lab.store import Direction

NO_UNITS: Mapping[str, str] = MappingProxyType({})  # what a file that gives none has
NO_DIRECTIONS: Mapping[str, Direction] = MappingProxyType({})


class Attempt(NamedTuple):
    """What the row of a sample that ``lab export`` wrote (``ok`` 1) says of its successful
    attempt, restored into its iteration's row: its number, end, times, exit status and
    source (None: left as an import leaves it, the source then the input's file:line). The
    order is the iteration table's, as ``Bulk.insert_iterations`` takes them."""

    number: int
    ended: float | None
    wall: float | None
    user: float | None
    sys: float | None
    exit_status: int | None
    source: str | None


class Sample(NamedTuple):
    """One run read from a file: its metrics and whatever context the file gave.

    Fields left ``None`` are filled from the command line (``--variant``, ``--workload`` ...).
    A tuple rather than a frozen dataclass: a large import makes millions, and a tuple is made
    four times faster.
    """

    line: int
    metrics: dict[str, float]
    variant: str | None = None
    workload: str | None = None
    guest: str | None = None
    host: str | None = None
    study: str | None = None
    iteration: int | None = None
    started: float | None = None
    units: Mapping[str, str] = NO_UNITS
    directions: Mapping[str, Direction] = NO_DIRECTIONS
    run: str | None = None  # the run's key, as ``lab export`` writes it
    params: str | None = None  # the run's parameters: a JSON object, as ``lab export`` writes it
    boot: str | None = None  # what names the boot the iteration ran in
    placement: str | None = None  # the CPU placement it ran in: "own" or "swapped"
    cpus: str | None = None  # the host CPU of each vCPU in that placement ("3,4")
    schedule: str | None = None  # the run's schedule ("sync", "alternate", "concurrent")
    attempt: Attempt | None = None  # lab export's row of a successful attempt: its fields


class Context(NamedTuple):
    """What the rows of a table that name the same metric of the same group share: a reader
    makes one for each spelling it meets and hands it with every such row, so that whoever
    stores the rows checks it once, not once a row. ``None`` is what the file leaves empty.
    The boot and the CPU placement are part of it: each spans many iterations, so a table
    has few of them."""

    variant: str | None
    workload: str | None
    guest: str | None
    host: str | None
    study: str | None
    metric: str
    unit: str | None
    direction: Direction | None
    run: str | None = None
    params: str | None = None
    boot: str | None = None
    placement: str | None = None
    cpus: str | None = None
    schedule: str | None = None

    def sample(
        self, line: int, value: float, iteration: int | None, started: float | None,
        attempt: Attempt | None = None,
    ) -> Sample:  # fmt: skip
        """The row as a :class:`Sample` of one metric."""
        metric, unit, direction = self.metric, self.unit, self.direction
        return Sample(
            line, {metric: value}, *self[:5], iteration, started,
            {metric: unit} if unit else NO_UNITS,
            {metric: direction} if direction else NO_DIRECTIONS, *self[8:], attempt,
        )  # fmt: skip


# One row of a table, one sample: (line, context, value, iteration, started, attempt). A plain
# tuple: a large import makes millions, and a tuple that Python builds itself costs a call
# less. The attempt is None but in lab export's rows of a successful attempt (ok 1).
Row = tuple[int, Context, float, int | None, float | None, Attempt | None]


@dataclass(frozen=True)
class Rows:
    """Rows of a table that follow each other, each one sample, none of them malformed."""

    rows: list[Row]

    def samples(self) -> Iterator[Sample]:
        for line, context, value, iteration, started, attempt in self.rows:
            yield context.sample(line, value, iteration, started, attempt)


class Failed(NamedTuple):
    """A failed attempt, as ``lab export`` writes it (``ok`` 0, no metric, no value): what the
    store's iteration table holds of it, and the group it belongs to (as a Sample's)."""

    line: int
    variant: str
    workload: str
    guest: str | None
    host: str | None
    study: str | None
    iteration: int
    attempt: int
    started: float | None
    ended: float | None
    wall: float | None
    user: float | None
    sys: float | None
    exit_status: int | None
    boot: str | None
    placement: str | None
    cpus: str | None
    error: str | None  # the iteration table's output_tail
    source: str | None
    run: str | None = None
    params: str | None = None
    schedule: str | None = None

    def sample(self) -> Sample:
        """Its group as a Sample with no metric, for whoever routes samples by their group."""
        return Sample(
            self.line, {}, self.variant, self.workload, self.guest, self.host, self.study,
            self.iteration, self.started, run=self.run, params=self.params,
            schedule=self.schedule,
        )  # fmt: skip


@dataclass(frozen=True)
class BadLine:
    line: int
    message: str


@dataclass(frozen=True)
class Environment:
    """One of ``lab export``'s environment lines: a host's or guest's facts at a start of the
    run keyed ``run`` (stored once the input's samples have made its runs)."""

    line: int
    run: str
    scope: str  # "host" or "guest"
    name: str
    facts: str  # a JSON object, as stored
    recorded: float | None


@dataclass(frozen=True)
class StudyDesign:
    """One of ``lab export``'s design lines: the design a factorial study ran with (stored
    once the input's samples have made the study; lab.store.designs)."""

    line: int
    study: str
    design: dict[str, Any]


# what a reader yields, in the order of the lines
Item = Sample | Rows | BadLine | Environment | Failed | StudyDesign


@dataclass(frozen=True)
class Parsed:
    """A whole text read: the samples and the malformed lines, each with its line number."""

    format: str
    samples: list[Sample]
    bad: list[BadLine]
    failed: list[Failed] = field(default_factory=list)


def collect(fmt: str, items: Iterable[Item]) -> Parsed:
    """A reader's items of a small text, kept: for tests and tables, not for a large input."""
    parsed = Parsed(fmt, [], [])
    for item in items:
        if isinstance(item, BadLine):
            parsed.bad.append(item)
        elif isinstance(item, Rows):
            parsed.samples.extend(item.samples())
        elif isinstance(item, Sample):
            parsed.samples.append(item)
        elif isinstance(item, Failed):
            parsed.failed.append(item)
    return parsed


# Units and directions of the metrics the tool parsers return, by name.
_KNOWN: tuple[tuple[re.Pattern[str], str, Direction], ...] = (
    (re.compile(r"_bits_per_s$"), "bit/s", "higher"),
    (re.compile(r"_mib_s$"), "MiB/s", "higher"),
    (re.compile(r"_per_s$"), "1/s", "higher"),
    (re.compile(r"_ms$"), "ms", "lower"),
    (re.compile(r"_s$"), "s", "lower"),
    (re.compile(r"^retransmits$"), "", "lower"),
    (re.compile(r"^(operations|events)$"), "", "higher"),
    (re.compile(r"^transferred_mib$"), "MiB", "higher"),
)

_LOWER_UNITS = {"s", "sec", "secs", "seconds", "ms", "us", "µs", "ns", "min", "h", "cycles"}
_LOWER_WORDS = re.compile(r"time|latency|duration|elapsed|wall|real|user|sys|wait|cycles|miss")
_HIGHER_WORDS = re.compile(r"throughput|bandwidth|rate|ops|iops|bits|bytes|mib|gib|score|per")


def known_unit(metric: str) -> str | None:
    for pattern, unit, _ in _KNOWN:
        if pattern.search(metric):
            return unit
    return None


def infer_direction(metric: str, unit: str) -> Direction | None:
    """Which way is better, from the unit or the metric's name; None when it cannot tell."""
    for pattern, _, direction in _KNOWN:
        if pattern.search(metric):
            return direction
    unit_l = unit.strip().lower()
    if unit_l in _LOWER_UNITS:
        return "lower"
    if "/s" in unit_l or "/sec" in unit_l or unit_l.startswith("per"):
        return "higher"
    name = metric.lower()
    if _LOWER_WORDS.search(name):
        return "lower"
    if _HIGHER_WORDS.search(name):
        return "higher"
    return None
