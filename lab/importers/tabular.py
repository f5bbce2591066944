"""CSV and JSONL: one sample per row, with columns variant, workload, metric and value.

Optional columns: iteration, timestamp (epoch seconds or ISO 8601; ``started`` is the same),
unit, direction (lower or higher), guest, host and study. The columns ``lab export`` adds
(run, params, attempt, ended, source) are accepted and ignored, so an export imports back.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from lab.core.errors import UsageError
from lab.importers.records import BadLine, Parsed, Sample

REQUIRED = ("variant", "workload", "metric", "value")
OPTIONAL = ("iteration", "timestamp", "started", "unit", "direction", "guest", "host", "study")
IGNORED = ("run", "params", "attempt", "ended", "source")
KNOWN = REQUIRED + OPTIONAL + IGNORED

Defaults = Mapping[str, str | None]  # column -> value from the command line


class RowError(ValueError):
    """One row cannot be read; the message says which column and why."""


def _text(row: Mapping[str, Any], key: str) -> str | None:
    value = row.get(key)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _timestamp(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise RowError(f"timestamp {text!r} is neither epoch seconds nor ISO 8601") from None


def sample_from_row(
    row: Mapping[str, Any], line: int, defaults: Mapping[str, str | None]
) -> Sample:
    """A Sample from one row; ``defaults`` fill variant/workload/... the row leaves empty."""
    fields = {key: _text(row, key) or defaults.get(key) for key in REQUIRED + OPTIONAL}
    missing = [key for key in REQUIRED if not fields[key]]
    if missing:
        raise RowError(f"no {', '.join(missing)}")
    metric = str(fields["metric"])
    try:
        value = float(str(fields["value"]))
    except ValueError:
        raise RowError(f"value {fields['value']!r} is not a number") from None
    if not math.isfinite(value):
        raise RowError(f"value {fields['value']!r} is not a finite number")
    iteration = None
    if fields["iteration"] is not None:
        try:
            iteration = int(str(fields["iteration"]))
        except ValueError:
            raise RowError(f"iteration {fields['iteration']!r} is not a whole number") from None
        if iteration < 1:
            raise RowError(f"iteration {iteration} is not positive (iterations count from 1)")
    direction = fields["direction"]
    if direction is not None and direction not in ("lower", "higher"):
        raise RowError(f"direction {direction!r} is neither 'lower' nor 'higher'")
    stamp = fields["timestamp"] or fields["started"]
    return Sample(
        line=line,
        metrics={metric: value},
        variant=fields["variant"],
        workload=fields["workload"],
        guest=fields["guest"],
        host=fields["host"],
        study=fields["study"],
        iteration=iteration,
        started=_timestamp(stamp) if stamp else None,
        units={metric: fields["unit"]} if fields["unit"] else {},
        directions={metric: "lower" if direction == "lower" else "higher"} if direction else {},
    )


def _check_columns(columns: list[str], where: str) -> None:
    unknown = [c for c in columns if c not in KNOWN]
    if unknown:
        raise UsageError(
            f"{where}: unknown column(s) {', '.join(unknown)}",
            hint=f"Known columns: {', '.join(KNOWN)}",
        )


def _rows(reader: csv.DictReader[str], bad: list[BadLine]) -> Iterator[dict[Any, Any]]:
    """The reader's rows; a row the csv module cannot read at all is a bad line, not a crash."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as err:  # e.g. a field past the csv module's size limit
            bad.append(BadLine(reader.line_num + 1, f"not readable as CSV ({err})"))


def read_csv(text: str, name: str, defaults: Defaults) -> Parsed:
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames or []
    except csv.Error as err:
        raise UsageError(
            f"{name}:1: the header is not readable as CSV ({err})",
            hint="The first line must name the columns, e.g. variant,workload,metric,value",
        ) from None
    columns = [c.strip() for c in header]
    _check_columns(columns, f"{name}:1")
    reader.fieldnames = columns
    samples: list[Sample] = []
    bad: list[BadLine] = []
    for row in _rows(reader, bad):
        line = reader.line_num
        if None in row:
            bad.append(BadLine(line, f"{len(row[None])} more field(s) than the header has"))
            continue
        if all(not (v or "").strip() for v in row.values()):
            continue
        try:
            samples.append(sample_from_row(row, line, defaults))
        except RowError as err:
            bad.append(BadLine(line, str(err)))
    return Parsed("csv", samples, bad)


def _json_lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


ENVIRONMENT = "environment"  # the "record" of lab export's environment lines


def read_jsonl(text: str, name: str, defaults: Defaults) -> Parsed:
    samples, bad = [], []
    for line, raw in _json_lines(text):
        try:
            row = json.loads(raw)
        except ValueError as err:
            bad.append(BadLine(line, f"not JSON ({err.args[0] if err.args else err})"))
            continue
        except RecursionError:
            bad.append(BadLine(line, "not a sample: JSON nested too deeply"))
            continue
        if not isinstance(row, dict):
            bad.append(BadLine(line, "not a JSON object"))
            continue
        if row.get("record") == ENVIRONMENT:  # lab export's environment lines: no sample
            continue
        unknown = [k for k in row if k not in KNOWN]
        if unknown:
            bad.append(BadLine(line, f"unknown key(s) {', '.join(unknown)}"))
            continue
        try:
            samples.append(sample_from_row(row, line, defaults))
        except RowError as err:
            bad.append(BadLine(line, str(err)))
    return Parsed("jsonl", samples, bad)
