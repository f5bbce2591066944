"""Parsers of benchmark tools' real output: text in, a flat ``{name: float}`` out.

Standard library only: this file goes into each guest in the runner's zipapp
(``lab/run/shipping.py``) and the runner parses there, so a sample is parsed once, where it
was made.

Every parser raises :class:`ParseError` -- and nothing else -- when the text is not what the
tool prints, with a message naming the field it could not find. Values are finite floats;
counts (operations, retransmits) are floats too, so every metric has one type.

Most parsers read one tool's output (:data:`PARSERS`); the ``regex`` and ``json`` parsers
(:data:`CONFIGURED`) read any command's, as the spec's ``parser_options`` say, and
:func:`parser_for` builds either kind, refusing bad options with :class:`OptionsError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal

Parser = Callable[[str], dict[str, float]]

_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_FLAGS = re.MULTILINE | re.ASCII


class ParseError(ValueError):
    """The text is not the output the parser expects; ``str()`` says which field is missing."""

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(f"{tool}: {message}")
        self.tool = tool


def _finite(tool: str, field: str, value: float) -> float:
    if not math.isfinite(value):
        raise ParseError(tool, f"{field} is not a finite number ({value!r})")
    return value


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    matches = list(pattern.finditer(text))
    return matches[-1] if matches else None


def _fatal_note(text: str) -> str:
    """The tool's own error line, if it printed one, to say *why* a field is missing."""
    for line in text.splitlines():
        if line.startswith("FATAL:"):
            return f"; the tool said: {line.strip()[:200]}"
    return ""


# -- sysbench: the lines every test prints --------------------------------------------------

# (field, label, pattern, group): a line sysbench prints and where its number is.
_Field = tuple[str, str, re.Pattern[str], int]

_TOTAL_TIME: _Field = (
    "total_time_s",
    "total time",
    re.compile(r"^\s*total time:\s*" + _NUM + r"s\s*$", _FLAGS),
    1,
)
_EVENTS: _Field = (
    "events",
    "total number of events",
    re.compile(r"^\s*total number of events:\s*" + _NUM + r"\s*$", _FLAGS),
    1,
)
_LATENCY_BLOCK = re.compile(r"^Latency \(ms\):[ \t]*\n((?:[ \t]+\S.*\n?)*)", _FLAGS)
_LATENCY_LINE = re.compile(
    r"^\s*(min|avg|max|sum|([0-9]+)th percentile):\s*" + _NUM + r"\s*$", _FLAGS
)


def _sysbench_fields(
    tool: str, fields: tuple[_Field, ...], required: tuple[str, ...], text: str
) -> dict[str, float]:
    """Each of ``fields`` found in ``text`` (the last line of its kind); a missing one of
    ``required`` is a ParseError naming its line and the tool's FATAL line if any."""
    out: dict[str, float] = {}
    for field, label, pattern, group in fields:
        match = _last(pattern, text)
        if match is None:
            if field in required:
                raise ParseError(tool, f"no {label!r} line, so no {field}{_fatal_note(text)}")
            continue
        out[field] = _finite(tool, field, float(match.group(group)))
    return out


def _sysbench_latency(tool: str, text: str) -> dict[str, float]:
    """The "Latency (ms):" block as ``latency_{min,avg,max,sum}_ms`` and ``latency_p{N}_ms``
    for its "Nth percentile" line; empty if there is no such block."""
    out: dict[str, float] = {}
    block = _last(_LATENCY_BLOCK, text)
    if block is not None:
        for line in _LATENCY_LINE.finditer(block.group(1)):
            name = f"p{line.group(2)}" if line.group(2) else line.group(1)
            field = f"latency_{name}_ms"
            out[field] = _finite(tool, field, float(line.group(3)))
    return out


# -- sysbench memory ------------------------------------------------------------------------

SYSBENCH = "sysbench memory"

# The first two are required, the rest recorded if present.
_SYSBENCH_FIELDS: tuple[_Field, ...] = (
    _TOTAL_TIME,
    (
        "throughput_mib_s",
        "MiB transferred (... MiB/sec)",
        re.compile(r"^\s*" + _NUM + r" MiB transferred \(\s*" + _NUM + r" MiB/sec\)", _FLAGS),
        2,
    ),
    (
        "transferred_mib",
        "MiB transferred",
        re.compile(r"^\s*" + _NUM + r" MiB transferred", _FLAGS),
        1,
    ),
    (
        "operations",
        "Total operations",
        re.compile(r"^\s*Total operations:\s*" + _NUM, _FLAGS),
        1,
    ),
    (
        "operations_per_s",
        "Total operations (... per second)",
        re.compile(r"^\s*Total operations:\s*[0-9]+\s*\(\s*" + _NUM + r" per second\)", _FLAGS),
        1,
    ),
    _EVENTS,
)
_SYSBENCH_REQUIRED = ("total_time_s", "throughput_mib_s")


