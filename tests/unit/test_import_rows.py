"""``lab import`` reads most rows of a CSV without a dict of their fields, and stores them
without a Sample each: both shortcuts must give exactly what reading every row field by field
and storing it as a Sample gives, for any table, malformed rows and all."""

from __future__ import annotations

import csv
import gc
import io
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.errors import LabError, UsageError
from lab.importers import ingest, rowfields, tabular
from lab.importers.ingest import ImportOptions, import_file
from lab.importers.inputs import Input
from lab.importers.records import BadLine, Item, Rows, Sample, collect
from lab.store import Store

SOME = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEWER = settings(SOME, max_examples=80)  # each example imports four times

# What each column may hold: first what reads as it is (as most rows of a real file do,
# so that most blocks are plain), then odd (blanks, underscores, other spellings) and bad.
CELLS: dict[str, list[str]] = {
    "variant": ["thp", "shp1g", '"thp"', "a\u2028b\x0cc", " thp", ""],
    "workload": ["gdb", "w", ""],
    "metric": ["t_s", "r_per_s", "t_s ", ""],
    "value": ["1.5", "-0", " 2", "1_0", "٣", "", " ", "x", "nan", "inf", "1e999"],
    "iteration": ["1", "2", "3", " 2", "1_0", "", " ", "0", "-1", "x", "1.0"],
    "timestamp": ["1700000000", "", " 5", "2024-01-01T00:00:00Z", "x", "inf"],
    "started": ["", "7", "x"],
    "unit": ["", "s", "ms"],
    "direction": ["", "lower", "higher", "up"],
    "guest": ["", "thp", "g"],
    "host": ["", "h"],
    "study": ["", "s"],
    "source": ["", "f:1", "a,b"],
    "attempt": ["", "1"],
}
PLAIN = {"variant": 5, "workload": 2, "metric": 2, "value": 5, "iteration": 5, "timestamp": 1,
         "started": 1, "unit": 3, "direction": 3, "guest": 3, "host": 2, "study": 2,
         "source": 2, "attempt": 2}  # fmt: skip  # how many of each column's cells are plain


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
    writer = csv.writer(
        out,
        lineterminator=draw(st.sampled_from(["\n", "\n", "\r\n"])),
        quoting=draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_MINIMAL, csv.QUOTE_ALL])),
    )
    writer.writerow(columns)
    for _ in range(draw(st.integers(0, 25))):
        shape = draw(st.integers(0, 19))
        if shape == 0:
            out.write("\n")
            continue
        plain = shape > 10
        row = [draw(st.sampled_from(CELLS[c][: PLAIN[c]] if plain else CELLS[c])) for c in columns]
        if shape == 1:
            row = row[: draw(st.integers(0, len(row)))]
        elif shape == 2:
            row.append("extra")
        elif shape == 3:
            row[0] = "line\nbreak"  # quoted, over two lines
        elif shape == 4:
            row = [*row[:-2], "a,b"]  # a row short of a field, with a comma in one
        elif shape in (5, 6):
            row[-1] = "1\n2"  # quoted, over two lines, in the last column (a block may end
            # inside it: the csv module must not take what it read of it for a row)
        writer.writerow(row)
    return out.getvalue()


def field_by_field(text: str) -> Iterator[Item]:
    """The reference: every row read as csv_samples read it before rows had a shortcut."""
    reader = csv.reader(io.StringIO(text))
    columns = [c.strip() for c in next(reader, [])]
    blank = rowfields.blank_fields({})
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
@given(text=tables(), block=st.integers(1, 8), piece=st.integers(1, 8))
def test_rows_read_as_field_by_field(text: str, block: int, piece: int) -> None:
    """Whatever the blocks the input comes in and the pieces read column by column."""
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(tabular, "BLOCK", piece)
            blocks = tabular.in_blocks(io.StringIO(text), block)
            fast = collect("csv", tabular.csv_samples(blocks, "f.csv", {}))
    except UsageError:
        return  # an unknown column: refused before any row, either way
    slow = collect("csv", field_by_field(text))
    assert repr(fast.samples) == repr(slow.samples)  # repr: a timestamp may be inf
    assert fast.bad == slow.bad


def test_plain_lines_are_read_a_block_at_a_time() -> None:
    """Rows come a block at a time (the first block's first line is the header); a block
    with a malformed line is read row by row."""
    text = "variant,workload,metric,value\n" + "thp,w,t_s,1\n" * 1500 + "thp,w,t_s,x\nthp,w,t_s,2\n"
    items = list(tabular.csv_samples(tabular.in_blocks(io.StringIO(text)), "f.csv", {}))
    assert [len(i.rows) if isinstance(i, Rows) else i for i in items] == [
        tabular.BLOCK - 1, 501, BadLine(1502, "value 'x' is not a number"), 1
    ]  # fmt: skip
    first, second = items[0], items[1]
    assert isinstance(first, Rows) and isinstance(second, Rows)
    assert first.rows[0][1] is second.rows[-1][1]  # one context for every row that shares it
    assert [r[0] for r in first.rows] == list(range(2, 1 + tabular.BLOCK))


