"""CSV and JSONL: one sample per row, with columns variant, workload, metric and value.

Optional columns: iteration, timestamp (epoch seconds or ISO 8601; ``started`` is the same),
unit, direction (lower or higher), guest, host, study, and those ``lab export`` writes of a
run: run (its key), params (its parameters, a JSON object), schedule, boot (any text naming
the boot an iteration ran in), placement (own or swapped: ``lab run --swap-every``) and cpus
(the host CPU of each vCPU in it, "3,4"). Each run of a file is kept apart, so an export
imports back as the same runs (a run the store holds keeps its own schedule). The other
columns ``lab export`` adds to a sample's row (attempt, ended, source, ok, exit_status, wall,
user, sys, error) are accepted and ignored.

A row whose ``ok`` is 0 is a failed attempt as ``lab export`` writes it: no metric and no
value, but its iteration and attempt (both required), start, end, source, boot, placement,
exit status, times and error, each stored as it was (:class:`Failed`).

:func:`csv_samples` (blocks of lines) and :func:`jsonl_samples` (lines) read as the input comes
and yield each row's sample (a CSV's as Rows, several at a time) or malformed line in turn;
:func:`read_csv` and :func:`read_jsonl` read a whole text.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from itertools import islice, repeat
from math import isfinite
from operator import itemgetter
from typing import Any, cast

from lab.core.errors import UsageError
from lab.importers.limits import (
    END_TIME,
    FIRST_TIME,
    MAX_ITERATION,
    MAX_VALUE,
    iteration_problem,
    listed,
    name_problem,
    one_line,
    shown,
    time_problem,
    value_problem,
)
from lab.importers.records import (
    NO_DIRECTIONS,
    NO_UNITS,
    BadLine,
    Context,
    Environment,
    Failed,
    Item,
    Parsed,
    Row,
    Rows,
    Sample,
    collect,
)

REQUIRED = ("variant", "workload", "metric", "value")
OPTIONAL = (
    "iteration", "timestamp", "started", "unit", "direction", "guest", "host", "study", "run",
    "params", "boot", "placement", "cpus", "schedule",
)  # fmt: skip
IGNORED = ("attempt", "ended", "source")
FAILURE = ("ok", "exit_status", "wall", "user", "sys", "error")  # of a failed attempt's row
KNOWN = REQUIRED + OPTIONAL + IGNORED + FAILURE
FAILED = "0"  # the ok of a failed attempt's row
VERBATIM = ("error", "source")  # a failed attempt's texts, kept with their blanks
NAMES = (
    "variant", "workload", "metric", "guest", "host", "study", "unit", "run", "boot", "cpus",
    "schedule",
)  # fmt: skip
PLACEMENTS = ("own", "swapped")
# Sample's and Context's last fields, in this order
RUN_COLUMNS = ("run", "params", "boot", "placement", "cpus", "schedule")
MAX_PARAMS = 65_536  # characters of a run's parameters

Defaults = Mapping[str, str | None]  # column -> value from the command line


class RowError(ValueError):
    """One row cannot be read; the message says which column and why."""


def _timestamp(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise RowError(f"timestamp {shown(text)} is neither epoch seconds nor ISO 8601") from None


def _fields(defaults: Defaults) -> dict[str, str | None]:
    """A row's fields before its values: the command line's, else None."""
    return {key: defaults.get(key) for key in KNOWN}


def _number(fields: Mapping[str, str | None], key: str) -> float | None:
    text = fields[key]
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        raise RowError(f"{key} {shown(text)} is not a number") from None
    problem = value_problem(number)
    if problem is not None:
        raise RowError(f"{key}: {problem}")
    return number


def _whole(fields: Mapping[str, str | None], key: str) -> int | None:
    text = fields[key]
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise RowError(f"{key} {shown(text)} is not a whole number") from None


def _time(fields: Mapping[str, str | None], key: str) -> float | None:
    text = fields[key]
    if text is None:
        return None
    stamp = _timestamp(text)
    problem = time_problem(stamp)
    if problem is not None:
        raise RowError(problem)
    return stamp


def _failed(fields: Mapping[str, str | None], line: int) -> Failed:
    """A failed attempt from one row's fields (``ok`` 0): as :func:`_sample` reads a sample,
    with no metric and no value but an iteration and an attempt."""
    variant, workload = fields["variant"], fields["workload"]
    if not (variant and workload):
        missing = [key for key in ("variant", "workload") if not fields[key]]
        raise RowError(f"a failed attempt (ok 0) with no {', '.join(missing)}")
    if fields["metric"] is not None or fields["value"] is not None:
        raise RowError("a failed attempt (ok 0) has a metric or a value; it has no sample")
    problem = _names_problem(fields)
    if problem is not None:
        raise RowError(problem)
    iteration, attempt = _whole(fields, "iteration"), _whole(fields, "attempt")
    if iteration is None or attempt is None:
        raise RowError("a failed attempt (ok 0) with no iteration or no attempt")
    for number in (iteration, attempt):
        problem = iteration_problem(number)
        if problem is not None:
            raise RowError(problem)
    exit_status = _whole(fields, "exit_status")
    if exit_status is not None and not -(2**63) <= exit_status < 2**63:
        raise RowError(f"exit_status {exit_status} is out of range")
    return Failed(
        line, variant, workload, fields["guest"], fields["host"], fields["study"], iteration,
        attempt, _time(fields, "timestamp" if fields["timestamp"] else "started"),
        _time(fields, "ended"),
        _number(fields, "wall"), _number(fields, "user"), _number(fields, "sys"), exit_status,
        fields["boot"], fields["placement"], fields["cpus"], fields["error"], fields["source"],
        fields["run"], fields["params"], fields["schedule"],
    )  # fmt: skip


def _sample(fields: Mapping[str, str | None], line: int) -> Sample:
    """A Sample from one row's fields (stripped, non-empty text, or the default)."""
    variant, workload, metric, text = (
        fields["variant"], fields["workload"], fields["metric"], fields["value"],
    )  # fmt: skip
    if not (variant and workload and metric and text):
        missing = [key for key in REQUIRED if not fields[key]]
        raise RowError(f"no {', '.join(missing)}")
    problem = _names_problem(fields)
    if problem is not None:
        raise RowError(problem)
    try:
        value = float(text)
    except ValueError:
        raise RowError(f"value {shown(text)} is not a number") from None
    problem = value_problem(value)
    if problem is not None:
        raise RowError(problem)
    iteration = None
    if fields["iteration"] is not None:
        try:
            iteration = int(fields["iteration"])
        except ValueError:
            raise RowError(
                f"iteration {shown(fields['iteration'])} is not a whole number"
            ) from None
        problem = iteration_problem(iteration)
        if problem is not None:
            raise RowError(problem)
    direction = fields["direction"]
    if direction is not None and direction not in ("lower", "higher"):
        raise RowError(f"direction {shown(direction)} is neither 'lower' nor 'higher'")
    stamp = fields["timestamp"] or fields["started"]
    started = _timestamp(stamp) if stamp else None
    if started is not None and (problem := time_problem(started)) is not None:
        raise RowError(problem)
    unit = fields["unit"]
    return Sample(
        line,
        {metric: value},
        variant,
        workload,
        fields["guest"],
        fields["host"],
        fields["study"],
        iteration,
        started,
        {metric: unit} if unit else NO_UNITS,
        {metric: "lower" if direction == "lower" else "higher"} if direction else NO_DIRECTIONS,
        *(fields[key] for key in RUN_COLUMNS),
    )