def parse_sysbench_memory(text: str) -> dict[str, float]:
    """``sysbench memory ... run`` output (1.0.x).

    Required: ``total_time_s`` (the "total time" line) and ``throughput_mib_s`` (MiB/sec).
    Recorded when present: ``transferred_mib``, ``operations``, ``operations_per_s``,
    ``events`` and the latency block as ``latency_{min,avg,max,sum}_ms`` and
    ``latency_p{N}_ms`` for the "Nth percentile" line.
    """
    out = _sysbench_fields(SYSBENCH, _SYSBENCH_FIELDS, _SYSBENCH_REQUIRED, text)
    out.update(_sysbench_latency(SYSBENCH, text))
    return out


# -- sysbench OLTP (oltp_read_only, oltp_point_select, oltp_read_write) ---------------------

SYSBENCH_OLTP = "sysbench oltp"


def _per_sec(field: str, label: str, group: int) -> _Field:
    """A line like ``transactions:   4874   (971.60 per sec.)``: group 1 the count, 2 the rate."""
    pattern = r"^\s*" + label + r":\s*" + _NUM + r"\s*\(\s*" + _NUM + r" per sec\.\)"
    return (field, f"{label}: N (... per sec.)", re.compile(pattern, _FLAGS), group)


def _count(field: str, label: str) -> _Field:
    return (field, label, re.compile(r"^\s*" + label + r":\s*" + _NUM + r"\b", _FLAGS), 1)


_OLTP_FIELDS: tuple[_Field, ...] = (
    _per_sec("transactions_per_s", "transactions", 2),
    _per_sec("queries_per_s", "queries", 2),
    _count("errors", "ignored errors"),
    _count("reconnects", "reconnects"),
    _TOTAL_TIME,
    _per_sec("transactions", "transactions", 1),
    _per_sec("queries", "queries", 1),
    _count("queries_read", "read"),
    _count("queries_write", "write"),
    _count("queries_other", "other"),
    _EVENTS,
)
_OLTP_REQUIRED = ("transactions_per_s", "queries_per_s", "errors", "reconnects", "total_time_s")


def parse_sysbench_oltp(text: str) -> dict[str, float]:
    """``sysbench oltp_* ... run`` output (1.0.x, any of its OLTP scripts and databases).

    Required: ``transactions_per_s`` and ``queries_per_s`` (the rates on the "transactions"
    and "queries" lines), ``errors`` (the "ignored errors" count: errors sysbench was told
    to retry, such as deadlocks), ``reconnects``, ``total_time_s`` and ``latency_avg_ms``.
    Recorded when present: the counts ``transactions``, ``queries``, ``queries_read``,
    ``queries_write``, ``queries_other`` and ``events``, and the rest of the latency block
    (``latency_p{N}_ms`` for ``--percentile=N``, 95 by default).
    """
    out = _sysbench_fields(SYSBENCH_OLTP, _OLTP_FIELDS, _OLTP_REQUIRED, text)
    out.update(_sysbench_latency(SYSBENCH_OLTP, text))
    if "latency_avg_ms" not in out:
        raise ParseError(
            SYSBENCH_OLTP,
            f"no 'avg' line under 'Latency (ms):', so no latency_avg_ms{_fatal_note(text)}",
        )
    return out


# -- iperf3 -J ------------------------------------------------------------------------------

IPERF3 = "iperf3 -J"


def _json_number(section: Mapping[str, object], path: str, key: str) -> float | None:
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(IPERF3, f"{path}.{key} is not a number ({value!r:.80})")
    try:
        number = float(value)
    except OverflowError:
        raise ParseError(IPERF3, f"{path}.{key} is too large ({path}.{key})") from None
    return _finite(IPERF3, f"{path}.{key}", number)


def _json_section(data: Mapping[str, object], *path: str) -> Mapping[str, object]:
    node: object = data
    for depth, key in enumerate(path):
        if not isinstance(node, dict) or not isinstance(node.get(key), dict):
            where = ".".join(path[: depth + 1])
            raise ParseError(IPERF3, f"no {where} object in the output (TCP results expected)")
        node = node[key]
    assert isinstance(node, dict)
    return node


