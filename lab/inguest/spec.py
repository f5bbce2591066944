"""SPEC.json: what one start of the runner runs, as data (commands are argument lists).

A workload describes its command as a :class:`Spec` without a range
(:meth:`lab.run.workload.Workload.spec`); the controller adds the range and the attempt base
with :meth:`Spec.for_range`, writes :meth:`Spec.to_json` into the guest, and the runner reads
it back with :func:`parse_spec`, which names the field of any error.

The spec has no version of its own: the runner that reads it is the one the same controller
shipped (its zipapp is named by its hash). ``parser_options`` came with the ``command``
workload; a spec without it is read as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any


class SpecError(Exception):
    """SPEC.json or the runner's command line is not valid; the message names the field."""


@dataclass(frozen=True)
class Spec:
    """One start of the runner: the command, how to read its output, and the range."""

    workload: str
    argv: list[str]
    end_iteration: int = 0  # 0 with start_iteration 1: no range yet (see for_range)
    start_iteration: int = 1
    attempt_base: int = 1
    clean_argv: list[str] | None = None  # untimed, before each attempt, in cwd
    setup_argv: list[str] | None = None  # untimed, once per start, in DIR
    cwd: str | None = None  # relative to DIR; DIR if absent
    env: dict[str, str] = field(default_factory=dict)  # added to the inherited environment
    parser: str = "none"  # one of lab.parsers.tools.parser_names()
    parser_options: dict[str, str] = field(default_factory=dict)  # for a configured parser
    parse_from: str = "stdout"  # or "stderr"
    metrics_from: dict[str, str] = field(default_factory=dict)  # source key -> metric name
    timeout_s: float | None = None  # per command, clean and timed
    max_failures: int | None = None  # failed attempts in this start after which it gives up
    backing: bool = False  # read the guest's THP counters around each attempt (inguest.backing)

    def for_range(
        self, first: int, last: int, *, attempt_base: int = 1, max_failures: int | None = None
    ) -> Spec:
        """This command for iterations ``first..last``, numbering attempts from
        ``attempt_base`` at least."""
        if not 0 <= first <= last:
            raise SpecError(f"iterations {first}..{last} are not a range")
        return replace(
            self, start_iteration=first, end_iteration=last, attempt_base=attempt_base,
            max_failures=max_failures,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


def _is_int(low: int) -> Callable[[object], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _is_argv(v: object) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(a, str) for a in v)


def _is_str(v: object) -> bool:
    return isinstance(v, str) and bool(v)


def _is_map(v: object) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())


def _is_seconds(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and v > 0


CHECKS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "workload": ("a non-empty string", _is_str),
    "argv": ("a non-empty list of strings", _is_argv),
    "end_iteration": ("an integer >= 0", _is_int(0)),
    "start_iteration": ("an integer >= 0", _is_int(0)),
    "attempt_base": ("an integer >= 1", _is_int(1)),
    "clean_argv": ("a non-empty list of strings", _is_argv),
    "setup_argv": ("a non-empty list of strings", _is_argv),
    "cwd": ("a non-empty string", _is_str),
    "env": ("an object of strings", _is_map),
    "parser": ("a non-empty string", _is_str),
    "parser_options": ("an object of strings", _is_map),
    "parse_from": ("'stdout' or 'stderr'", lambda v: v in ("stdout", "stderr")),
    "metrics_from": ("an object of strings", _is_map),
    "timeout_s": ("a positive number of seconds", _is_seconds),
    "max_failures": ("an integer >= 1", _is_int(1)),
    "backing": ("true or false", lambda v: isinstance(v, bool)),
}
assert set(CHECKS) == {f.name for f in fields(Spec)}, "every field of Spec has a check"


def parse_spec(data: object, parser_names: Iterable[str]) -> Spec:
    """Validate a loaded SPEC.json; every error names the field."""
    if not isinstance(data, dict):
        raise SpecError("the spec must be a JSON object")
    unknown = sorted(set(data) - set(CHECKS))
    if unknown:
        raise SpecError(f"unknown spec field(s) {unknown}; known: {sorted(CHECKS)}")
    for name in ("workload", "argv", "end_iteration"):
        if data.get(name) is None:
            raise SpecError(f"spec field {name!r} is missing")
    values = {name: value for name, value in data.items() if value is not None}
    for name, value in values.items():
        want, check = CHECKS[name]
        if not check(value):
            raise SpecError(f"spec field {name!r} must be {want}, not {value!r:.100}")
    spec = Spec(**values)
    names = sorted(parser_names)
    if spec.parser not in names:
        raise SpecError(f"unknown parser {spec.parser!r}; known: {names}")
    if spec.end_iteration < spec.start_iteration:
        raise SpecError(f"end_iteration {spec.end_iteration} < start_iteration")
    return spec