def _names_problem(fields: Mapping[str, str | None]) -> str | None:
    """Why a row's names (variant, metric ...) cannot be stored; None if they can."""
    for key in NAMES:
        text = fields[key]
        if text is not None:
            problem = name_problem(key, text)
            if problem is not None:
                return problem
    placement = fields["placement"]
    if placement is not None and placement not in PLACEMENTS:
        return f"placement {shown(placement)} is neither 'own' nor 'swapped'"
    if fields["cpus"] is not None and placement is None:
        return "cpus without a placement"
    params = fields["params"]
    return None if params is None else params_problem(params)


def params_problem(text: str) -> str | None:
    """Why ``text`` cannot be a run's parameters (a JSON object); None if it can."""
    if len(text) > MAX_PARAMS:
        return f"params {shown(text)} is longer than {MAX_PARAMS:,} characters"
    try:
        found = json.loads(text)
    except (ValueError, RecursionError):
        return f"params {shown(text)} is not JSON"
    if not isinstance(found, dict):
        return f"params {shown(text)} is not a JSON object"
    return None


def _row_sample(
    row: Mapping[str, Any], line: int, blank: Mapping[str, str | None]
) -> Sample | Failed:
    """A Sample (or a failed attempt) from one JSON row; ``blank`` holds the defaults of what
    it leaves empty."""
    fields = dict(blank)
    for key, value in row.items():
        if value is not None and key in fields:
            if key in VERBATIM and isinstance(value, str):
                fields[key] = value
                continue
            text = json.dumps(value) if isinstance(value, dict) else str(value).strip()
            if text:
                fields[key] = text
    return _failed(fields, line) if fields["ok"] == FAILED else _sample(fields, line)


