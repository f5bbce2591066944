"""Reading the runner's journal: records, events, partial lines and damaged lines."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.errors import LabError, StoreError
from lab.inguest.journal import (
    JournalEntry,
    JournalError,
    JournalEvent,
    complete_length,
    parse_journal_line,
    read_journal,
)
from lab.run.ingest import split_journal

RESULT: dict[str, Any] = {
    "v": 1, "iteration": 7, "attempt": 2, "ok": True, "started": 1795343891.25,
    "ended": 1795344022.75, "wall": 131.5, "user": 1830.125, "sys": 3.25, "exit_status": 0,
    "boot_id": "6b1c331d-f332-405a-b72e-b8cbb06d48c8", "metrics": {"total_time_s": 131.0},
    "error": None, "output_tail": "General statistics:\n",
}  # fmt: skip


def line(**changes: Any) -> str:
    record = {**RESULT, **changes}
    return json.dumps({k: v for k, v in record.items() if v is not ...}) + "\n"


def test_result_line_becomes_an_entry() -> None:
    entry = parse_journal_line(line())
    assert entry == JournalEntry(
        iteration=7, attempt=2, ok=True, started=1795343891.25, ended=1795344022.75, wall=131.5,
        user=1830.125, sys=3.25, exit_status=0, boot_id="6b1c331d-f332-405a-b72e-b8cbb06d48c8",
        metrics={"total_time_s": 131.0}, error=None, output_tail="General statistics:\n",
    )  # fmt: skip
    assert isinstance(entry, JournalEntry)
    assert entry.key == (7, 2)


def test_interrupted_line_has_nulls() -> None:
    error = "interrupted: the runner was killed during this attempt"
    text = line(ok=False, ended=None, wall=None, user=None, sys=None, exit_status=None,
                metrics={}, error=error)  # fmt: skip
    entry = parse_journal_line(text)
    assert isinstance(entry, JournalEntry)
    assert (entry.ok, entry.wall, entry.exit_status) == (False, None, None)
    assert entry.error is not None and entry.error.startswith("interrupted")


def test_event_line_becomes_an_event() -> None:
    event = parse_journal_line('{"v":1,"event":"begin","time":5.5,"iteration":3,"attempt":1}\n')
    assert event == JournalEvent(event="begin", time=5.5, iteration=3, attempt=1)
    done = parse_journal_line('{"v":1,"event":"done","time":9,"ok":4,"failed":1}\n')
    assert isinstance(done, JournalEvent)
    assert (done.event, done.iteration, done.fields["failed"]) == ("done", None, 1)


@pytest.mark.parametrize("text", [line()[:-1], line()[:40], "", "\n", "   \n"])
def test_partial_or_blank_line_is_none(text: str) -> None:
    assert parse_journal_line(text) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json\n", "not JSON"),
        ("[1, 2]\n", "not a JSON object"),
        (line(v=2), "version 2"),
        (line(v=...), "version None"),
        (line(wall="fast"), "'wall' should be a finite number"),
        (line(started=...), "'started' is missing"),
        (line(iteration=True), "'iteration' should be an integer"),
        (line(iteration=1.5), "'iteration' should be an integer"),
        (line(ok="yes"), "'ok' should be true or false"),
        (line(metrics=[1]), "'metrics' is not an object"),
        (line(metrics={"x": "1"}), "'x' should be a finite number"),
        (line(boot_id=None), "'boot_id' is missing"),
        (line(error=3), "'error' should be a string"),
        ('{"v":1,"event":5}\n', "'event' should be a string"),
    ],
)
def test_invalid_complete_line_is_an_error_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(JournalError, match=message):
        parse_journal_line(text)


def test_a_damaged_journal_reaches_the_user_as_a_store_error_naming_the_guest() -> None:
    assert not issubclass(JournalError, LabError)  # the guest side knows nothing of the lab's
    with pytest.raises(StoreError, match=r"lab-thp: line 1: journal line is not JSON") as err:
        split_journal(b'garbage\n{"v":1,"event":"synced"}\n', "lab-thp")
    assert err.value.hint == JournalError.hint


def test_read_journal_keeps_order_and_leaves_a_partial_tail() -> None:
    text = (
        '{"v":1,"event":"start","time":1}\n'
        '{"v":1,"event":"begin","time":2,"iteration":1,"attempt":1}\n'
        + line(iteration=1, attempt=1)
        + line(iteration=2, attempt=1)[:30]
    )
    records = read_journal(text)
    assert [type(r).__name__ for r in records] == ["JournalEvent", "JournalEvent", "JournalEntry"]
    assert isinstance(records[2], JournalEntry) and records[2].key == (1, 1)


def test_only_newline_ends_a_line() -> None:
    """A raw U+2028 in a string is valid JSON, and is no line end; a raw CR is damage."""
    raw = json.dumps({**RESULT, "output_tail": "a\u2028b"}, ensure_ascii=False) + "\n"
    assert "\u2028" in raw
    (entry,) = read_journal(raw)
    assert isinstance(entry, JournalEntry) and entry.output_tail == "a\u2028b"
    with pytest.raises(JournalError, match=r"^line 1: journal line is not JSON"):
        read_journal(line().replace("6b1c331d", "6b1c\r331d"))


def test_read_journal_error_says_which_line() -> None:
    with pytest.raises(JournalError, match=r"^line 2: "):
        read_journal(line() + "garbage\n" + line())


def test_complete_length_for_text_and_bytes() -> None:
    assert complete_length("a\nb\npartial") == 4
    assert complete_length(b"a\nb\n") == 4
    assert complete_length(b"no newline") == 0
    assert complete_length("") == 0


@given(st.text())
@settings(max_examples=300, deadline=None)
def test_any_text_parses_or_is_a_journal_error(text: str) -> None:
    try:
        records = read_journal(text)
    except JournalError:
        return
    assert all(isinstance(record, JournalEntry | JournalEvent) for record in records)


@given(
    st.dictionaries(
        st.sampled_from(sorted(RESULT)), st.none() | st.integers() | st.text() | st.floats()
    )
)
@settings(max_examples=300, deadline=None)
def test_any_record_shape_parses_or_is_a_journal_error(changes: dict[str, Any]) -> None:
    try:
        entry = parse_journal_line(json.dumps({**RESULT, **changes}) + "\n")
    except JournalError:
        return
    assert isinstance(entry, JournalEntry)
    assert isinstance(entry.iteration, int) and isinstance(entry.started, float)
    assert all(isinstance(v, float) for v in entry.metrics.values())
