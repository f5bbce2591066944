"""The journal: one JSON object per line, versioned, written by the runner, read by both sides.

The runner appends it (:mod:`lab.inguest.journalfile`); the runner reads it back to resume
(:mod:`lab.inguest.history`) and the controller reads it to store the attempts
(:mod:`lab.run.ingest`), both through :func:`read_journal` here.

Format history (``"v"`` in every line):

* 1 -- the first version.

A *result* line records one attempt at one iteration, successful or not::

    {"v": 1, "iteration": 7, "attempt": 1, "ok": true, "started": 1795343891.2,
     "ended": 1795344022.8, "wall": 131.55, "user": 1830.1, "sys": 3.2, "exit_status": 0,
     "boot_id": "5c0e...", "metrics": {"total_time_s": 131.5}, "error": null,
     "output_tail": "...last ~2000 characters of stdout then stderr..."}

``ended``, ``wall``, ``user``, ``sys`` and ``exit_status`` are null when there is no child
to measure (it could not be started, or the attempt was interrupted); ``exit_status`` is
negative for a child killed by a signal (``-15`` for SIGTERM). An *event* line has
``"event"`` instead of ``"iteration"``/``"ok"``: ``start``, ``setup``, ``begin`` (an
attempt's timed command is about to start), ``synced`` (every line before this one is on
the guest's disk: see :mod:`lab.inguest.journalfile`), ``gave_up``, ``stopped`` and
``done``.

A line is complete only with its final newline: a partial last line is being written (or
was cut by a crash) and is never parsed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

try:  # the json module's C encoder, called directly by _compact_encoder
    from _json import make_encoder as _make_encoder
except ImportError:  # an interpreter without it
    _make_encoder = None  # type: ignore[assignment,misc]

JOURNAL_VERSION = 1
T = TypeVar("T")
EVENTS = frozenset({"start", "setup", "begin", "synced", "gave_up", "stopped", "done"})
TERMINAL_EVENTS = frozenset({"done", "gave_up", "stopped"})  # the runner ended its start
SYNCED = "synced"
_SYNCED_LINE = b'{"v":%d,"event":"%s"' % (JOURNAL_VERSION, SYNCED.encode())


class JournalError(ValueError):
    """A complete journal line that is not a valid record of a known version."""

    hint = "The journal is damaged; move the line aside by hand or start a new run key"


@dataclass(frozen=True)
class JournalEntry:
    """One attempt at one iteration, as the runner recorded it; failed attempts included."""

    iteration: int
    attempt: int
    ok: bool
    started: float
    ended: float | None
    wall: float | None
    user: float | None
    sys: float | None
    exit_status: int | None
    boot_id: str
    metrics: Mapping[str, float] = field(default_factory=dict, hash=False)
    error: str | None = None
    output_tail: str = ""

    @property
    def key(self) -> tuple[int, int]:
        """What makes storing an entry idempotent: ``(iteration, attempt)``."""
        return (self.iteration, self.attempt)

    def line(self) -> bytes:
        # Each field by name: dataclasses.asdict's deep copy was a tenth of the runner's own
        # time under emulation, and a loop over fields() with getattr a third of this line's.
        # A test checks that every field is here.
        return encode({
            "iteration": self.iteration, "attempt": self.attempt, "ok": self.ok,
            "started": self.started, "ended": self.ended, "wall": self.wall,
            "user": self.user, "sys": self.sys, "exit_status": self.exit_status,
            "boot_id": self.boot_id, "metrics": dict(self.metrics), "error": self.error,
            "output_tail": self.output_tail,
        })  # fmt: skip


@dataclass(frozen=True)
class JournalEvent:
    """A line about the runner rather than an attempt; ``fields`` holds the whole line."""

    event: str
    time: float | None
    iteration: int | None = None
    attempt: int | None = None
    fields: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)


def _not_json(value: object) -> object:
    raise TypeError(f"a {type(value).__name__} cannot be written to the journal")


def _compact_encoder() -> Callable[[Any], str]:
    """Compact JSON text, as ``json.dumps(record, separators=(",", ":"))`` writes it.

    The json module's C encoder, made once and called directly: ``JSONEncoder.encode`` runs
    a page of Python per call to make a new one, which under emulation cost 0.1 ms per
    journal line, a twentieth of what the runner adds to an iteration of `null`. The
    pure-Python encoder where there is no C one.
    """
    if _make_encoder is None:
        return json.JSONEncoder(separators=(",", ":")).encode
    # no circular-reference check (a record holds no cycle), ASCII only, and NaN written as
    # the json module writes it by default
    chunks = _make_encoder(None, _not_json, json.encoder.encode_basestring_ascii, None,
                           ":", ",", False, False, True)  # fmt: skip
    return lambda record: "".join(chunks(record, 0))


_COMPACT = _compact_encoder()


def encode(record: Mapping[str, Any]) -> bytes:
    """One journal line: the record with its version, compact, and its newline."""
    return (_COMPACT({"v": JOURNAL_VERSION, **record}) + "\n").encode()


def parse_journal_line(line: str) -> JournalEntry | JournalEvent | None:
    """One line with its newline -> a record; ``None`` for a partial or blank line.

    Raises :class:`JournalError` for a complete line that is not a valid record.
    """
    if not line.endswith("\n") or not line.strip():
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as err:
        raise JournalError(f"journal line is not JSON ({err}): {line[:80]!r}") from None
    if not isinstance(data, dict):
        raise _invalid("the line is not a JSON object", line)
    version = data.get("v")
    if version != JOURNAL_VERSION:
        raise JournalError(
            f"journal line has version {version!r}; this lab reads version {JOURNAL_VERSION}"
            " (use the same lab version for the controller and the runner it copies in)"
        )
    if "event" in data:
        return JournalEvent(
            event=_need(_str(data, "event", line), "event", line),
            time=_num(data, "time", line),
            iteration=_int(data, "iteration", line),
            attempt=_int(data, "attempt", line),
            fields=data,
        )
    metrics = data.get("metrics")
    if not isinstance(metrics, dict):
        raise _invalid("'metrics' is not an object", line)
    return JournalEntry(
        iteration=_need(_int(data, "iteration", line), "iteration", line),
        attempt=_need(_int(data, "attempt", line), "attempt", line),
        ok=_bool(data, "ok", line),
        started=_need(_num(data, "started", line), "started", line),
        ended=_num(data, "ended", line),
        wall=_num(data, "wall", line),
        user=_num(data, "user", line),
        sys=_num(data, "sys", line),
        exit_status=_int(data, "exit_status", line),
        boot_id=_need(_str(data, "boot_id", line), "boot_id", line),
        metrics={str(name): _need(_num(metrics, name, line), name, line) for name in metrics},
        error=_str(data, "error", line),
        output_tail=_str(data, "output_tail", line) or "",
    )


def read_journal(
    text: str, on_bad: Callable[[int, JournalError], None] | None = None
) -> list[JournalEntry | JournalEvent]:
    """Every complete line of ``text`` parsed, in order; a trailing partial line is left out.

    A bad line raises :class:`JournalError` naming its number, unless ``on_bad`` is given:
    then it is told the line number and the error, and the line is skipped.
    """
    records: list[JournalEntry | JournalEvent] = []
    parts = text.split("\n")  # only "\n" ends a line: str.splitlines() knows other ends too
    lines = [part + "\n" for part in parts[:-1]] + [parts[-1]]
    for number, line in enumerate(lines, start=1):
        try:
            record = parse_journal_line(line)
        except JournalError as err:
            if on_bad is None:
                raise JournalError(f"line {number}: {err}") from None
            on_bad(number, err)
            continue
        if record is not None:
            records.append(record)
    return records


def complete_length(data: str | bytes) -> int:
    """How much of ``data`` is complete lines."""
    if isinstance(data, str):
        return data.rfind("\n") + 1
    return data.rfind(b"\n") + 1


def durable_length(data: bytes) -> int:
    """How much of ``data`` (a journal read from its start or from a line's start) the
    guest's disk is known to hold: everything before the start of its last ``synced`` line.

    The controller reads no further, so nothing it stores can be taken back by a guest
    crash; its next read starts at that ``synced`` line, which is where a crash would have
    cut the journal (see :mod:`lab.inguest.journalfile`).
    """
    end = complete_length(data)
    while end > 0:
        start = data.rfind(b"\n", 0, end - 1) + 1
        if data.startswith(_SYNCED_LINE, start):
            return start
        end = start
    return 0


def _invalid(problem: str, line: str) -> JournalError:
    return JournalError(
        f"journal line is not a valid record: {problem}: {line[:80]!r}"
        " (use the same lab version for the controller and the runner it copies in)"
    )


def _need(value: T | None, key: str, line: str) -> T:
    if value is None:
        raise _invalid(f"{key!r} is missing", line)
    return value


def _num(data: Mapping[str, Any], key: str, line: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(f"{key!r} should be a finite number, not {value!r}", line)
    try:
        number = float(value)  # an integer past a float's range raises OverflowError
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise _invalid(f"{key!r} should be a finite number, not {str(value)[:40]}", line)
    return number


def _int(data: Mapping[str, Any], key: str, line: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(f"{key!r} should be an integer, not {value!r}", line)
    return value


def _str(data: Mapping[str, Any], key: str, line: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _invalid(f"{key!r} should be a string, not {value!r}", line)
    return value


def _bool(data: Mapping[str, Any], key: str, line: str) -> bool:
    value = data.get(key)
    if not isinstance(value, bool):
        raise _invalid(f"{key!r} should be true or false, not {value!r}", line)
    return value