def parse_iperf3_json(text: str) -> dict[str, float]:
    """``iperf3 -c HOST -J`` client output (TCP).

    ``sender_bits_per_s`` and ``receiver_bits_per_s`` from ``end.sum_sent`` and
    ``end.sum_received`` (required), ``retransmits`` from ``end.sum_sent`` when the platform
    reports it (Linux does). An ``error`` member (iperf3's way of failing in JSON mode)
    becomes a ParseError carrying iperf3's message.
    """
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ParseError(
            IPERF3, f"output is not JSON, was it run with -J? ({str(err)[:120]})"
        ) from None
    if not isinstance(data, dict):
        raise ParseError(IPERF3, "output is not a JSON object")
    error = data.get("error")
    if error:
        raise ParseError(IPERF3, f"iperf3 reported an error: {str(error)[:300]}")
    out: dict[str, float] = {}
    for field, section, key in (
        ("sender_bits_per_s", "sum_sent", "bits_per_second"),
        ("receiver_bits_per_s", "sum_received", "bits_per_second"),
        ("retransmits", "sum_sent", "retransmits"),
    ):
        node = _json_section(data, "end", section)
        value = _json_number(node, f"end.{section}", key)
        if value is None:
            if field == "retransmits":
                continue
            raise ParseError(IPERF3, f"no end.{section}.{key}, so no {field}")
        out[field] = value
    return out


# -- the shell's time -----------------------------------------------------------------------

TIME = "time"

_TIME_LINE = re.compile(
    r"^[ \t]*(real|user|sys)[ \t]+(?:([0-9]+)h)?(?:([0-9]+)m)?([0-9]+(?:[.,][0-9]*)?)s?[ \t]*$",
    _FLAGS,
)


def parse_bash_time(text: str) -> dict[str, float]:
    """The ``real``/``user``/``sys`` lines of bash's ``time`` (or ``time -p``).

    Handles ``real\\t2m27.08s``, ``real 0m3.702s``, ``real 3.70`` and a decimal comma; the
    last line of each kind wins. Returns ``real_s``, ``user_s`` and ``sys_s``, all required.
    """
    found: dict[str, float] = {}
    for match in _TIME_LINE.finditer(text):
        hours, minutes, seconds = match.group(2), match.group(3), match.group(4)
        try:
            total = (
                Decimal(hours or 0) * 3600
                + Decimal(minutes or 0) * 60
                + Decimal(seconds.replace(",", "."))
            )
        except ArithmeticError:  # decimal's errors, e.g. an absurd number of digits
            raise ParseError(TIME, f"{match.group(1)} is not a duration") from None
        field = f"{match.group(1)}_s"
        found[field] = _finite(TIME, field, float(total))
    for field in ("real_s", "user_s", "sys_s"):
        if field not in found:
            label = field[:-2]
            raise ParseError(TIME, f"no {label!r} line, so no {field}")
    return {field: found[field] for field in ("real_s", "user_s", "sys_s")}


# -- lab-stream (lab/run/workloads/stream.c) -----------------------------------------------

STREAM = "lab-stream"
STREAM_VERSION = "1"
STREAM_KERNELS = ("copy", "scale", "add", "triad")

_STREAM_HEAD = re.compile(r"^lab-stream ([0-9]+)(?: .*)?$", _FLAGS)
_STREAM_CHECK = re.compile(r"^check (.*)$", _FLAGS)
_STREAM_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?", re.ASCII)


def _stream_number(line: str, key: str) -> float | None:
    """The value of ``key=NUMBER`` among the words of ``line``; None if absent."""
    for word in line.split()[1:]:
        name, _, value = word.partition("=")
        if name == key:
            if not _STREAM_NUMBER.fullmatch(value):
                word = f"{line.split()[0]} {key}={value[:40]!r}"
                raise ParseError(STREAM, f"{word} is not a number >= 0")
            return _finite(STREAM, key, float(value))
    return None


def parse_lab_stream(text: str) -> dict[str, float]:
    """The output of the lab's own STREAM program (version 1, see its source for the format).

    Required, per kernel K of copy, scale, add and triad: ``K_mb_s`` (the best rate over the
    counted repetitions, STREAM's own figure) and ``K_mean_mb_s`` (their mean rate), in MB/s
    (10^6 bytes); and a final ``check ok`` line, which the program prints only when every
    element holds what the kernels must leave there.
    """
    head = _last(_STREAM_HEAD, text)
    if head is None:
        raise ParseError(STREAM, "no 'lab-stream 1' line: not the output of lab-stream")
    if head.group(1) != STREAM_VERSION:
        raise ParseError(
            STREAM, f"output version {head.group(1)}; this lab reads version {STREAM_VERSION}"
        )
    body = text[head.start() :]
    lines = {line.split()[0]: line for line in body.splitlines() if line.split()}
    check = _STREAM_CHECK.search(body)
    if check is None:
        raise ParseError(STREAM, "no 'check' line: the program stopped before its end")
    if check.group(1).strip() != "ok":
        raise ParseError(STREAM, f"check {check.group(1).strip()[:200]}")
    out: dict[str, float] = {}
    for kernel in STREAM_KERNELS:
        if kernel not in lines:
            raise ParseError(STREAM, f"no {kernel!r} line, so no {kernel}_mb_s")
        for key, field in (("best_mb_s", f"{kernel}_mb_s"), ("mean_mb_s", f"{kernel}_mean_mb_s")):
            value = _stream_number(lines[kernel], key)
            if value is None:
                raise ParseError(STREAM, f"no {key} on the {kernel!r} line, so no {field}")
            out[field] = value
    return out


