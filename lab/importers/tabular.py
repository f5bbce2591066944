"""CSV: one sample per row, with columns variant, workload, metric and value.

Optional columns: iteration, timestamp (epoch seconds or ISO 8601; ``started`` is the same),
unit, direction (lower or higher), guest, host, study, and those ``lab export`` writes of a
run: run (its key), params (its parameters, a JSON object), schedule, boot (any text naming
the boot an iteration ran in), placement (own or swapped: ``lab run --swap-every``) and cpus
(the host CPU of each vCPU in it, "3,4"). Each run of a file is kept apart, so an export
imports back as the same runs (a run the store holds keeps its own schedule). The other
columns ``lab export`` adds to a sample's row are its attempt's: where ``ok`` is 1, its
attempt, ended, exit_status, wall, user, sys and source are restored into the iteration's
row (:class:`Attempt`); in a file without the ``ok`` column they are accepted and ignored.

A row whose ``ok`` is 0 is a failed attempt as ``lab export`` writes it: no metric and no
value, but its iteration and attempt (both required), start, end, source, boot, placement,
exit status, times and error, each stored as it was (:class:`Failed`). Each field's checks
are :mod:`lab.importers.rowfields`'; JSON lines, with the same keys, are
:mod:`lab.importers.jsonl`'s.

:func:`csv_samples` reads blocks of lines as the input comes and yields each row's sample
(as Rows, several at a time) or malformed line in turn; :func:`read_csv` reads a whole text.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice, repeat
from math import isfinite
from operator import itemgetter
from typing import Any, cast

from lab.core.cells import factor_problem
from lab.core.errors import UsageError
from lab.importers.limits import (
    END_TIME,
    FIRST_TIME,
    MAX_ITERATION,
    MAX_VALUE,
    listed,
    one_line,
    shown,
)
from lab.importers.records import (
    Attempt,
    BadLine,
    Context,
    Failed,
    Item,
    Parsed,
    Row,
    Rows,
    Sample,
    collect,
)
from lab.importers.rowfields import (
    ATTEMPT,
    FACTOR,
    FAILED,
    FAILURE,
    IGNORED,
    KNOWN,
    RUN_COLUMNS,
    VERBATIM,
    Defaults,
    RowError,
    attempt_fields,
    blank_fields,
    cell_fields,
    failed_row,
    names_problem,
    sample_row,
)


def _check_columns(columns: list[str], where: str) -> None:
    seen: set[str] = set()
    for column in columns:
        if column in seen:  # which one counts? refused rather than guessed
            raise UsageError(
                f"{where}: the column {shown(column)} is named twice", hint="Name each column once"
            )
        seen.add(column)
    unknown = [c for c in columns if c not in KNOWN and not c.startswith(FACTOR)]
    if unknown:
        raise UsageError(
            f"{where}: unknown column(s) {listed(unknown)}",
            hint=f"Known columns: {', '.join(KNOWN)}, and factor.NAME for a factor's level",
        )
    factors = [c for c in columns if c.startswith(FACTOR)]
    for column in factors:
        problem = factor_problem(column[len(FACTOR) :])
        if problem is not None:
            raise UsageError(
                f"{where}: column {shown(column)}: {problem}",
                hint="Name a factor's column factor.NAME, e.g. factor.page",
            )
    if factors and "variant" in columns:
        raise UsageError(
            f"{where}: a variant column and factor.NAME columns: the factors' levels name the"
            " variant of each row (a cell, e.g. page-1g.prealloc-on)",
            hint="Leave the variant column out, or the factor.NAME columns",
        )


class _Columns:
    """Where a CSV header puts what varies from row to row (value, iteration, timestamp) and
    what rows repeat (the rest: the context), for reading a row without a dict of its fields,
    and a block of plain rows column by column (:meth:`block`).

    A row is read this way only when the outcome is sure to be :func:`sample_row`'s: its width
    is the header's, its context was checked whole once (``contexts``), and its value,
    iteration and timestamp convert as they are (``float`` and ``int`` strip blanks as
    :func:`sample_row` does); any other row, malformed or not, goes through :func:`sample_row`,
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
        # the ok column, then those of the Attempt that a row of ok 1 restores, as named
        self.attempt_at = [i for i in (self.ok, *map(at.get, ATTEMPT)) if i is not None]
        self.attempt_names = [columns[i] for i in self.attempt_at]
        varying = ("value", "iteration", "timestamp", "started", *IGNORED, *FAILURE)
        self.context_at = [i for i, name in enumerate(columns) if name not in varying]
        # a column named twice: the last non-empty one counts, which only sample_row knows
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
        complete or not valid (such rows are read by sample_row, which says why)."""
        if len(self.contexts) >= self.CONTEXTS:
            self.contexts.clear()
        fields = dict(self.blank)
        for i, raw in zip(self.context_at, key, strict=True):
            text = raw.strip()
            if text:
                fields[self.columns[i]] = text
        try:
            fields = dict(cell_fields(fields))
        except RowError:  # read by sample_row, which says why
            fields["variant"] = None
        variant, workload, metric, direction = (
            fields["variant"], fields["workload"], fields["metric"], fields["direction"],
        )  # fmt: skip
        found = None
        if (
            variant and workload and metric and direction in (None, "lower", "higher")
            and names_problem(fields) is None
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
                if context is None:  # read at its first row; a later one has it (or None)
                    held = self.contexts.get(key, _UNSEEN)
                    contexts[i] = self.context(key) if held is _UNSEEN else held
            if None in contexts:
                return None
        try:
            values = list(map(float, columns[self.value or 0]))
            numbers = None
            if self.iteration is not None:
                numbers = list(map(int, columns[self.iteration]))
            stamps = self.stamps(columns, count)
        except ValueError:
            return None  # an iteration left empty, or whatever sample_row reads or refuses
        if not (
            all(map(isfinite, values)) and min(values) >= -MAX_VALUE and max(values) <= MAX_VALUE
        ):
            return None
        if numbers is not None and not (min(numbers) >= 1 and max(numbers) <= MAX_ITERATION):
            return None
        iterations: Iterable[int | None] = repeat(None) if numbers is None else numbers
        if stamps is None:
            return None
        attempts = self.attempts_of(columns)
        if attempts is None:
            return None
        known = cast(list[Context], contexts)  # none is None (above)
        lines_at = range(first, first + count)
        return list(zip(lines_at, known, values, iterations, stamps, attempts, strict=False))

    def attempts_of(self, columns: Sequence[Sequence[str]]) -> Iterable[Attempt | None] | None:
        """The Attempt of each row, for :meth:`block` (None in a file without the ok column);
        None when one cannot be read (then row by row, which says why). The rows of an
        iteration's samples repeat its attempt's fields: each spelling is read once."""
        if self.ok is None:
            return repeat(None)
        keys = list(zip(*[columns[i] for i in self.attempt_at], strict=True))
        known = {key: self.attempt(key) for key in dict.fromkeys(keys)}  # in the block only
        found = list(map(known.__getitem__, keys))
        if _REFUSED in found:
            return None
        return cast(list[Attempt | None], found)

    def attempt(self, key: tuple[str, ...]) -> object:
        """The Attempt of a row whose ok and attempt columns hold ``key``, as
        :func:`_csv_row` reads it; ``_REFUSED`` when a field of it is refused."""
        fields: dict[str, str | None] = dict.fromkeys(("ok", *ATTEMPT))
        for name, raw in zip(self.attempt_names, key, strict=True):
            text = raw.strip()
            if text:
                fields[name] = raw if name in VERBATIM else text
        try:
            return attempt_fields(fields)
        except RowError:
            return _REFUSED

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
            return None  # sample_row takes the first one that is not blank
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
_REFUSED = object()  # an attempt's fields that sample_row refuses


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
    if defaults.get("variant") and any(c.startswith(FACTOR) for c in columns):
        raise UsageError(
            f"{name}:1: --variant and factor.NAME columns: the factors' levels name each row's"
            " variant (a cell)",
            hint="Leave --variant out",
        )
    # a factor's column left empty is a row without that level (refused), not another cell
    blank = {**blank_fields(defaults), **dict.fromkeys(c for c in columns if c.startswith(FACTOR))}
    layout = _Columns(columns, blank)
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
    ok_at, attempt_at = layout.ok, layout.attempt_at
    attempts: dict[tuple[str, ...], object] = {}  # lab export's: an iteration's rows share one
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
            attempt: object = None
            if ok_at is not None:  # lab export's row of a sample: its attempt's fields
                fields = tuple([row[i] for i in attempt_at])
                attempt = attempts.get(fields)
                if attempt is None:
                    attempt = attempts[fields] = layout.attempt(fields)
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
                    pass  # sample_row says why, or reads what float and int do not
                else:
                    if (
                        -MAX_VALUE <= value <= MAX_VALUE  # False for NaN
                        and (iteration is None or 0 < iteration <= MAX_ITERATION)
                        and (started is None or FIRST_TIME <= started < END_TIME)
                        and attempt is not _REFUSED  # else sample_row says why
                    ):
                        rows.append(
                            (
                                line,
                                context,
                                value,
                                iteration,
                                started,
                                cast("Attempt | None", attempt),
                            )
                        )
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
        return failed_row(fields, line) if fields["ok"] == FAILED else sample_row(fields, line)
    except RowError as err:
        return BadLine(line, str(err))


def _as_row(sample: Sample) -> Row:
    """A sample of one metric, read from a table's row, as a Row."""
    ((metric, value),) = sample.metrics.items()
    context = Context(
        *sample[2:7], metric, sample.units.get(metric), sample.directions.get(metric),
        *sample[11:17],
    )  # fmt: skip
    return (sample.line, context, value, sample.iteration, sample.started, sample.attempt)


def read_csv(text: str, name: str, defaults: Defaults) -> Parsed:
    return collect("csv", csv_samples(in_blocks(io.StringIO(text)), name, defaults))
