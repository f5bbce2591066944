"""JSON lines: one sample (or failed attempt, or ``lab export``'s environment line) per line,
with the keys a CSV's columns have (:mod:`lab.importers.rowfields`)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from lab.importers.limits import (
    listed,
    name_problem,
    shown,
    time_problem,
)
from lab.importers.records import (
    BadLine,
    Environment,
    Item,
    Parsed,
    StudyDesign,
    collect,
)
from lab.importers.rowfields import (
    FACTOR,
    KNOWN,
    Defaults,
    RowError,
    blank_fields,
    row_sample,
)
from lab.store.designs import design_problem

ENVIRONMENT = "environment"  # the "record" of lab export's environment lines
DESIGN = "design"  # and of its design lines (lab.store.designs)


class TwiceError(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once (else which one counts? refused)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise TwiceError(key)
            seen.add(key)
    return found


ONCE_DECODER = json.JSONDecoder(object_pairs_hook=once)


def jsonl_samples(lines: Iterable[str], defaults: Defaults) -> Iterator[Item]:
    """Each non-blank line of a JSON-lines text as a Sample or a BadLine."""
    blank = blank_fields(defaults)
    for line, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = ONCE_DECODER.decode(raw)
        except TwiceError as err:
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
        if row.get("record") == DESIGN:  # and its design lines: a factorial study's design
            yield _design(row, line)
            continue
        unknown = [k for k in row if k not in KNOWN and not k.startswith(FACTOR)]
        if unknown:
            yield BadLine(line, f"unknown key(s) {listed(unknown)}")
            continue
        try:
            yield row_sample(row, line, blank)
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


def _design(row: Mapping[str, Any], line: int) -> StudyDesign | BadLine:
    """One design line as ``lab export`` writes it, or why it cannot be stored."""
    study, design = row.get("study"), row.get("design")
    if not isinstance(study, str) or (problem := name_problem("study", study)) is not None:
        return BadLine(line, problem or "a design line names no study")
    problem = design_problem(design)
    if problem is not None or not isinstance(design, dict):
        return BadLine(line, problem or "a design is not a JSON object")
    return StudyDesign(line, study, design)


def read_jsonl(text: str, name: str, defaults: Defaults) -> Parsed:
    return collect("jsonl", jsonl_samples(io.StringIO(text), defaults))