def _check_columns(columns: list[str], where: str) -> None:
    seen: set[str] = set()
    for column in columns:
        if column in seen:  # which one counts? refused rather than guessed
            raise UsageError(
                f"{where}: the column {shown(column)} is named twice", hint="Name each column once"
            )
        seen.add(column)
    unknown = [c for c in columns if c not in KNOWN]
    if unknown:
        raise UsageError(
            f"{where}: unknown column(s) {listed(unknown)}",
            hint=f"Known columns: {', '.join(KNOWN)}",
        )


class _Columns:
    """Where a CSV header puts what varies from row to row (value, iteration, timestamp) and
    what rows repeat (the rest: the context), for reading a row without a dict of its fields,
    and a block of plain rows column by column (:meth:`block`).

    A row is read this way only when the outcome is sure to be :func:`_sample`'s: its width
    is the header's, its context was checked whole once (``contexts``), and its value,
    iteration and timestamp convert as they are (``float`` and ``int`` strip blanks as
    :func:`_sample` does); any other row, malformed or not, goes through :func:`_sample`,
    which says why.
    """

    CONTEXTS = 4_096  # contexts remembered; past it they are forgotten, so memory stays bounded

    def __init__(self, columns: list[str], blank: Mapping[str, str | None]) -> None:
        self.columns = columns
        self.blank = blank
        at = {name: i for i, name in enumerate(columns)}
        self.value = at.get("value")
        self.iteration = at.get("iteration")
        self.timestamp = at.get("timestamp")
        self.started = at.get("started")
        self.ok = at.get("ok")
        varying = ("value", "iteration", "timestamp", "started", *IGNORED, *FAILURE)
        self.context_at = [i for i, name in enumerate(columns) if name not in varying]
        # a column named twice: the last non-empty one counts, which only _sample knows
        self.usable = self.value is not None and len(at) == len(columns)
        self.contexts: dict[tuple[str, ...], Context | None] = {}
        self.width = len(columns)

        # a row's context columns, as a tuple made in C (itemgetter of one index gives the item)
        self.key: Callable[[list[str]], tuple[str, ...]] = (
            itemgetter(*self.context_at) if len(self.context_at) > 1 else self._key
        )

    def _key(self, row: list[str]) -> tuple[str, ...]:
        return tuple([row[i] for i in self.context_at])

    def context(self, key: tuple[str, ...]) -> Context | None:
        """The context of rows whose context columns hold ``key``; None when it is not
        complete or not valid (such rows are read by _sample, which says why)."""
        if len(self.contexts) >= self.CONTEXTS:
            self.contexts.clear()
        fields = dict(self.blank)
        for i, raw in zip(self.context_at, key, strict=True):
            text = raw.strip()
            if text:
                fields[self.columns[i]] = text
        variant, workload, metric, direction = (
            fields["variant"], fields["workload"], fields["metric"], fields["direction"],
        )  # fmt: skip
        found = None
        if (
            variant and workload and metric and direction in (None, "lower", "higher")
            and _names_problem(fields) is None
        ):  # fmt: skip
            found = Context(
                variant, workload, fields["guest"], fields["host"], fields["study"], metric,
                fields["unit"], direction,  # type: ignore[arg-type]
                *(fields[key] for key in RUN_COLUMNS),
            )  # fmt: skip
        self.contexts[key] = found
        return found

    def block(self, lines: list[str], first: int) -> list[Row] | None:
        """Lines ``first`` on, read as rows column by column (loops in C, not in Python);
        None when they are not all whole rows of known contexts, numbers and iterations
        (then each is read on its own)."""
        if not self.usable:
            return None
        columns = self.split(lines)
        if columns is None or (self.ok is not None and FAILED in columns[self.ok]):
            return None  # a failed attempt among them: row by row
        count = len(lines)
        keys: list[tuple[str, ...]] = (
            list(zip(*[columns[i] for i in self.context_at], strict=True))
            if self.context_at
            else [()] * count
        )
        contexts = list(map(self.contexts.get, keys))
        if None in contexts:
            for i, (key, context) in enumerate(zip(keys, contexts, strict=True)):
                if context is None and key not in self.contexts:
                    contexts[i] = self.context(key)
            if None in contexts:
                return None
        try:
            values = list(map(float, columns[self.value or 0]))
            numbers = None
            if self.iteration is not None:
                numbers = list(map(int, columns[self.iteration]))
            stamps = self.stamps(columns, count)
        except ValueError:
            return None  # an iteration left empty, or whatever _sample reads or refuses
        if not (
            all(map(isfinite, values)) and min(values) >= -MAX_VALUE and max(values) <= MAX_VALUE
        ):
            return None
        if numbers is not None and not (min(numbers) >= 1 and max(numbers) <= MAX_ITERATION):
            return None
        iterations: Iterable[int | None] = repeat(None) if numbers is None else numbers
        if stamps is None:
            return None
        known = cast(list[Context], contexts)  # none is None (above)
        lines_at = range(first, first + count)
        return list(zip(lines_at, known, values, iterations, stamps, strict=False))  # repeat()s

    def split(self, lines: list[str]) -> Sequence[Sequence[str]] | None:
        """Each column's fields in ``lines``, when every line is a whole row as wide as the
        header (else None). Lines without a quote and a carriage return but at their end
        are split at their commas; others are read by the csv module, strictly: a quoted
        field that goes on past the lines, or anything it would read otherwise than
        :func:`csv_samples` row by row, is an error there."""
        text = "".join(lines)
        count, width = len(lines), self.width
        if '"' in text or text.count("\r") != text.count("\r\n"):
            try:
                rows = list(csv.reader(lines, strict=True))
                columns = list(zip(*rows, strict=True)) if len(rows) == count else []
            except (csv.Error, ValueError):  # ValueError: rows of different widths
                return None
            return columns if len(columns) == width else None
        if (
            max(map(len, lines)) > csv.field_size_limit()
            or list(map(str.count, lines, repeat(","))).count(width - 1) != count
        ):
            return None
        fields = text.replace("\r\n", "\n").replace("\n", ",").split(",")
        if text.endswith("\n"):
            fields.pop()
        return [fields[i::width] for i in range(width)]

    def stamps(self, columns: Sequence[Sequence[str]], count: int) -> Iterable[float | None] | None:
        """The start of each of ``count`` rows, for :meth:`block`: None when two columns
        may give it."""
        if self.timestamp is not None and self.started is not None:
            return None  # _sample takes the first one that is not blank
        at = self.timestamp if self.started is None else self.started
        if at is None:
            return repeat(None)
        texts = columns[at]
        if texts.count("") == count:
            return repeat(None)
        stamps = list(map(float, texts))  # ValueError for a blank among others: row by row
        if all(map(isfinite, stamps)) and min(stamps) >= FIRST_TIME and max(stamps) < END_TIME:
            return stamps
        return None


