"""One row of a CSV or JSONL import read into a sample or a failed attempt: its columns, and
each field's checks (a row that fails one is a malformed line, saying which and why).

A row whose ``ok`` is 1 is one of ``lab export``'s samples of a successful attempt: what it
says of that attempt (number, end, times, exit status, source) is read with the sample
(:func:`attempt_fields`), to be restored into its iteration's row. In any other row (no ``ok``
column: another tool's file, or an export older than the column) these columns are ignored,
as they always were."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lab.core.cells import cell_name, factor_problem, level_problem
from lab.importers.limits import (
    MAX_ITERATION,
    iteration_problem,
    name_problem,
    shown,
    time_problem,
    value_problem,
)
from lab.importers.records import (
    NO_DIRECTIONS,
    NO_UNITS,
    Attempt,
    Failed,
    Sample,
)

REQUIRED = ("variant", "workload", "metric", "value")
OPTIONAL = (
    "iteration", "timestamp", "started", "unit", "direction", "guest", "host", "study", "run",
    "params", "boot", "placement", "cpus", "schedule",
)  # fmt: skip
IGNORED = ("attempt", "ended", "source")  # but in lab export's rows (ok 0 or 1)
FAILURE = ("ok", "exit_status", "wall", "user", "sys", "error")  # of a failed attempt's row
KNOWN = REQUIRED + OPTIONAL + IGNORED + FAILURE
FAILED = "0"  # the ok of a failed attempt's row
SUCCEEDED = "1"  # the ok of a successful attempt's row (a sample's, as lab export writes it)
# what such a row says of its attempt, in Attempt's order
ATTEMPT = ("attempt", "ended", "wall", "user", "sys", "exit_status", "source")
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
# a column (a JSON key) giving one factor's level: the levels name the variant, a cell
FACTOR = "factor."


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


def blank_fields(defaults: Defaults) -> dict[str, str | None]:
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


def _status(fields: Mapping[str, str | None]) -> int | None:
    exit_status = _whole(fields, "exit_status")
    if exit_status is not None and not -(2**63) <= exit_status < 2**63:
        raise RowError(f"exit_status {exit_status} is out of range")
    return exit_status


def attempt_fields(fields: Mapping[str, str | None]) -> Attempt | None:
    """What a row of ``lab export`` of a successful attempt (``ok`` 1) says of that attempt,
    each field checked as a failed attempt's is; None for any other row, and for one that
    says nothing of it (its attempt is then numbered as an import numbers it: 1, or after
    the failed attempts the input restores)."""
    if fields["ok"] != SUCCEEDED:
        return None
    number = _whole(fields, "attempt")
    if number is not None and not 0 < number <= MAX_ITERATION:
        raise RowError(f"attempt {shown(str(number), 30)} is not a number from 1 to 2**53")
    attempt = Attempt(
        1 if number is None else number, _time(fields, "ended"), _number(fields, "wall"),
        _number(fields, "user"), _number(fields, "sys"), _status(fields), fields["source"],
    )  # fmt: skip
    return None if number is None and attempt[1:] == _NOTHING else attempt


_NOTHING = (None,) * (len(ATTEMPT) - 1)


def failed_row(fields: Mapping[str, str | None], line: int) -> Failed:
    """A failed attempt from one row's fields (``ok`` 0): as :func:`sample_row` reads a sample,
    with no metric and no value but an iteration and an attempt."""
    fields = cell_fields(fields)
    variant, workload = fields["variant"], fields["workload"]
    if not (variant and workload):
        missing = [key for key in ("variant", "workload") if not fields[key]]
        raise RowError(f"a failed attempt (ok 0) with no {', '.join(missing)}")
    if fields["metric"] is not None or fields["value"] is not None:
        raise RowError("a failed attempt (ok 0) has a metric or a value; it has no sample")
    problem = names_problem(fields)
    if problem is not None:
        raise RowError(problem)
    iteration, attempt = _whole(fields, "iteration"), _whole(fields, "attempt")
    if iteration is None or attempt is None:
        raise RowError("a failed attempt (ok 0) with no iteration or no attempt")
    for number in (iteration, attempt):
        problem = iteration_problem(number)
        if problem is not None:
            raise RowError(problem)
    exit_status = _status(fields)
    return Failed(
        line, variant, workload, fields["guest"], fields["host"], fields["study"], iteration,
        attempt, _time(fields, "timestamp" if fields["timestamp"] else "started"),
        _time(fields, "ended"),
        _number(fields, "wall"), _number(fields, "user"), _number(fields, "sys"), exit_status,
        fields["boot"], fields["placement"], fields["cpus"], fields["error"], fields["source"],
        fields["run"], fields["params"], fields["schedule"],
    )  # fmt: skip


def cell_fields(fields: Mapping[str, str | None]) -> Mapping[str, str | None]:
    """``fields`` with the variant its ``factor.NAME`` fields name (a cell, as
    :mod:`lab.core.cells` spells it, the factors in the columns' order); ``fields`` itself
    where there are none. A row with both a variant and factor levels, or a factor without a
    level, is refused: which would the variant be?"""
    levels = [(key[len(FACTOR) :], text) for key, text in fields.items() if key.startswith(FACTOR)]
    if not levels:
        return fields
    if fields["variant"] is not None:
        raise RowError(
            f"variant {shown(fields['variant'])} and factor.NAME levels: the levels name the"
            " variant (a cell); give one or the other"
        )
    for factor, level in levels:
        problem = factor_problem(factor) or name_problem("factor", factor)
        if problem is None and level is None:
            problem = f"no level of factor {shown(factor)}"
        if problem is None and level is not None:
            problem = name_problem("level", level) or level_problem(factor, level)
        if problem is not None:
            raise RowError(problem)
    return {**fields, "variant": cell_name((f, str(level)) for f, level in levels)}


def sample_row(fields: Mapping[str, str | None], line: int) -> Sample:
    """A Sample from one row's fields (stripped, non-empty text, or the default)."""
    fields = cell_fields(fields)
    variant, workload, metric, text = (
        fields["variant"], fields["workload"], fields["metric"], fields["value"],
    )  # fmt: skip
    if not (variant and workload and metric and text):
        missing = [key for key in REQUIRED if not fields[key]]
        raise RowError(f"no {', '.join(missing)}")
    problem = names_problem(fields)
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
    attempt = attempt_fields(fields)
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
        fields["run"],
        fields["params"],
        fields["boot"],
        fields["placement"],
        fields["cpus"],
        fields["schedule"],
        attempt,
    )


def names_problem(fields: Mapping[str, str | None]) -> str | None:
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


def row_sample(
    row: Mapping[str, Any], line: int, blank: Mapping[str, str | None]
) -> Sample | Failed:
    """A Sample (or a failed attempt) from one JSON row; ``blank`` holds the defaults of what
    it leaves empty."""
    fields = dict(blank)
    for key, value in row.items():
        if value is not None and (key in fields or key.startswith(FACTOR)):
            if key in VERBATIM and isinstance(value, str):
                fields[key] = value
                continue
            text = json.dumps(value) if isinstance(value, dict) else str(value).strip()
            if text:
                fields[key] = text
    return failed_row(fields, line) if fields["ok"] == FAILED else sample_row(fields, line)
