"""Read results of any supported format and store them as they are read: everything, or nothing.

Where the samples go: study ``--study`` (default ``imported``), a run keyed
``STUDY/import/WORKLOAD``, and one guest per variant (named after it unless the file or
``--guest`` names one). Iterations are the file's own when it has an iteration column, else
numbered in file order after those already stored. Each iteration's source is
``/absolute/path:line`` (``stdin:line`` for standard input). What makes an input the same as
one imported before is its bytes (:mod:`lab.importers.identity`): the same bytes again are a
no-op, from any file or standard input; a file that starts with the bytes imported from it
before has only what was appended since stored; a file rewritten in place is read as new.
Each input is read inside a savepoint of its own, so that the same bytes found at its end
leave nothing behind.

The failed attempts of a CSV or JSONL that ``lab export`` wrote (rows with ``ok`` 0) are
stored once the input's samples are, each with its own iteration, attempt, source and the
rest (``Bulk.insert_failed``); an attempt the store holds is left as it was. Its samples'
rows (``ok`` 1) give their successful attempt's number, end, times, exit status and source,
which its iteration's row is made with (:class:`lab.importers.records.Attempt`; a source
the row leaves empty is the input's file:line, as for any other file).

Every input is read line by line (:mod:`lab.importers.inputs`) and its samples are stored
:data:`BATCH` at a time, all inputs inside one transaction (``Store.bulk``): memory holds a
batch, not a file, and an import that fails, or is killed, leaves the store as it was.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

from lab.core.errors import UsageError
from lab.importers import foreign
from lab.importers.appended import (
    iperf3_json_samples,
    iperf3_text_samples,
    sysbench_samples,
    time_samples,
)
from lab.importers.batch import Batch, Group, Late, Route, Target, merge_staged
from lab.importers.identity import Identities, Past, Seen, fingerprint
from lab.importers.inputs import Input, open_input
from lab.importers.jsonl import jsonl_samples
from lab.importers.limits import (
    MAX_NAME,
    name_problem,
    shown,
    time_problem,
    value_problem,
)
from lab.importers.made import Lines
from lab.importers.malformed import Malformed, MalformedInputError
from lab.importers.records import (
    BadLine,
    Context,
    Environment,
    Failed,
    Item,
    Row,
    Rows,
    Sample,
    StudyDesign,
    infer_direction,
    known_unit,
)
from lab.importers.rowfields import Defaults
from lab.importers.tabular import csv_samples
from lab.store import Direction, MetricInfo, Store
from lab.store.bulk import Bulk, FailedRow, Mark
from lab.store.records import is_evidence

__all__ = ["ImportOptions", "ImportSummary", "MalformedInputError", "detect_format", "import_file"]

FORMATS = ("auto", "csv", "jsonl", "time", "sysbench", "iperf3", "iperf3-json", *foreign.FORMATS)
RAW_WORKLOAD = {
    "time": "time", "sysbench": "sysbench-memory", "iperf3": "iperf3", "iperf3-json": "iperf3",
}  # fmt: skip
DEFAULT_STUDY = "imported"
NO_PAST = Past(0, False)  # an input of which nothing was read before
BATCH = 20_000  # samples stored at a time: a few MiB of memory, few enough round trips
# lines kept for the sources of iterations an earlier batch made (16 bytes each) before they
# are written: an iteration's source is rewritten once per this many, not once per line
LINES_HELD = 2_000_000


@dataclass(frozen=True)
class ImportOptions:
    format: str = "auto"
    study: str | None = None
    variant: str | None = None
    workload: str | None = None
    guest: str | None = None
    host: str | None = None
    unit: str | None = None
    direction: Direction | None = None
    skip_bad: bool = False


@dataclass
class ImportSummary:
    path: Path
    format: str
    read: int = 0  # samples read from the file
    stored: int = 0  # new iterations stored
    already: int = 0  # samples whose file:line is already in the store (skipped)
    duplicates: int = 0  # iterations whose number was already stored (left as they were)
    failed: int = 0  # failed attempts stored (lab export's rows with ok 0)
    failed_read: int = 0  # failed attempts read from the file
    bad: list[BadLine] = field(default_factory=list)  # the first malformed lines skipped
    bad_count: int = 0  # every malformed line skipped
    groups: dict[tuple[str, str, str, str], int] = field(default_factory=dict)
    same: Seen | None = None  # the import of the same bytes: this one stored nothing


def detect_format(path: Path, text: str) -> str:
    """The format of a results file, from its name and then its first lines."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    lines = [line for line in text.splitlines() if line.strip()]
    first = lines[0].strip() if lines else ""
    if first.startswith("{"):
        if first.endswith("}") and '"value"' in first:
            return "jsonl"
        return foreign.json_format(text) or _not_read(path, "a JSON document", first)
    if foreign.is_gnu_time(first):
        return "gnu-time"
    if first.startswith("sysbench "):
        return "sysbench"
    if first.startswith("Connecting to host ") or "iperf Done." in text:
        return "iperf3"
    if first.split()[:1] in (["real"], ["user"], ["sys"]):
        return "time"
    if "," in first and "value" in first.split(","):
        return "csv"
    return _not_read(path, "a file", first)