def test_a_quoted_field_over_two_blocks() -> None:
    # a name with a line break is refused (test_import_hostile): the value spans the lines
    text = 'variant,workload,metric,value\nthp,w,t_s,1\nthp,w,t_s,"\n2"\nthp,w,t_s,3\n'
    blocks = [["variant,workload,metric,value\n", "thp,w,t_s,1\n", 'thp,w,t_s,"\n'],
              ['2"\n', "thp,w,t_s,3\n"]]  # fmt: skip
    parsed = collect("csv", tabular.csv_samples(blocks, "f.csv", {}))
    assert [(s.line, s.variant, s.metrics) for s in parsed.samples] == [
        (2, "thp", {"t_s": 1.0}), (4, "thp", {"t_s": 2.0}), (5, "thp", {"t_s": 3.0})
    ]  # fmt: skip
    assert parsed == collect("csv", field_by_field(text))


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
        [["variant,metric,value,unit,direction,guest\n", "thp,t,2.5,s,lower,g\n"]],
        "f.csv",
        {"workload": "w"},
    )
    assert isinstance(rows, Rows)
    (sample,) = rows.samples()
    assert sample == Sample(2, {"t": 2.5}, "thp", "w", "g", None, None, None, None, {"t": "s"},
                            {"t": "lower"})  # fmt: skip


def test_a_long_line_is_told_after_the_lines_before_it(tmp_path: Path) -> None:
    """Lines are read a block at a time, yet a line too long still stops the import after the
    malformed lines before it were counted: it is its own block, asked for after them."""
    path = tmp_path / "r.csv"
    path.write_text("variant,workload,metric,value\nthp,w,t_s,x\n" + "y" * (2 << 20) + "\n")
    with pytest.raises(UsageError) as caught:
        import_file(Store.open(tmp_path / "lab.db"), path, ImportOptions())
    assert str(caught.value).startswith(
        f"{path}:2: value 'x' is not a number (and 1 more malformed line(s);"
        " reading stopped at line 3)"
    )


def test_blocks_split_at_newlines_only() -> None:
    """As the csv module reads them: form feeds, carriage returns and Unicode line
    separators stay inside a line (str.splitlines would end lines at each)."""
    text = "a\u2028b\x0cc\x1d\r\nd\re\n" * 3 + "last"
    source = Input("x", "x", io.BufferedReader(io.BytesIO(text.encode())))
    blocks = list(source.blocks(lambda line: None))
    assert [line for block in blocks for line in block] == list(io.StringIO(text))


def test_an_import_leaves_no_cycles_behind(tmp_path: Path) -> None:
    """lab import pauses the cycle collector: safe only if it makes no reference cycle a row,
    which would then pile up until the end. Ten times the rows (good, malformed, merged, met
    again), no more for the collector to find than once."""
    store = Store.open(tmp_path / "lab.db")
    found = []
    for rows in (100, 100, 1_000):  # the first: what only a first import makes (imports...)
        path = tmp_path / f"{rows}-{len(found)}.csv"
        lines = [
            f"thp,w,{m},{v},{i}"
            for i in range(1, rows + 1)
            for m, v in (("t_s", f"{i}.5"), ("r_per_s", "x" if i % 7 == 0 else "2"))
        ]
        path.write_text("variant,workload,metric,value,iteration\n" + "\n".join(lines) + "\n")
        gc.collect()
        gc.disable()  # else the collector, back after the import, may find them first
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(ingest, "BATCH", 50)
                import_file(store, path, ImportOptions(skip_bad=True))
                import_file(store, path, ImportOptions(skip_bad=True))  # every line again
            found.append(gc.collect())
        finally:
            gc.enable()
    assert found[2] <= found[1] + 10, found


def test_starts_given_to_some_rows_of_a_batch(tmp_path: Path) -> None:
    """A batch keeps the iterations of a guest without their start (none given) until one
    has a start; then they all get a field for it. Samples joining an iteration of either
    kind add their line to its source."""
    path = tmp_path / "r.csv"
    path.write_text(
        "variant,workload,metric,value,iteration,timestamp\n"
        "thp,w,t_s,1,1,\n"  # line 2
        "thp,w,t_s,2,2,\n"
        "thp,w,r_per_s,7,1,\n"  # joins iteration 1: no start
        "thp,w,t_s,3,3,1700000000\n"  # line 5: the first start
        "thp,w,r_per_s,8,2,\n"  # joins iteration 2, after the rows got starts
        "thp,w,r_per_s,9,3,\n"
        "thp,w,t_s,4,4,\n"
    )
    store = Store.open(tmp_path / "lab.db")
    summary = import_file(store, path, ImportOptions())
    assert summary.stored == 4
    got = {(r.iteration, r.metric): (r.value, r.started, r.source) for r in store.export_rows()}
    at = str(path.resolve())
    assert got == {
        (1, "t_s"): (1.0, None, f"{at}:2,4"), (1, "r_per_s"): (7.0, None, f"{at}:2,4"),
        (2, "t_s"): (2.0, None, f"{at}:3,6"), (2, "r_per_s"): (8.0, None, f"{at}:3,6"),
        (3, "t_s"): (3.0, 1700000000.0, f"{at}:5,7"),
        (3, "r_per_s"): (9.0, 1700000000.0, f"{at}:5,7"),
        (4, "t_s"): (4.0, None, f"{at}:8"),
    }  # fmt: skip


@pytest.mark.parametrize(
    "rows",
    [
        "thp,w,t_s,1\r\nthp,w,t_s,2\r\n",
        "thp,w\rx,t_s,1\nthp,w,t_s,2\n",
        "thp,w,t_s,1\r\rthp,w,t_s,2\n",
    ],
)
def test_carriage_returns_read_as_the_csv_module_reads_them(rows: str) -> None:
    text = "variant,workload,metric,value\n" + rows
    fast = collect("csv", tabular.csv_samples(tabular.in_blocks(io.StringIO(text)), "f", {}))
    assert fast == collect("csv", field_by_field(text))