_UNSEEN = Context("", "", None, None, None, "", None, None)  # a context not looked at yet


class _Lines:
    """The lines of a CSV input, from its blocks: handed to the csv module one by one, or
    taken as a piece of a block; ``count`` is how many were handed out or taken so far."""

    def __init__(self, blocks: Iterable[list[str]]) -> None:
        self.blocks = iter(blocks)
        self.block: list[str] = []
        self.at = 0  # in self.block: the first line not read
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        while True:
            if self.at < len(self.block):
                self.at += 1
                self.count += 1
                yield self.block[self.at - 1]
            elif not self.next_block():
                return

    def next_block(self) -> bool:
        block = next(self.blocks, None)
        if block is None:
            return False
        self.block, self.at = block, 0
        return True

    def piece(self, size: int) -> list[str]:
        """Up to ``size`` lines not read yet, all from one block (none at the end); they are
        read once :meth:`take` is told so, or by the csv module."""
        while self.at >= len(self.block):
            if not self.next_block():
                return []
        return self.block[self.at : self.at + size]

    def take(self, count: int) -> None:
        self.at += count
        self.count += count


def csv_samples(blocks: Iterable[list[str]], name: str, defaults: Defaults) -> Iterator[Item]:
    """Each row of a CSV text, read as blocks of lines come (``Input.blocks``): its samples,
    as Rows of those that follow each other, and its malformed rows, each a BadLine (of its
    last line).

    The lines are taken :data:`BLOCK` at a time and read column by column when they are
    plain rows (``_Columns.block``); else the csv module reads them row by row, and goes on
    into the next lines for a quoted field that does not end on its line.
    """
    lines = _Lines(blocks)
    reader = csv.reader(lines)
    try:
        header = next(reader, [])
    except csv.Error as err:
        raise UsageError(
            f"{name}:1: the header is not readable as CSV ({one_line(str(err))})",
            hint="The first line must name the columns, e.g. variant,workload,metric,value",
        ) from None
    columns = [c.strip() for c in header]
    _check_columns(columns, f"{name}:1")
    layout = _Columns(columns, _fields(defaults))
    while piece := lines.piece(BLOCK):
        rows = layout.block(piece, lines.count + 1)
        if rows is None:
            yield from _row_by_row(reader, lines, lines.count + len(piece), layout)
        else:
            lines.take(len(piece))
            yield Rows(rows)