def _not_read(path: Path, what: str, first: str) -> NoReturn:
    raise UsageError(
        f"{path} is {what} in no format lab reads (its first line {shown(first, 40)})",
        hint=f"Pass --format if it is one of {', '.join(FORMATS[1:])}; else convert it to CSV"
        " or JSONL (lab import --help lists the formats and columns)",
    )


@dataclass(frozen=True)
class Planned:
    """An input opened, its format known: what can be told before the store is opened."""

    input: Input
    format: str


def plan(names: list[str], options: ImportOptions, stdin: BinaryIO | None = None) -> list[Planned]:
    """Open every input and tell its format from its start, so that a missing file, a folder, a
    binary file or a raw format without --variant is refused before anything is stored."""
    for option in ("variant", "workload", "guest", "host", "study", "unit"):
        text = getattr(options, option)
        problem = None if text is None else name_problem(option, text)
        if problem is not None:
            raise UsageError(
                f"--{option}: {problem}",
                hint=f"Give a name of at most {MAX_NAME} characters, none a control character",
            )
    opened: list[Input] = []
    try:
        planned = []
        for name in names:
            opened.append(open_input(name, stdin))
            planned.append(Planned(opened[-1], _format(opened[-1], options)))
        return planned
    except BaseException:
        for source in opened:
            source.close()
        raise


def _format(source: Input, options: ImportOptions) -> str:
    fmt = options.format
    if fmt == "auto":
        fmt = detect_format(source.path, source.head())
    if fmt not in FORMATS[1:]:
        raise UsageError(
            f"unknown format {shown(fmt)}", hint=f"Known formats: {', '.join(FORMATS)}"
        )
    if (fmt in RAW_WORKLOAD or fmt in foreign.NEEDS_VARIANT) and not options.variant:
        raise UsageError(
            f"{source.name} holds raw {fmt} output, which does not say which variant made it",
            hint="Pass --variant V (and --workload W to name the workload)",
        )
    source.head()  # a binary start is refused now, before the store is opened
    return fmt


def samples(planned: Planned, options: ImportOptions, malformed: Malformed) -> Iterator[Item]:
    """The input's samples and malformed lines, in the order of its lines, as they are read."""
    defaults: Defaults = {
        "variant": options.variant, "workload": options.workload, "guest": options.guest,
        "host": options.host, "study": options.study, "unit": options.unit,
        "direction": options.direction,
    }  # fmt: skip
    fmt = planned.format
    if fmt == "csv":
        return csv_samples(planned.input.blocks(malformed.too_long), planned.input.name, defaults)
    lines = planned.input.lines(malformed.too_long)
    if fmt in foreign.FORMATS:
        return foreign.samples(fmt, lines, options.workload)
    if fmt == "jsonl":
        return jsonl_samples(lines, defaults)
    raw = {"time": time_samples, "sysbench": sysbench_samples, "iperf3": iperf3_text_samples,
           "iperf3-json": iperf3_json_samples}  # fmt: skip
    return raw[fmt](lines)


