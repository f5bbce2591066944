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

import io
import json
import math
import re
from collections.abc import Iterable, Iterator

from lab.importers.records import BadLine, Item, Parsed, Sample, collect
from lab.parsers.tools import (
    ParseError,
    Parser,
    parse_bash_time,
    parse_iperf3_json,
    parse_sysbench_memory,
)

MAX_RUN = 16 << 20  # characters of one run; an hour of iperf3 -J at 1 s intervals is ~4 MiB

_TIME_KEYWORD = re.compile(r"^\s*(real|user|sys)\b")


def _time_block(block: list[tuple[int, str]]) -> Item:
    start, end = block[0][0], block[-1][0]
    try:
        metrics = parse_bash_time("\n".join(line for _, line in block))
    except ParseError as err:
        return BadLine(start, f"{err} (in the block at lines {start}–{end})")
    return Sample(line=start, metrics=metrics)


def time_samples(lines: Iterable[str]) -> Iterator[Item]:
    """bash ``time`` blocks (``real``, ``user``, ``sys``), each a Sample at its first line."""
    block: list[tuple[int, str]] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        match = _TIME_KEYWORD.match(line)
        if match is None:
            if block:
                yield _time_block(block)
                block = []
            yield BadLine(number, f"not a line of `time` output: {line.strip()[:60]!r}")
            continue
        if match.group(1) == "real":
            if block:
                yield _time_block(block)
                block = []
        elif not block:
            yield BadLine(number, f"{match.group(1)} line without a real line before it")
            continue
        block.append((number, line))
        if len(block) == 3:
            yield _time_block(block)
            block = []
    if block:
        yield _time_block(block)


def read_time(text: str) -> Parsed:
    return collect("time", time_samples(io.StringIO(text)))


def _run(first: int, lines: list[str], parse: Parser) -> Item:
    try:
        return Sample(line=first, metrics=parse("\n".join(lines) + "\n"))
    except ParseError as err:
        return BadLine(first, str(err))


def run_samples(
    lines: Iterable[str], start: re.Pattern[str], what: str, parse: Parser
) -> Iterator[Item]:
    """Runs that each begin with a line ``start`` matches, each parsed by ``parse`` once the
    next begins; non-blank lines before the first run are bad, and so is a run past MAX_RUN."""
    run: list[str] = []
    first = size = 0
    dropping = False  # inside a run too long: its lines are left out up to the next run
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if start.match(line):
            if run:
                yield _run(first, run, parse)
            run, first, size, dropping = [line], number, len(line), False
        elif dropping:
            continue
        elif run:
            run.append(line)
            size += len(line) + 1
            if size > MAX_RUN:
                yield BadLine(first, f"{what} longer than {MAX_RUN >> 20} MiB, so not one run")
                run, dropping = [], True
        elif line.strip():
            yield BadLine(number, f"not part of {what}: {line.strip()[:60]!r}")
    if run:
        yield _run(first, run, parse)


_SYSBENCH_BANNER = re.compile(r"^sysbench [0-9]")


def sysbench_samples(lines: Iterable[str]) -> Iterator[Item]:
    return run_samples(lines, _SYSBENCH_BANNER, "a sysbench report", parse_sysbench_memory)


def read_sysbench(text: str) -> Parsed:
    return collect("sysbench", sysbench_samples(io.StringIO(text)))


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


def iperf3_text_samples(lines: Iterable[str]) -> Iterator[Item]:
    return run_samples(lines, _IPERF3_START, "an iperf3 run", parse_iperf3_text)


def read_iperf3_text(text: str) -> Parsed:
    return collect("iperf3", iperf3_text_samples(io.StringIO(text)))


def _started(obj: object) -> float | None:
    try:
        return float(obj["start"]["timestamp"]["timesecs"])  # type: ignore[index]
    except (KeyError, TypeError, ValueError, OverflowError):
        return None


class _Objects:
    """``iperf3 -J`` objects one after another, decoded as their text comes.

    A decode is tried where one may have ended: before a line that starts with ``{`` after a
    line that ends with ``}`` (how iperf3 prints them), and at the end. An object cut short is
    named at its first line, and decoding starts again at the next line that starts with ``{``.
    """

    def __init__(self) -> None:
        self.decoder = json.JSONDecoder()
        self.text = ""  # not decoded yet
        self.line = 1  # of text's first character

    def decode(self, final: bool) -> Iterator[Item]:
        """The objects in ``text``; unless ``final``, one that may yet go on is kept."""
        text, index = self.text, 0
        counted, line = 0, self.line  # line is the line of text[counted]
        while True:
            while index < len(text) and text[index].isspace():
                index += 1
            if index >= len(text):
                break
            line += text.count("\n", counted, index)
            counted = index
            try:
                obj, end = self.decoder.raw_decode(text, index)
            except (ValueError, RecursionError) as err:
                cut = isinstance(err, json.JSONDecodeError) and err.pos >= len(text.rstrip())
                if cut and not final:
                    break  # the rest of it may still come
                why = "nested too deeply" if isinstance(err, RecursionError) else str(err)[:80]
                yield BadLine(line, f"not a JSON object from iperf3 -J ({why})")
                following = text.find("\n{", index + 1)  # start again at the next object
                index = len(text) if following < 0 else following + 1
                continue
            try:
                metrics = parse_iperf3_json(text[index:end])
            except ParseError as err:
                yield BadLine(line, str(err))
            else:
                yield Sample(line=line, metrics=metrics, started=_started(obj))
            index = end
        self.line = line + text.count("\n", counted, index)
        self.text = text[index:]


def iperf3_json_samples(lines: Iterable[str]) -> Iterator[Item]:
    objects = _Objects()
    pending: list[str] = []  # lines since the last decode
    size = 0  # characters not decoded yet
    ended = False  # the last non-blank line ends with "}"
    dropping = False  # inside an object too long: its lines are left out up to the next one
    for number, line in enumerate(lines, start=1):
        if line.startswith("{") and (ended or dropping):
            if dropping:
                objects.line, dropping = number, False
            objects.text += "".join(pending)
            pending = []
            yield from objects.decode(final=False)
            size = len(objects.text)
        if dropping:
            continue
        pending.append(line)
        size += len(line)
        if size > MAX_RUN:
            objects.text += "".join(pending)
            pending = []
            yield from objects.decode(final=False)
            if len(objects.text) > MAX_RUN:
                yield BadLine(objects.line, f"an iperf3 -J object longer than {MAX_RUN >> 20} MiB")
                objects.text, dropping = "", True
            size = len(objects.text)
        if line.strip():
            ended = line.rstrip().endswith("}")
    objects.text += "".join(pending)
    yield from objects.decode(final=True)


def read_iperf3_json(text: str) -> Parsed:
    return collect("iperf3-json", iperf3_json_samples(io.StringIO(text)))
