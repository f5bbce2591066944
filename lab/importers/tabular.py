"""CSV and JSONL: one sample per row, with columns variant, workload, metric and value.

Optional columns: iteration, timestamp (epoch seconds or ISO 8601; ``started`` is the same),
unit, direction (lower or higher), guest, host and study. The columns ``lab export`` adds
(run, params, attempt, ended, source) are accepted and ignored, so an export imports back.

:func:`csv_samples` and :func:`jsonl_samples` read lines as they come and yield each row's
sample or malformed line in turn; :func:`read_csv` and :func:`read_jsonl` read a whole text.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from lab.core.errors import UsageError
from lab.importers.records import NO_DIRECTIONS, NO_UNITS, BadLine, Item, Parsed, Sample, collect

REQUIRED = ("variant", "workload", "metric", "value")
OPTIONAL = ("iteration", "timestamp", "started", "unit", "direction", "guest", "host", "study")
IGNORED = ("run", "params", "attempt", "ended", "source")
KNOWN = REQUIRED + OPTIONAL + IGNORED

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
        raise RowError(f"timestamp {text!r} is neither epoch seconds nor ISO 8601") from None


def _fields(defaults: Defaults) -> dict[str, str | None]:
    """A row's fields before its values: the command line's, else None."""
    return {key: defaults.get(key) for key in REQUIRED + OPTIONAL}


def _sample(fields: Mapping[str, str | None], line: int) -> Sample:
    """A Sample from one row's fields (stripped, non-empty text, or the default)."""
    variant, workload, metric, text = (
        fields["variant"], fields["workload"], fields["metric"], fields["value"],
    )  # fmt: skip
    if not (variant and workload and metric and text):
        missing = [key for key in REQUIRED if not fields[key]]
        raise RowError(f"no {', '.join(missing)}")
    try:
        value = float(text)
    except ValueError:
        raise RowError(f"value {text!r} is not a number") from None
    if not math.isfinite(value):
        raise RowError(f"value {text!r} is not a finite number")
    iteration = None
    if fields["iteration"] is not None:
        try:
            iteration = int(fields["iteration"])
        except ValueError:
            raise RowError(f"iteration {fields['iteration']!r} is not a whole number") from None
        if iteration < 1:
            raise RowError(f"iteration {iteration} is not positive (iterations count from 1)")
    direction = fields["direction"]
    if direction is not None and direction not in ("lower", "higher"):
        raise RowError(f"direction {direction!r} is neither 'lower' nor 'higher'")
    stamp = fields["timestamp"] or fields["started"]
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
        _timestamp(stamp) if stamp else None,
        {metric: unit} if unit else NO_UNITS,
        {metric: "lower" if direction == "lower" else "higher"} if direction else NO_DIRECTIONS,
    )


def _row_sample(row: Mapping[str, Any], line: int, blank: Mapping[str, str | None]) -> Sample:
    """A Sample from one JSON row; ``blank`` holds the defaults of what it leaves empty."""
    fields = dict(blank)
    for key, value in row.items():
        if value is not None and key in fields:
            text = str(value).strip()
            if text:
                fields[key] = text
    return _sample(fields, line)


def _check_columns(columns: list[str], where: str) -> None:
    unknown = [c for c in columns if c not in KNOWN]
    if unknown:
        raise UsageError(
            f"{where}: unknown column(s) {', '.join(unknown)}",
            hint=f"Known columns: {', '.join(KNOWN)}",
        )


def csv_samples(lines: Iterable[str], name: str, defaults: Defaults) -> Iterator[Item]:
    """Each row of a CSV text, read line by line, as a Sample or a BadLine (its last line)."""
    reader = csv.reader(lines)
    try:
        header = next(reader, [])
    except csv.Error as err:
        raise UsageError(
            f"{name}:1: the header is not readable as CSV ({err})",
            hint="The first line must name the columns, e.g. variant,workload,metric,value",
        ) from None
    columns = [c.strip() for c in header]
    _check_columns(columns, f"{name}:1")
    width = len(columns)
    blank = _fields(defaults)
    line = reader.line_num  # the last line of the last row read
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:  # e.g. a field past the csv module's size limit
            yield BadLine(line + 1, f"not readable as CSV ({err})")
            line = reader.line_num
            continue
        line = reader.line_num
        if len(row) > width:
            yield BadLine(line, f"{len(row) - width} more field(s) than the header has")
            continue
        fields = blank.copy()
        filled = False
        for key, value in zip(columns, row, strict=False):  # a short row: the rest defaults
            text = value.strip()
            if text:
                fields[key] = text
                filled = True
        if not filled:
            continue
        try:
            yield _sample(fields, line)
        except RowError as err:
            yield BadLine(line, str(err))


def read_csv(text: str, name: str, defaults: Defaults) -> Parsed:
    return collect("csv", csv_samples(io.StringIO(text), name, defaults))


ENVIRONMENT = "environment"  # the "record" of lab export's environment lines


def jsonl_samples(lines: Iterable[str], defaults: Defaults) -> Iterator[Item]:
    """Each non-blank line of a JSON-lines text as a Sample or a BadLine."""
    blank = _fields(defaults)
    for line, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
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
            continue
        unknown = [k for k in row if k not in KNOWN]
        if unknown:
            yield BadLine(line, f"unknown key(s) {', '.join(unknown)}")
            continue
        try:
            yield _row_sample(row, line, blank)
        except RowError as err:
            yield BadLine(line, str(err))


def read_jsonl(text: str, name: str, defaults: Defaults) -> Parsed:
    return collect("jsonl", jsonl_samples(io.StringIO(text), defaults))