def _count(summary: ImportSummary, made: Mapping[Target, int], kept: int) -> None:
    """Add what a batch stored to the summary."""
    for target, count in made.items():
        study, workload, variant, guest = target.group[:4]
        key = (study, workload, variant, guest)
        summary.groups[key] = summary.groups.get(key, 0) + count
        summary.stored += count
    summary.duplicates += kept


class _Import:
    """One `lab import`: its options, and the targets its inputs share."""

    def __init__(self, store: Store, bulk: Bulk, options: ImportOptions) -> None:
        self.store = store
        self.bulk = bulk
        self.options = options
        self.targets: dict[Group, Target] = {}
        self.by_ids: dict[tuple[int, int], Target] = {}
        self.by_run: dict[int, Target] = {}  # the first target of each run

    def group(self, sample: Sample, fmt: str) -> Group:
        options = self.options
        variant = sample.variant or options.variant or ""
        return (
            sample.study or options.study or DEFAULT_STUDY,
            sample.workload or options.workload or RAW_WORKLOAD.get(fmt, fmt),
            variant,
            sample.guest or options.guest or variant,
            sample.host or options.host or "local",
            sample.run,
            sample.params,
            sample.schedule,
        )

    def target(self, group: Group, summary: ImportSummary) -> Target:
        target = self.targets.get(group)
        if target is None:
            target = self.targets[group] = Target(self.store, group)
            self.by_ids[(target.run_id, target.guest_id)] = target
            first = self.by_run.setdefault(target.run_id, target)
            if first is not target:
                target.share(first)
        summary.groups.setdefault(group[:4], 0)
        return target

    def input(self, planned: Planned) -> ImportSummary:
        """Store one input's samples, in a savepoint of the bulk write's transaction: when
        its bytes turn out to be those of an import the store holds, it is rolled back."""
        options = self.options
        fields = {
            "format": planned.format, "study": options.study, "variant": options.variant,
            "workload": options.workload, "guest": options.guest, "host": options.host,
            "unit": options.unit, "direction": options.direction,
        }  # fmt: skip
        kept_table = self.bulk._kept_table
        made = fingerprint(fields)  # an import's identity: its bytes and these options
        try:
            with self.store.transaction() as conn:
                identities = Identities(conn)
                reading = self.read(planned, identities.appended(planned.input, made))
                source = planned.input
                if source.changed():
                    raise UsageError(
                        f"{source.name} changed while it was read (its start is not what it"
                        " was a moment before); nothing was stored",
                        hint="Import it again once nothing writes to it but appends",
                    )
                summary = reading.summary
                same = identities.seen(source.digest(), made)
                if same is not None:
                    raise _Same(summary, same)
                identities.record(source, made, reading.run_ids())
                return summary
        except _Same as same:
            # rolled back: the runs and guests it made, and what the bulk write made of them
            self.targets.clear()
            self.by_ids.clear()
            self.by_run.clear()
            self.bulk._kept_table = kept_table
            with self.store.transaction() as conn:  # what is appended to it later is new
                Identities(conn).remember_path(planned.input, made, same.seen.runs)
            summary = same.summary
            summary.stored = 0
            summary.groups = {}
            summary.same = same.seen
            return summary

    def read(self, planned: Planned, appended: Past | None = NO_PAST) -> _Reading:
        """Read one input and store its samples (inside the bulk write's transaction); what
        of it was ``appended`` before is skipped (None: any line the store holds)."""
        reading = _Reading(self, planned, appended)
        for item in samples(planned, self.options, reading.malformed):
            if isinstance(item, Rows):
                reading.rows(item.rows)
            elif isinstance(item, BadLine):
                reading.malformed.add(item)
            elif isinstance(item, Environment):
                reading.environments.append(item)
            elif isinstance(item, StudyDesign):
                reading.designs.append(item)
            elif isinstance(item, Failed):
                reading.failure(item)
            else:
                reading.sample(item)
        reading.end()
        return reading

    def metric(
        self,
        key: tuple[str, str | None, str | None],
        infos: dict[str, MetricInfo],
        source: Input,
        line: int,
    ) -> MetricInfo | str:
        """A metric's unit and direction as a sample gives them (else the options', else
        what its name says); a unit or direction other than the input's first for that metric
        is the reason the sample is malformed."""
        name, given_unit, given_direction = key
        options = self.options
        unit = given_unit or options.unit or known_unit(name) or ""
        if is_evidence(name):  # what backed the memory: no direction, as lab run stores it
            direction = None
        else:
            direction = given_direction or options.direction or infer_direction(name, unit)
        if direction is None and not is_evidence(name):
            raise UsageError(
                f"{source.name}:{line}: cannot tell whether a lower or a higher"
                f" {shown(name)} is better",
                hint="Pass --direction lower (times) or --direction higher (throughput),"
                " or add a direction column",
            )
        info = MetricInfo(name, unit, direction)  # type: ignore[arg-type]
        earlier = infos.setdefault(name, info)
        if earlier != info:
            return (
                f"metric {shown(name)} has unit {shown(unit)} ({direction}), earlier"
                f" {shown(earlier.unit)} ({earlier.direction})"
            )
        return info


