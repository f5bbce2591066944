"""What the command workload's parameters say: argument lists, how to read the output, the
metrics it declares; every check that refuses a run before anything runs.

A module of its own, imported normally (plug-in files are loaded from their path).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from lab.core.errors import UsageError
from lab.parsers import tools
from lab.run.workload import Direction, Metric, ParamValue

TIMES = (
    Metric("wall_s", "s", "lower"),
    Metric("user_s", "s", "lower"),
    Metric("sys_s", "s", "lower"),
)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}", re.ASCII)
UNIT = re.compile(r"[^\s,:]{1,32}")
MAX_ARGV = 64 * 1024  # characters of argv, setup or clean: Linux's longest argument is 128 KiB
ARGV_HINT = "Quote as in a shell, e.g. -p argv='make -C /src -j2'"
REGEX_HINT = "A Python regular expression with a group per number, e.g. '(?P<rate>[0-9.]+) ops/s'"
JSON_HINT = "e.g. -p json=bps=end.sum_sent.bits_per_second,retr=end.sum_sent.retransmits"
METRICS_HINT = "Declare each as NAME:UNIT:DIRECTION, e.g. -p metrics=rate:ops/s:higher,lat:ms:lower"


@dataclass(frozen=True)
class CommandPlan:
    """``command``'s parameters read: what runs, how its output is read, what is recorded."""

    argv: list[str]
    setup: list[str] | None
    clean: list[str] | None
    parser: str  # "none", tools.REGEX or tools.JSON
    options: dict[str, str]  # the parser's
    extracted: tuple[Metric, ...]  # from the output, in the order `metrics` declares them


def split_argv(param: str, text: str) -> list[str]:
    """``text`` split as a shell would split it, without running one; at most MAX_ARGV
    characters, as shlex builds each word a character at a time (a 1 MB word took 60 s)."""
    if len(text) > MAX_ARGV:
        raise UsageError(
            f"command: {param} is {len(text):,} characters long, over {MAX_ARGV:,}",
            hint="Put a longer command in a script in the guest, and time the script",
        )
    try:
        return shlex.split(text)
    except ValueError as err:  # "No closing quotation", "No escaped character"
        raise UsageError(f"command: {param}={text[:80]!r}: {err}", hint=ARGV_HINT) from None


def declared_metrics(text: str) -> tuple[Metric, ...]:
    """``NAME:UNIT:DIRECTION[,...]`` as metrics, each checked."""
    metrics: list[Metric] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        parts = [part.strip() for part in entry.split(":")]
        if len(parts) != 3:
            raise UsageError(
                f"command: metrics: {entry!r} is not NAME:UNIT:DIRECTION", hint=METRICS_HINT
            )
        name, unit, direction = parts
        if not NAME.fullmatch(name):
            raise UsageError(
                f"command: metrics: {name!r} is not a metric name",
                hint="A name is letters, digits and _, not starting with a digit (as a"
                " regular expression's group name)",
            )
        if any(name == m.name for m in (*TIMES, *metrics)):
            why = "is always recorded" if name in {m.name for m in TIMES} else "is declared twice"
            raise UsageError(f"command: metrics: {name} {why}", hint="Give the metric another name")
        if not UNIT.fullmatch(unit):
            raise UsageError(
                f"command: metrics: {name}'s unit {unit!r} is not a unit",
                hint="A unit is up to 32 characters without spaces, e.g. ops/s, ms, MiB/s, count",
            )
        if direction not in ("lower", "higher"):
            raise UsageError(
                f"command: metrics: {name}'s direction {direction!r} is neither lower nor higher",
                hint="lower when a smaller value is better (times), higher when a larger is"
                " (throughput)",
            )
        metrics.append(Metric(name, unit, cast(Direction, direction)))
    return tuple(metrics)


def json_paths(text: str) -> dict[str, str]:
    """``NAME=PATH[,...]`` as {name: path}."""
    paths: dict[str, str] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, sep, path = (part.strip() for part in entry.partition("="))
        if not sep or not NAME.fullmatch(name) or name in paths:
            raise UsageError(
                f"command: json: {entry!r} is not NAME=PATH with a new metric name",
                hint=JSON_HINT,
            )
        paths[name] = path
    return paths


def read_params(p: Mapping[str, ParamValue]) -> CommandPlan:
    """The resolved parameters read and checked; UsageError for anything that cannot run."""
    argv = split_argv("argv", str(p["argv"] or ""))
    if not argv:
        raise UsageError("command needs the command to time (argv)", hint=ARGV_HINT)
    setup = split_argv("setup", str(p["setup"] or "")) or None
    clean = split_argv("clean", str(p["clean"] or "")) or None
    regex, paths = str(p["regex"] or ""), json_paths(str(p["json"] or ""))
    declared = declared_metrics(str(p["metrics"] or ""))
    if regex and paths:
        raise UsageError(
            "command reads its output with regex or with json, not both",
            hint="Drop one; a regular expression can also read numbers out of JSON",
        )
    parser, options = "none", {}
    if regex:
        parser, options = tools.REGEX, {"pattern": regex}
    elif paths:
        parser, options = tools.JSON, paths
    try:
        tools.parser_for(parser, options)  # what the runner will build: the same checks
    except tools.OptionsError as err:
        raise UsageError(f"command: {err}", hint=REGEX_HINT if regex else JSON_HINT) from None
    extracted = set(re.compile(regex).groupindex) if regex else set(paths)
    names = {m.name for m in declared}
    reader = "regex" if regex else "json"
    problems = []
    if extracted - names:
        problems.append(f"{reader} reads {', '.join(sorted(extracted - names))}, not in metrics")
    if names - extracted:
        unread = ", ".join(sorted(names - extracted))
        nobody = f"{reader} does not read" if regex or paths else "neither regex nor json reads"
        problems.append(f"metrics declares {unread}, which {nobody}")
    if problems:
        raise UsageError(f"command: {'; '.join(problems)}", hint=METRICS_HINT)
    return CommandPlan(argv, setup, clean, parser, options, declared)
