"""``lab import`` reads most rows of a CSV without a dict of their fields, and stores them
without a Sample each: both shortcuts must give exactly what reading every row field by field
and storing it as a Sample gives, for any table, malformed rows and all."""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.errors import LabError, UsageError
from lab.importers import ingest, tabular
from lab.importers.ingest import ImportOptions, import_file
from lab.importers.records import BadLine, Item, Rows, Sample, collect
from lab.store import Store

SOME = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEWER = settings(SOME, max_examples=80)  # each example imports four times

# What each column may hold: good, odd (blanks, underscores, other spellings) and bad.
CELLS: dict[str, list[str]] = {
    "variant": ["thp", " thp", "shp1g", ""],
    "workload": ["gdb", "w", ""],
    "metric": ["t_s", "r_per_s", "t_s ", ""],
    "value": ["1.5", " 2", "1_0", "-0", "", " ", "x", "nan", "inf", "1e999", "٣"],
    "iteration": ["1", "2", "3", " 2", "", " ", "0", "-1", "x", "1.0", "1_0"],
    "timestamp": ["", "1700000000", " 5", "2024-01-01T00:00:00Z", "x", "inf"],
    "started": ["", "7", "x"],
    "unit": ["", "s", "ms"],
    "direction": ["", "lower", "higher", "up"],
    "guest": ["", "thp", "g"],
    "host": ["", "h"],
    "study": ["", "s"],
    "source": ["", "f:1", "a,b"],
    "attempt": ["", "1"],
}


@st.composite
def tables(draw: st.DrawFn) -> str:
    """A CSV text: the four needed columns (or, now and then, not), some optional ones, a
    column named twice at times, and rows that are short, long, blank or quoted."""
    optional = draw(st.lists(st.sampled_from(sorted(set(CELLS) - {"variant", "workload",
                                                                  "metric", "value"})),
                             unique=True, max_size=5))  # fmt: skip
    columns = ["variant", "workload", "metric", "value", *optional]
    columns = draw(st.permutations(columns))
    if draw(st.integers(0, 9)) == 0:
        columns = [*columns, draw(st.sampled_from(columns))]  # a column named twice
    if draw(st.integers(0, 9)) == 0:
        columns = [c for c in columns if c != "value"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    writer.writerow(columns)
    for _ in range(draw(st.integers(0, 25))):
        shape = draw(st.integers(0, 19))
        if shape == 0:
            out.write("\n")
            continue
        row = [draw(st.sampled_from(CELLS[c])) for c in columns]
        if shape == 1:
            row = row[: draw(st.integers(0, len(row)))]
        elif shape == 2:
            row.append("extra")
        elif shape == 3:
            row[0] = "line\nbreak"  # quoted, over two lines
        writer.writerow(row)
    return out.getvalue()


def field_by_field(text: str) -> Iterator[Item]:
    """The reference: every row read as csv_samples read it before rows had a shortcut."""
    reader = csv.reader(io.StringIO(text))
    columns = [c.strip() for c in next(reader, [])]
    blank = tabular._fields({})
    line = reader.line_num
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            yield BadLine(line + 1, f"not readable as CSV ({err})")
            line = reader.line_num
            continue
        line = reader.line_num
        item = tabular._csv_row(row, columns, blank, line)
        if item is not None:
            yield item


@SOME
@given(tables())
def test_rows_read_as_field_by_field(text: str) -> None:
    try:
        fast = collect("csv", tabular.csv_samples(io.StringIO(text), "f.csv", {}))
    except UsageError:
        return  # an unknown column: refused before any row, either way
    slow = collect("csv", field_by_field(text))
    assert repr(fast.samples) == repr(slow.samples)  # repr: a timestamp may be inf
    assert fast.bad == slow.bad


def test_rows_come_in_runs_between_malformed_lines() -> None:
    text = "variant,workload,metric,value\n" + "thp,w,t_s,1\n" * 1500 + "thp,w,t_s,x\nthp,w,t_s,2\n"
    items = list(tabular.csv_samples(io.StringIO(text), "f.csv", {}))
    assert [len(i.rows) if isinstance(i, Rows) else i for i in items] == [
        tabular.ROWS, 1500 - tabular.ROWS, BadLine(1502, "value 'x' is not a number"), 1
    ]  # fmt: skip
    first, second = items[0], items[1]
    assert isinstance(first, Rows) and isinstance(second, Rows)
    assert first.rows[0][1] is second.rows[-1][1]  # one context for every row that shares it


def as_samples(items: Iterator[Item]) -> Iterator[Item]:
    """A reader's items with every row made a Sample: what lab import stored before Rows."""
    for item in items:
        if isinstance(item, Rows):
            yield from item.samples()
        else:
            yield item


_stores = itertools.count()


def outcome(path: Path, root: Path, options: ImportOptions) -> list[Any]:
    """Import ``path`` twice into a new store (the second time reads lines stored before):
    what each import said or raised, and what the store holds."""
    store = Store.open(root / f"{next(_stores)}.db")
    said: list[Any] = []
    for _ in range(2):
        try:
            summary = import_file(store, path, options)
            said.append(summary)
        except LabError as err:  # a StoreError too: a guest named for two variants
            said.append((type(err).__name__, str(err)))
    rows = [r for r in store.export_rows()]
    store.close()
    return [said, rows]


@FEWER
@given(text=tables(), skip_bad=st.booleans(), batch=st.sampled_from([3, 20_000]))
def test_rows_store_as_samples_do(
    tmp_path_factory: pytest.TempPathFactory, text: str, skip_bad: bool, batch: int
) -> None:
    root = tmp_path_factory.mktemp("rows")
    path = root / "r.csv"
    path.write_text(text, newline="")
    options = ImportOptions(skip_bad=skip_bad)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ingest, "BATCH", batch)
        fast = outcome(path, root, options)
        reader = ingest.samples
        patch.setattr(ingest, "samples", lambda *args: as_samples(reader(*args)))
        slow = outcome(path, root, options)
    assert repr(fast) == repr(slow)


def test_a_sample_of_one_metric_is_its_row() -> None:
    (rows,) = tabular.csv_samples(
        io.StringIO("variant,metric,value,unit,direction,guest\nthp,t,2.5,s,lower,g\n"),
        "f.csv",
        {"workload": "w"},
    )
    assert isinstance(rows, Rows)
    (sample,) = rows.samples()
    assert sample == Sample(2, {"t": 2.5}, "thp", "w", "g", None, None, None, None, {"t": "s"},
                            {"t": "lower"})  # fmt: skip