def _numbers_problem(sample: Sample) -> str | None:
    """Why a sample's values or start cannot be stored (limits); None if they can. A table's
    rows were checked as they were read; a raw tool's output is checked here."""
    for name, value in sample.metrics.items():
        problem = value_problem(value)
        if problem is not None:
            return f"{name}: {problem}"
    return None if sample.started is None else time_problem(sample.started)


class _Same(Exception):
    """An input whose bytes the store holds already: its savepoint is rolled back."""

    def __init__(self, summary: ImportSummary, seen: Seen) -> None:
        super().__init__()
        self.summary = summary
        self.seen = seen


def _first_lines(bits: bytearray | None, count: int) -> bytearray | None:
    """The bitmap of imported lines cut to lines 1 to ``count`` (None when none are left)."""
    if bits is None or count <= 0:
        return None
    cut = bits[: (count >> 3) + 1]
    if len(cut) > count >> 3:
        cut[count >> 3] &= (1 << ((count & 7) + 1)) - 1
    return cut if any(cut) else None


def _mark(fields: tuple[str | None, ...]) -> Mark | None:
    """An iteration's boot, placement and cpus as the input gives them; None when it gives
    none of them."""
    boot, placement, cpus = fields
    if boot is None and placement is None:
        return None
    return (boot, placement, cpus)


class _Lane:
    """What the rows of one context get from it, worked out at the first of them: their route,
    their metric, and why each is malformed (None when they are not)."""

    __slots__ = ("mark", "metric", "refused", "route")

    def __init__(
        self, route: Route, metric: str, refused: str | None, mark: Mark | None = None
    ) -> None:
        self.route = route
        self.metric = metric
        self.refused = refused
        self.mark = mark


