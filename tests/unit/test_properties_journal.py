"""Property tests of the journal reader: any text is records or a JournalError, never a crash.

Generated records, written the way ``guest/runner.py`` writes them (one JSON object and a
newline), read back to the same values; a partial last line is never read.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import fields
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.inguest.journal import (
    EVENTS,
    JOURNAL_VERSION,
    JournalEntry,
    JournalError,
    JournalEvent,
    complete_length,
    encode,
    parse_journal_line,
    read_journal,
)

FAST = settings(max_examples=60, deadline=None)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
OPT_FINITE = st.none() | FINITE
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)  # fmt: skip
ENTRIES = st.fixed_dictionaries(
    {
        "v": st.just(JOURNAL_VERSION),
        "iteration": st.integers(1, 10**6),
        "attempt": st.integers(1, 100),
        "ok": st.booleans(),
        "started": FINITE,
        "ended": OPT_FINITE,
        "wall": OPT_FINITE,
        "user": OPT_FINITE,
        "sys": OPT_FINITE,
        "exit_status": st.none() | st.integers(-64, 255),
        "boot_id": st.text(max_size=36),
        "metrics": st.dictionaries(st.text(max_size=12), FINITE, max_size=4),
        "error": st.none() | st.text(max_size=40),
        "output_tail": st.text(max_size=80),
    }
)
EVENT_LINES = st.fixed_dictionaries(
    {"v": st.just(JOURNAL_VERSION), "event": st.sampled_from(sorted(EVENTS)), "time": OPT_FINITE},
    optional={
        "iteration": st.integers(1, 1000),
        "attempt": st.integers(1, 10),
        "pid": st.integers(),
    },
)  # fmt: skip


def line(record: dict[str, Any]) -> str:
    return json.dumps(record) + "\n"


@FAST
@given(st.text(max_size=300))
def test_any_text_is_records_or_a_journal_error(text: str) -> None:
    try:
        records = read_journal(text)
    except JournalError as err:
        assert str(err).startswith("line ")
        return
    assert all(isinstance(r, JournalEntry | JournalEvent) for r in records)


@FAST
@given(JSON)
def test_any_json_line_is_a_record_or_a_journal_error(value: Any) -> None:
    with contextlib.suppress(JournalError):
        parse_journal_line(json.dumps(value) + "\n")


@FAST
@given(ENTRIES)
def test_damaged_entries_are_journal_errors(entry: dict[str, Any]) -> None:
    for key, bad in (("iteration", "7"), ("ok", 1), ("started", "now"), ("metrics", [])):
        try:
            parse_journal_line(line({**entry, key: bad}))
        except JournalError as err:
            assert repr(key) in str(err) or "metrics" in str(err)
        else:
            raise AssertionError(f"{key}={bad!r} was accepted")


@FAST
@given(st.lists(ENTRIES | EVENT_LINES, max_size=8), st.text(max_size=30))
def test_generated_journals_read_back_and_a_partial_line_is_left(
    records: list[dict[str, Any]], partial: str
) -> None:
    partial = partial.replace("\n", "")
    text = "".join(line(r) for r in records)
    read = read_journal(text + partial)  # the partial line is being written: never parsed
    assert len(read) == len(records)
    assert complete_length(text + partial) == len(text)
    assert complete_length((text + partial).encode()) == len(text.encode())
    for got, want in zip(read, records, strict=True):
        if isinstance(got, JournalEvent):
            assert got.event == want["event"] and got.time == want["time"]
            assert got.iteration == want.get("iteration")
            continue
        assert got.key == (want["iteration"], want["attempt"])
        assert (got.ok, got.started, got.ended, got.wall) == (
            want["ok"], want["started"], want["ended"], want["wall"],
        )  # fmt: skip
        assert (got.user, got.sys, got.exit_status) == (
            want["user"],
            want["sys"],
            want["exit_status"],
        )
        assert (got.boot_id, got.error, got.output_tail) == (
            want["boot_id"], want["error"], want["output_tail"],
        )  # fmt: skip
        assert dict(got.metrics) == want["metrics"]


@FAST
@given(ENTRIES, st.sampled_from(["started", "wall", "metric"]), st.integers(309, 4000))
def test_numbers_past_a_float_are_journal_errors(
    entry: dict[str, Any], key: str, digits: int
) -> None:
    """Found a bug: an integer too large for a float raised OverflowError."""
    huge = int("9" * digits)
    damaged = {**entry, "metrics": {"m": huge}} if key == "metric" else {**entry, key: huge}
    try:
        parse_journal_line(line(damaged))
    except JournalError as err:
        assert "should be a finite number" in str(err)
    else:
        raise AssertionError("accepted")


@FAST
@given(ENTRIES)
def test_an_entry_the_runner_writes_reads_back_the_same(entry: dict[str, Any]) -> None:
    record = parse_journal_line(line(entry))
    assert isinstance(record, JournalEntry)
    written = record.line()
    assert parse_journal_line(written.decode()) == record
    # every field is written, so a field added to JournalEntry cannot be left out
    assert set(json.loads(written)) == {"v", *(f.name for f in fields(JournalEntry))}


@FAST
@given(st.dictionaries(st.text(max_size=8), JSON, max_size=6))
def test_a_line_is_what_json_dumps_writes(record: dict[str, Any]) -> None:
    # the runner calls the json module's C encoder directly; the reference is json.dumps
    expected = json.dumps({"v": JOURNAL_VERSION, **record}, separators=(",", ":")) + "\n"
    assert encode(record) == expected.encode()


def test_a_value_json_cannot_write_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="a set cannot be written to the journal"):
        encode({"metrics": {1, 2}})