BLOCK = 1_000  # lines read at a time


def in_blocks(lines: Iterable[str], size: int = BLOCK) -> Iterator[list[str]]:
    """Lines as blocks of ``size``, for :func:`csv_samples`."""
    source = iter(lines)
    while block := list(islice(source, size)):
        yield block


def _row_by_row(reader: Any, lines: _Lines, end: int, layout: _Columns) -> Iterator[Item]:
    """The rows of the lines up to line ``end``, each read by the csv module on its own (and
    the lines after, for a row that does not end there): as :func:`csv_samples` gives them."""
    columns, blank, width = layout.columns, layout.blank, layout.width
    usable, contexts, key = layout.usable, layout.contexts, layout.key
    value_at, iteration_at = layout.value or 0, layout.iteration
    ok_at = layout.ok
    timestamp_at, started_at = layout.timestamp, layout.started
    rows: list[Row] = []
    line = lines.count  # the last line of the last row read
    while lines.count < end:
        try:
            row = next(reader)
        except csv.Error as err:  # e.g. a field past the csv module's size limit
            if rows:
                yield Rows(rows)
                rows = []
            yield BadLine(line + 1, f"not readable as CSV ({err})")
            line = lines.count
            continue
        line = lines.count
        if usable and len(row) == width and (ok_at is None or row[ok_at].strip() != FAILED):
            raw = key(row)
            context = contexts.get(raw, _UNSEEN)
            if context is _UNSEEN:
                context = layout.context(raw)
            if context is not None:
                try:
                    value = float(row[value_at])
                    iteration = None
                    if iteration_at is not None and (text := row[iteration_at]):
                        iteration = int(text)
                    stamp = row[timestamp_at] if timestamp_at is not None else ""
                    if not stamp and started_at is not None:
                        stamp = row[started_at]
                    started = float(stamp) if stamp else None
                except ValueError:
                    pass  # _sample says why, or reads what float and int do not
                else:
                    if (
                        -MAX_VALUE <= value <= MAX_VALUE  # False for NaN
                        and (iteration is None or 0 < iteration <= MAX_ITERATION)
                        and (started is None or FIRST_TIME <= started < END_TIME)
                    ):
                        rows.append((line, context, value, iteration, started))
                        continue
        item = _csv_row(row, columns, blank, line)
        if isinstance(item, Sample):
            rows.append(_as_row(item))
        elif item is not None:  # a failed attempt or a malformed line, in the lines' order
            if rows:
                yield Rows(rows)
                rows = []
            yield item
    if rows:
        yield Rows(rows)