class _Reading:
    """One input being stored: its summary, its malformed lines, its routes and its batch."""

    LANES = 4_096  # contexts remembered; past it they are forgotten, so memory stays bounded

    def __init__(self, run: _Import, planned: Planned, appended: Past | None = NO_PAST) -> None:
        self.run = run
        self.planned = planned
        self.appended = appended  # the first lines, read before (identity.Identities.appended)
        source = planned.input
        self.summary = ImportSummary(source.path, planned.format)
        self.malformed = Malformed(source.path, run.options.skip_bad)
        self.read = 0
        self.routes: dict[tuple[Any, ...], Route] = {}  # by the group as the file spells it
        self.by_group: dict[Group, Route] = {}
        self.infos: dict[str, MetricInfo] = {}  # each metric's first unit and direction
        self.checked: dict[tuple[str, str | None, str | None], MetricInfo | str] = {}
        self.lanes: dict[Context, _Lane] = {}
        self.batch = Batch(source.source)
        self.late = Late()  # samples of iterations an earlier batch made
        self.lines = Lines()  # their lines
        self.environments: list[Environment] = []  # stored at the end, once the runs are
        self.designs: list[StudyDesign] = []  # stored at the end, once the studies are
        # failed attempts by target: stored at the end, once the samples are (Bulk.insert_failed)
        self.failures: dict[Target, list[Failed]] = {}

    def sample(self, sample: Sample) -> None:
        self.read += 1
        line = sample.line
        problem = _numbers_problem(sample)
        if problem is not None:
            self.malformed.add(BadLine(line, problem))
            return
        route = self.route(sample)
        refused = self.refused(sample, route.target)
        if refused is not None:
            self.malformed.add(BadLine(line, refused))
            return
        if route.had(line):
            self.summary.already += 1
            return
        number = sample.iteration
        if number is None:
            number = route.next(next(iter(sample.metrics)))
        mark = _mark(sample[13:16])
        self.batch.add(route.target, number, line, sample.started, sample.metrics,
                       self.malformed, mark, sample.attempt)  # fmt: skip
        if self.batch.size >= BATCH:
            self.flush()

    def failure(self, failed: Failed) -> None:
        """A failed attempt, kept for :meth:`end`; its group's run and guest are made now."""
        self.summary.failed_read += 1
        target = self.route(failed.sample()).target
        self.failures.setdefault(target, []).append(failed)

    def rows(self, rows: list[Row]) -> None:
        """Rows of a table, each a sample of one metric, stored as :meth:`sample` stores a
        sample; what their context decides (route, metric, refusal) is looked up once."""
        self.read += len(rows)
        lanes, malformed, summary, batch = self.lanes, self.malformed, self.summary, self.batch
        for line, context, value, number, started, attempt in rows:
            lane = lanes.get(context)
            if lane is None:
                lane = self.lane(context, line)
            if lane.refused is not None:
                malformed.add(BadLine(line, lane.refused))
                continue
            route = lane.route
            if route.imported is not None and route.had(line):
                summary.already += 1
                continue
            if number is None:
                number = route.next(lane.metric)
            batch.add_one(
                route.target, number, line, started, lane.metric, value, malformed, lane.mark,
                attempt,
            )  # fmt: skip
            if batch.size >= BATCH:
                self.flush()
                batch = self.batch

    def lane(self, context: Context, line: int) -> _Lane:
        """The lane of a context, from its first row read as a sample."""
        if len(self.lanes) >= self.LANES:
            self.lanes.clear()
        sample = context.sample(line, 0.0, None, None)
        route = self.route(sample)
        lane = self.lanes[context] = _Lane(
            route, context.metric, self.refused(sample, route.target), _mark(context[10:13])
        )
        return lane

    def route(self, sample: Sample) -> Route:
        """The input's route to the sample's group: one per group, however the rows spell it
        (an empty guest column and one naming the variant share the numbering)."""
        # variant, workload, guest, host, study, run, params, schedule: as the file gives them
        raw = (*sample[2:7], sample.run, sample.params, sample.schedule)
        route = self.routes.get(raw)
        if route is None:
            group = self.run.group(sample, self.planned.format)
            route = self.by_group.get(group)
            if route is None:
                target = self.run.target(group, self.summary)
                source = self.planned.input.source
                past, imported = self.appended, None
                if past is not None and past.held:
                    imported = _first_lines(
                        bytearray(b"\xff" * ((past.lines >> 3) + 1)), past.lines
                    )
                elif past is None or past.lines:
                    imported = self.run.bulk.imported_lines(target.run_id, target.guest_id, source)
                    if past is not None:
                        imported = _first_lines(imported, past.lines)
                route = self.by_group[group] = Route(target, imported)
            self.routes[raw] = route
        return route

    def refused(self, sample: Sample, target: Target) -> str | None:
        """Why the sample is malformed (a metric's unit or direction that differs from the
        input's first); else None, once its metrics are declared for the target's run."""
        for name in sample.metrics:
            key = (name, sample.units.get(name), sample.directions.get(name))
            info = self.checked.get(key)
            if info is None:
                info = self.checked[key] = self.run.metric(
                    key, self.infos, self.planned.input, sample.line
                )
            if isinstance(info, str):
                return info
            if name not in target.declared:
                problem = target.declare(self.run.store, info)
                if problem is not None:
                    return problem
        return None

    def run_ids(self) -> list[int]:
        """The runs the input's samples went to."""
        return [route.target.run_id for route in self.by_group.values()]

    def flush(self, last: bool = False) -> None:
        """Store the batch; the late samples and their lines once enough are held, or at the
        ``last`` flush."""
        bulk = self.run.bulk
        _count(self.summary, self.batch.store(bulk, self.late), 0)
        self.batch = Batch(self.planned.input.source)
        if last or self.late.count >= self.late.HELD:
            self.late.store(bulk, self.malformed, self.lines)
        if last or self.lines.count >= LINES_HELD:
            bulk.join_lines(self.lines.updates())

    def end(self) -> ImportSummary:
        """Store what is left, and the summary; or the error of an input that failed."""
        self.flush(last=True)
        run = self.run
        _count(self.summary, *merge_staged(run.bulk, self.batch.source, self.malformed, run.by_ids))
        for target, failures in self.failures.items():
            rows: list[FailedRow] = [
                (*f[6:15], f.error, f.source, f.placement, f.cpus) for f in failures
            ]
            self.summary.failed += self.run.bulk.insert_failed(target.run_id, target.guest_id, rows)
            target.high = max(target.high, *(f.iteration for f in failures))
        for record in self.environments:
            if not self.run.bulk.add_environment(
                record.run, record.scope, record.name, record.facts, record.recorded
            ):
                why = f"environment of run {shown(record.run)}, which has no samples here"
                self.malformed.add(BadLine(record.line, why))
        for design in self.designs:
            if not self.run.bulk.add_design(design.study, design.design):
                why = f"design of study {shown(design.study)}, which has no samples here"
                self.malformed.add(BadLine(design.line, why))
        summary, malformed = self.summary, self.malformed
        summary.read = self.read
        malformed.check()
        if not self.read and not self.failures:
            raise UsageError(
                f"no samples found in {self.planned.input.name} (read as {self.planned.format})",
                hint="Check the file, or pass --format if it was detected wrongly",
            )
        summary.bad = sorted(malformed.listed, key=lambda b: b.line)
        summary.bad_count = malformed.count
        return summary


def import_inputs(
    store: Store, planned: list[Planned], options: ImportOptions
) -> list[ImportSummary]:
    """Store every input's samples in one transaction: all of them, or (on any error) none."""
    try:
        with _collector_paused(), store.bulk() as bulk:
            run = _Import(store, bulk, options)
            return [run.input(p) for p in planned]
    finally:
        for p in planned:
            p.input.close()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused for the import: it makes millions of objects (rows,
    floats, batches) that live a batch long, and the collector followed them again and again
    (2,000,000 rows: 11.4 s CPU paused, 12.8 not). The import makes no reference cycle a row,
    so memory does not grow meanwhile (a test counts what the collector finds after it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def import_file(store: Store, path: Path, options: ImportOptions) -> ImportSummary:
    """Import one file, in a transaction of its own."""
    (summary,) = import_inputs(store, plan([str(path)], options), options)
    return summary
