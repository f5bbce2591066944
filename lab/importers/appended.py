"""Files that hand-run loops leave behind: one tool's output appended run after run.

Each reader splits the file into runs, gives each run to the tool's parser in
:mod:`lab.parsers.tools` (the same parsers the in-guest runner uses), and keeps the line where
the run starts as its source. A run that does not parse, and any line that belongs to no run,
is a :class:`BadLine` with the parser's reason.

- ``time``: bash's ``time`` blocks (``real``/``user``/``sys``), nothing else but blank lines;
- ``sysbench``: reports each starting with the ``sysbench 1.0.x (using ...)`` banner;
- ``iperf3``: client text output, each run starting with ``Connecting to host``; the
  sender's (or, with -P, the [SUM] sender's) bitrate and retransmits, and the receiver's;
- ``iperf3-json``: ``iperf3 -J`` objects one after another.
"""

from __future__ import annotations

import json
import math
import re

from lab.importers.records import BadLine, Parsed, Sample
from lab.parsers.tools import (
    ParseError,
    Parser,
    parse_bash_time,
    parse_iperf3_json,
    parse_sysbench_memory,
)

_TIME_KEYWORD = re.compile(r"^\s*(real|user|sys)\b")


def read_time(text: str) -> Parsed:
    samples: list[Sample] = []
    bad: list[BadLine] = []
    block: list[tuple[int, str]] = []

    def flush() -> None:
        if not block:
            return
        start, end = block[0][0], block[-1][0]
        try:
            metrics = parse_bash_time("\n".join(line for _, line in block))
        except ParseError as err:
            bad.append(BadLine(start, f"{err} (in the block at lines {start}–{end})"))
        else:
            samples.append(Sample(line=start, metrics=metrics))
        block.clear()

    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _TIME_KEYWORD.match(line)
        if match is None:
            flush()
            bad.append(BadLine(number, f"not a line of `time` output: {line.strip()[:60]!r}"))
            continue
        if match.group(1) == "real":
            flush()
        elif not block:
            bad.append(BadLine(number, f"{match.group(1)} line without a real line before it"))
            continue
        block.append((number, line))
        if len(block) == 3:
            flush()
    flush()
    return Parsed("time", samples, bad)


def _split(
    text: str, start: re.Pattern[str], what: str
) -> tuple[list[tuple[int, str]], list[BadLine]]:
    """Runs as (first line number, text); non-blank lines before the first run are bad."""
    runs: list[tuple[int, list[str]]] = []
    bad: list[BadLine] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if start.match(line):
            runs.append((number, [line]))
        elif runs:
            runs[-1][1].append(line)
        elif line.strip():
            bad.append(BadLine(number, f"not part of {what}: {line.strip()[:60]!r}"))
    return [(n, "\n".join(lines) + "\n") for n, lines in runs], bad


def _parse_runs(
    name: str,
    text: str,
    start: re.Pattern[str],
    what: str,
    parse: Parser,
) -> Parsed:
    runs, bad = _split(text, start, what)
    samples = []
    for line, chunk in runs:
        try:
            samples.append(Sample(line=line, metrics=parse(chunk)))
        except ParseError as err:
            bad.append(BadLine(line, str(err)))
    return Parsed(name, samples, sorted(bad, key=lambda b: b.line))


_SYSBENCH_BANNER = re.compile(r"^sysbench [0-9]")


def read_sysbench(text: str) -> Parsed:
    return _parse_runs("sysbench", text, _SYSBENCH_BANNER, "a sysbench report",
                       parse_sysbench_memory)  # fmt: skip


_IPERF3_START = re.compile(r"^Connecting to host ")
_IPERF3_SUMMARY = re.compile(
    r"^\[\s*(?P<id>[0-9]+|SUM)\]\s+[0-9.]+-[0-9.]+\s+sec\s+[0-9.]+\s+[KMGT]?Bytes\s+"
    r"(?P<rate>[0-9.]+)\s+(?P<prefix>[KMGT]?)bits/sec(?:\s+(?P<retr>[0-9]+))?.*?"
    r"\b(?P<role>sender|receiver)\s*$",
    re.MULTILINE,
)
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_IPERF3_ERROR = re.compile(r"^iperf3: error - (.*)$", re.MULTILINE)


def parse_iperf3_text(text: str) -> dict[str, float]:
    """One ``iperf3 -c HOST`` run's text output: the summary's sender and receiver bitrates.

    With several streams (-P) the [SUM] lines are used. iperf3 prints 3 significant digits,
    so these are coarser than the -J output's.
    """
    error = _IPERF3_ERROR.search(text)
    if error:
        raise ParseError("iperf3", f"iperf3 reported an error: {error.group(1).strip()[:200]}")
    found: dict[str, re.Match[str]] = {}
    for match in _IPERF3_SUMMARY.finditer(text):
        role = match.group("role")
        if role not in found or match.group("id") == "SUM":
            found[role] = match
    if "sender" not in found or "receiver" not in found:
        missing = "sender" if "sender" not in found else "receiver"
        raise ParseError("iperf3", f"no {missing} summary line, so no {missing}_bits_per_s")
    out = {}
    for role, match in sorted(found.items(), reverse=True):
        out[f"{role}_bits_per_s"] = float(match.group("rate")) * _PREFIX[match.group("prefix")]
    retransmits = found["sender"].group("retr")
    if retransmits is not None:
        out["retransmits"] = float(retransmits)
    for name, value in out.items():  # 400 digits read as a float are inf, not an error
        if not math.isfinite(value):
            raise ParseError("iperf3", f"{name} is too large to be a number ({value})")
    return out


def read_iperf3_text(text: str) -> Parsed:
    return _parse_runs("iperf3", text, _IPERF3_START, "an iperf3 run", parse_iperf3_text)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _started(obj: object) -> float | None:
    try:
        return float(obj["start"]["timestamp"]["timesecs"])  # type: ignore[index]
    except (KeyError, TypeError, ValueError, OverflowError):
        return None


def read_iperf3_json(text: str) -> Parsed:
    decoder = json.JSONDecoder()
    samples: list[Sample] = []
    bad: list[BadLine] = []
    index = 0
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            break
        line = _line_of(text, index)
        try:
            obj, end = decoder.raw_decode(text, index)
        except (ValueError, RecursionError) as err:
            why = "nested too deeply" if isinstance(err, RecursionError) else str(err)[:80]
            bad.append(BadLine(line, f"not a JSON object from iperf3 -J ({why})"))
            # resynchronise at the next object that starts a line
            following = text.find("\n{", index + 1)
            if following < 0:
                break
            index = following + 1
            continue
        try:
            metrics = parse_iperf3_json(text[index:end])
        except ParseError as err:
            bad.append(BadLine(line, str(err)))
        else:
            samples.append(Sample(line=line, metrics=metrics, started=_started(obj)))
        index = end
    return Parsed("iperf3-json", samples, bad)