def parse_nothing(text: str) -> dict[str, float]:
    """For workloads whose only metrics are the runner's own timings."""
    return {}


PARSERS: dict[str, Parser] = {
    "sysbench-memory": parse_sysbench_memory,
    "sysbench-oltp": parse_sysbench_oltp,
    "iperf3": parse_iperf3_json,
    "time": parse_bash_time,
    "lab-stream": parse_lab_stream,
    "none": parse_nothing,
}


# -- parsers the spec configures: a user's regular expression or JSON paths -----------------


class OptionsError(ValueError):
    """A parser's options (the spec's ``parser_options``) are not valid; ``str()`` says why."""


REGEX = "regex"
JSON = "json"


def regex_parser(options: Mapping[str, str]) -> Parser:
    """A parser of ``options["pattern"]``, a regular expression with named groups.

    It is searched with ``re.MULTILINE`` and the last match counts; each named group is a
    field named after it, and must have matched a number (Python's ``float`` syntax).
    """
    unknown = sorted(set(options) - {"pattern"})
    if unknown:
        raise OptionsError(f"regex: unknown option(s) {unknown}; it takes 'pattern'")
    pattern = options.get("pattern", "")
    if not pattern:
        raise OptionsError("regex: no pattern")
    try:
        compiled = re.compile(pattern, re.MULTILINE)
    except (re.error, OverflowError, RecursionError) as err:
        raise OptionsError(f"regex {pattern[:100]!r} does not compile: {err}") from None
    if not compiled.groupindex:
        raise OptionsError(
            f"regex {pattern[:100]!r} has no named group: name each number (?P<NAME>...)"
        )
    names = list(compiled.groupindex)

    def parse(text: str) -> dict[str, float]:
        match = _last(compiled, text)
        if match is None:
            raise ParseError(REGEX, f"{pattern[:100]!r} matches nothing in the output")
        out: dict[str, float] = {}
        for name in names:
            value = match.group(name)
            if value is None:
                raise ParseError(REGEX, f"group {name} took part in no match, so no {name}")
            try:
                number = float(value)
            except ValueError:
                raise ParseError(
                    REGEX, f"group {name} matched {value[:60]!r}, not a number"
                ) from None
            out[name] = _finite(REGEX, name, number)
        return out

    return parse


def json_parser(options: Mapping[str, str]) -> Parser:
    """A parser of output that is one JSON document: ``options`` maps each field to its
    path, keys joined by dots, a number indexing a list (``results.0.ops_per_s``)."""
    if not options:
        raise OptionsError("json: no NAME=PATH")
    paths: dict[str, list[str]] = {}
    for name, path in options.items():
        keys = path.split(".")
        if not all(keys):
            raise OptionsError(
                f"json path {path!r} of {name} has an empty key: join keys with single dots,"
                " e.g. end.sum_sent.bits_per_second"
            )
        paths[name] = keys

    def parse(text: str) -> dict[str, float]:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as err:
            raise ParseError(JSON, f"the output is not JSON ({str(err)[:120]})") from None
        return {name: _json_at(data, keys) for name, keys in paths.items()}

    return parse


def _json_at(data: object, keys: list[str]) -> float:
    node = data
    for depth, key in enumerate(keys, 1):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise ParseError(JSON, f"the output has no {'.'.join(keys[:depth])}")
    path = ".".join(keys)
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise ParseError(JSON, f"{path} is not a number ({node!r:.60})")
    try:
        return _finite(JSON, path, float(node))
    except OverflowError:
        raise ParseError(JSON, f"{path} is too large") from None


CONFIGURED: dict[str, Callable[[Mapping[str, str]], Parser]] = {
    REGEX: regex_parser,
    JSON: json_parser,
}


def parser_names() -> list[str]:
    """Every parser a spec may name."""
    return sorted({*PARSERS, *CONFIGURED})


def parser_for(name: str, options: Mapping[str, str] | None = None) -> Parser:
    """The parser ``name``, configured by ``options`` if it takes any; OptionsError if
    they are not valid (checked here once, not at every sample)."""
    options = options or {}
    if name in CONFIGURED:
        return CONFIGURED[name](options)
    if name not in PARSERS:
        raise OptionsError(f"unknown parser {name!r}; known: {parser_names()}")
    if options:
        raise OptionsError(f"parser {name!r} takes no options, not {sorted(options)}")
    return PARSERS[name]