def _csv_row(
    row: list[str], columns: list[str], blank: Mapping[str, str | None], line: int
) -> Sample | Failed | BadLine | None:
    """One CSV row read field by field: its sample (or failed attempt), why it is malformed,
    or None (blank)."""
    if len(row) > len(columns):
        return BadLine(line, f"{len(row) - len(columns)} more field(s) than the header has")
    fields = dict(blank)
    filled = False
    for key, value in zip(columns, row, strict=False):  # a short row: the rest defaults
        text = value.strip()
        if text:
            fields[key] = value if key in VERBATIM else text
            filled = True
    if not filled:
        return None
    try:
        return _failed(fields, line) if fields["ok"] == FAILED else _sample(fields, line)
    except RowError as err:
        return BadLine(line, str(err))


def _as_row(sample: Sample) -> Row:
    """A sample of one metric, read from a table's row, as a Row."""
    ((metric, value),) = sample.metrics.items()
    context = Context(
        *sample[2:7], metric, sample.units.get(metric), sample.directions.get(metric),
        *sample[11:],
    )  # fmt: skip
    return (sample.line, context, value, sample.iteration, sample.started)


def read_csv(text: str, name: str, defaults: Defaults) -> Parsed:
    return collect("csv", csv_samples(in_blocks(io.StringIO(text)), name, defaults))


ENVIRONMENT = "environment"  # the "record" of lab export's environment lines


class _TwiceError(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once (else which one counts? refused)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _TwiceError(key)
            seen.add(key)
    return found


_DECODER = json.JSONDecoder(object_pairs_hook=_once)


def jsonl_samples(lines: Iterable[str], defaults: Defaults) -> Iterator[Item]:
    """Each non-blank line of a JSON-lines text as a Sample or a BadLine."""
    blank = _fields(defaults)
    for line, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = _DECODER.decode(raw)
        except _TwiceError as err:
            yield BadLine(line, f"the key {shown(err.key)} is given twice")
            continue
        except ValueError as err:
            yield BadLine(line, f"not JSON ({err.args[0] if err.args else err})")
            continue
        except RecursionError:
            yield BadLine(line, "not a sample: JSON nested too deeply")
            continue
        if not isinstance(row, dict):
            yield BadLine(line, "not a JSON object")
            continue
        if row.get("record") == ENVIRONMENT:  # lab export's environment lines: no sample
            yield _environment(row, line)
            continue
        unknown = [k for k in row if k not in KNOWN]
        if unknown:
            yield BadLine(line, f"unknown key(s) {listed(unknown)}")
            continue
        try:
            yield _row_sample(row, line, blank)
        except RowError as err:
            yield BadLine(line, str(err))


def _environment(row: Mapping[str, Any], line: int) -> Environment | BadLine:
    """One environment line as ``lab export`` writes it, or why it cannot be stored."""
    run, scope, name, facts = row.get("run"), row.get("scope"), row.get("name"), row.get("facts")
    recorded = row.get("recorded")
    if not isinstance(run, str) or not run:
        return BadLine(line, "an environment line names no run")
    if scope not in ("host", "guest"):
        return BadLine(line, f"environment scope {shown(str(scope))} is neither host nor guest")
    if not isinstance(name, str) or (problem := name_problem("name", name)) is not None:
        return BadLine(line, problem or "an environment line names no host or guest")
    if not isinstance(facts, dict) or not all(isinstance(v, str) for v in facts.values()):
        return BadLine(line, "an environment line's facts are not an object of strings")
    if recorded is not None and (
        not isinstance(recorded, int | float) or time_problem(float(recorded)) is not None
    ):
        return BadLine(line, f"environment recorded {shown(str(recorded))} is not a time")
    text = json.dumps(facts, sort_keys=True)
    return Environment(line, run, scope, name, text, None if recorded is None else float(recorded))


def read_jsonl(text: str, name: str, defaults: Defaults) -> Parsed:
    return collect("jsonl", jsonl_samples(io.StringIO(text), defaults))
