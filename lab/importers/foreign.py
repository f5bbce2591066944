"""Results of the benchmark tools people already use, read as samples.

- ``hyperfine``: ``hyperfine --export-json``; every command is a variant (its name, or
  ``--command-name``'s), every time a sample of ``wall_s``.
- ``pyperf``: pyperf's JSON (``-o``, ``pyperf convert``); every benchmark is a workload, every
  value of every run a sample (warm-ups left out), ``time_s`` when its unit is seconds.
- ``pytest-benchmark``: ``pytest --benchmark-json --benchmark-save-data``; every benchmark
  is a workload, every round a sample of ``time_s``.
- ``gnu-time``: GNU ``time -v`` reports one after another (``time -a -o FILE -v``); each is
  a sample of ``wall_s``, ``user_s``, ``sys_s`` and ``max_rss_kib``.

The three JSON formats are one document each, read whole (up to :data:`MAX_DOCUMENT`): the
"line" of a sample, its source in the store, is its number in the document (the first value
is 1, the next 2, ...), not a line of the file. A run that failed (a non-zero exit status) is
a malformed line, not a sample.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

from lab.importers.jsonl import ONCE_DECODER, TwiceError
from lab.importers.limits import name_problem, shown
from lab.importers.records import BadLine, Item, Sample
from lab.store import Direction

FORMATS = ("hyperfine", "pyperf", "pytest-benchmark", "gnu-time")
# the formats whose file does not say which variant made it (--variant is needed)
NEEDS_VARIANT = frozenset({"pyperf", "pytest-benchmark", "gnu-time"})
MAX_DOCUMENT = 256 << 20  # characters of one JSON document read whole

# A JSON document's first key, and the tool that writes it first
_FIRST_KEY = re.compile(r'\A\s*\{\s*"([^"\\]{1,40})"')
_BY_FIRST_KEY = {
    "results": "hyperfine", "benchmarks": "pyperf", "machine_info": "pytest-benchmark",
    "start": "iperf3-json",
}  # fmt: skip
_GNU_TIME_START = re.compile(r"^\s*(Command being timed: |Command exited with non-zero status )")


def json_format(head: str) -> str | None:
    """The format of the JSON document ``head`` starts, from its first key (iperf3 -J's is
    "start"); None when it is none of these."""
    match = _FIRST_KEY.match(head)
    return _BY_FIRST_KEY.get(match.group(1)) if match else None


def is_gnu_time(first_line: str) -> bool:
    return _GNU_TIME_START.match(first_line) is not None


def samples(fmt: str, lines: Iterable[str], workload: str | None = None) -> Iterator[Item]:
    """The samples of an input of ``fmt`` (one of :data:`FORMATS`). With ``workload``
    (``--workload``), pyperf's and pytest-benchmark's benchmarks are metrics of that one
    workload, each named after its benchmark, where they are a workload each."""
    if fmt == "gnu-time":
        return gnu_time_samples(lines)
    readers = {"hyperfine": _read_hyperfine, "pyperf": _read_pyperf,
               "pytest-benchmark": _read_pytest_benchmark}  # fmt: skip
    read: Any = readers[fmt]
    if fmt != "hyperfine":
        read = partial(read, as_metrics=workload is not None)
    return _document(lines, fmt, _guarded(fmt, read))


def _document(lines: Iterable[str], fmt: str, read: Any) -> Iterator[Item]:
    parts, size = [], 0
    for line in lines:
        size += len(line)
        if size > MAX_DOCUMENT:
            yield BadLine(1, f"a {fmt} document longer than {MAX_DOCUMENT >> 20} MiB")
            return
        parts.append(line)
    try:
        document = ONCE_DECODER.decode("".join(parts))
    except TwiceError as err:  # which would count? json.loads keeps the last, silently
        yield BadLine(1, f"a {fmt} object gives the key {shown(err.key)} twice")
        return
    except json.JSONDecodeError as err:
        yield BadLine(err.lineno, f"not {fmt}'s JSON ({err.msg})")
        return
    except (ValueError, RecursionError) as err:
        yield BadLine(1, f"not {fmt}'s JSON ({str(err)[:80] or 'nested too deeply'})")
        return
    yield from _numbered(read(document))


def _numbered(found: Iterator[tuple[dict[str, Any], str | None]]) -> Iterator[Item]:
    """Each (sample fields, or why not) as a Sample or a BadLine numbered in document order."""
    for number, (fields, problem) in enumerate(found, start=1):
        yield BadLine(number, problem) if problem else Sample(line=number, **fields)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


class _NotTheFormat(Exception):
    pass


def _list(obj: Any, key: str, where: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, list):
        raise _NotTheFormat(f"{where} has no {key!r} list")
    return value


def _guarded(fmt: str, read: Any) -> Any:
    """``read`` whose document of the wrong shape is one malformed line saying so."""

    def reader(document: Any) -> Iterator[tuple[dict[str, Any], str | None]]:
        try:
            yield from read(document)
        except _NotTheFormat as err:
            yield {}, f"not {fmt}'s JSON: {err}"

    return reader


def _value(
    value: Any, metric: str, what: str, duration: bool = True
) -> tuple[dict[str, Any], str | None]:
    number = _number(value)
    if number is None:
        return {}, f"{what}: {shown(str(value), 40)} is not a number"
    if duration and number < 0:
        return {}, f"{what}: a negative time ({number:g} s)"
    return {"metrics": {metric: number}}, None


def _named(kind: str, name: Any, what: str, seen: set[str]) -> tuple[str, str | None]:
    """``name`` as the tool gives it, and why lab import refuses it (as CSV's: a control
    character, too long, quoted short; or a second benchmark of one name, whose samples
    would join the first's series); a missing name is the document's shape error."""
    if not isinstance(name, str) or not name:
        raise _NotTheFormat(f"{what} has no name")
    problem = name_problem(kind, name)
    if problem is None and name in seen:
        problem = f"two {what}s are named {shown(name)}"
    seen.add(name)
    return name, problem


def _read_hyperfine(document: Any) -> Iterator[tuple[dict[str, Any], str | None]]:
    seen: set[str] = set()
    for result in _list(document, "results", "the document"):
        command = result.get("command") if isinstance(result, dict) else None
        if not isinstance(command, str) or not command:
            raise _NotTheFormat("a result has no command")
        command, refused = _named("variant", command, "command", seen)
        if refused is not None:
            yield {}, refused
            continue
        codes = result.get("exit_codes") or []
        for index, time in enumerate(_list(result, "times", f"result {command!r}")):
            code = codes[index] if index < len(codes) else 0
            if code != 0:
                yield {}, f"{shown(command)} run {index + 1} failed (exit code {code})"
                continue
            fields, problem = _value(time, "wall_s", f"{shown(command)} run {index + 1}")
            yield {**fields, "variant": command}, problem


_PYPERF_UNITS = {"second": ("time_s", "s", "lower"), "byte": ("memory_bytes", "B", "lower")}


def _read_pyperf(
    document: Any, as_metrics: bool = False
) -> Iterator[tuple[dict[str, Any], str | None]]:
    common = document.get("metadata") or {}
    seen: set[str] = set()
    for bench in _list(document, "benchmarks", "the document"):
        metadata = {**common, **(bench.get("metadata") or {})} if isinstance(bench, dict) else {}
        name, refused = _named("workload", metadata.get("name"), "benchmark", seen)
        if refused is not None:
            yield {}, refused
            continue
        unit = metadata.get("unit", "second")
        metric, symbol, direction = _PYPERF_UNITS.get(unit, ("value", "", None))
        extra: dict[str, Any] = {"workload": name}
        if as_metrics:  # --workload: the benchmark is a metric of it, named after it
            metric, extra = name, {}
        extra |= {"units": {metric: symbol}}
        if direction:
            extra["directions"] = {metric: direction}
        for run in _list(bench, "runs", f"benchmark {shown(name)}"):
            for value in (run.get("values") or []) if isinstance(run, dict) else []:
                fields, problem = _value(
                    value, metric, f"benchmark {shown(name)}", unit == "second"
                )
                yield {**fields, **extra}, problem


def _read_pytest_benchmark(
    document: Any, as_metrics: bool = False
) -> Iterator[tuple[dict[str, Any], str | None]]:
    seen: set[str] = set()
    for bench in _list(document, "benchmarks", "the document"):
        name = bench.get("name") if isinstance(bench, dict) else None
        name, refused = _named("workload", name, "benchmark", seen)
        if refused is not None:
            yield {}, refused
            continue
        stats = bench.get("stats")
        data = stats.get("data") if isinstance(stats, dict) else None
        if not isinstance(data, list):
            yield (
                {},
                (
                    f"benchmark {name!r} has no per-round times (stats.data): run pytest with"
                    " --benchmark-save-data as well as --benchmark-json"
                ),
            )
            continue
        metric = name if as_metrics else "time_s"  # --workload: a metric each, named after it
        extra: dict[str, Any] = (
            {"units": {name: "s"}, "directions": {name: "lower"}}
            if as_metrics
            else {"workload": name}
        )
        for value in data:
            fields, problem = _value(value, metric, f"benchmark {shown(name)}")
            yield {**fields, **extra}, problem


# GNU time -v: the lines read, by their label, and the metric each gives
_GNU_TIME_METRICS = {
    "Elapsed (wall clock) time (h:mm:ss or m:ss)": "wall_s",
    "User time (seconds)": "user_s",
    "System time (seconds)": "sys_s",
    "Maximum resident set size (kbytes)": "max_rss_kib",
}
_GNU_TIME_UNITS = {"wall_s": "s", "user_s": "s", "sys_s": "s", "max_rss_kib": "KiB"}
_GNU_TIME_DIRECTIONS: dict[str, Direction] = {"max_rss_kib": "lower"}
_GNU_TIME_END = re.compile(r"^\s*Exit status: (-?[0-9]+)\s*$")


def _seconds(text: str) -> float:
    """``1:02:03.5``, ``2:03.50`` or ``0.12`` in seconds."""
    total = 0.0
    for part in text.split(":"):
        total = total * 60 + float(part)
    return total


def _gnu_time_block(first: int, block: list[str], status: int) -> Item:
    metrics: dict[str, float] = {}
    for line in block:
        label, _, value = line.strip().rpartition(": ")
        metric = _GNU_TIME_METRICS.get(label)
        if metric is not None:
            try:
                metrics[metric] = _seconds(value) if metric == "wall_s" else float(value)
            except ValueError:
                return BadLine(first, f"GNU time's {label!r} is not a number: {shown(value, 40)}")
            if metrics[metric] < 0:
                return BadLine(first, f"GNU time's {label!r} is negative: {shown(value, 40)}")
    if status != 0:
        return BadLine(first, f"the command timed exited with status {status}")
    missing = [label for label, metric in _GNU_TIME_METRICS.items() if metric not in metrics]
    if missing:
        return BadLine(first, f"a GNU time -v report without {missing[0]!r}")
    return Sample(first, metrics, units=_GNU_TIME_UNITS, directions=_GNU_TIME_DIRECTIONS)


def gnu_time_samples(lines: Iterable[str]) -> Iterator[Item]:
    """GNU ``time -v`` reports, each from its first line to its ``Exit status:`` line."""
    block: list[str] = []
    first = 0
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not block and not line.strip():
            continue
        if not block:
            first = number
        block.append(line)
        end = _GNU_TIME_END.match(line)
        if end:
            yield _gnu_time_block(first, block, int(end.group(1)))
            block = []
    if block:
        yield BadLine(first, "a GNU time -v report cut short (no 'Exit status:' line)")
