"""``lab export``'s formats: every sample with its context, as CSV, JSON lines or Parquet,
and every failed attempt, a row with no metric and no value (``ok`` 0).

Each writes the store's export a batch at a time (``Store.export_batches``): memory holds a
batch whatever the store's size, and a row is formatted from the tuple SQLite handed back,
with what its batch shares (study to host, a metric's name, unit and direction) encoded once.
Parquet needs pyarrow, an optional extra (``pip install './[parquet]'`` in the checkout).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from json.encoder import encode_basestring
from operator import itemgetter
from pathlib import Path
from typing import IO, Any

from lab.core.errors import UsageError
from lab.store import EXPORT_COLUMNS, Store
from lab.store.export import SAMPLE_WIDTH, ExportBatch, sample_columns

PARQUET_BATCH = 20_000  # rows per row group: 212 MiB peak, 96 of them pyarrow (325 at 100,000)


class Tally:
    """Batches handed on as they come, the failed attempts among their rows (those with no
    value) counted in ``failed``: what ``lab export`` says it wrote."""

    def __init__(self, batches: Iterable[ExportBatch]) -> None:
        self.batches = batches
        self.failed = 0

    def __iter__(self) -> Iterator[ExportBatch]:
        value = itemgetter(5)
        for batch in self.batches:
            self.failed += list(map(value, batch.rows)).count(None)
            yield batch


def environment_lines(out: IO[str], store: Store, study: str | None, workload: str | None,
                       run: str | None) -> None:  # fmt: skip
    """Each selected run's environment records as JSON lines (``lab.run.environment``)."""
    for r in store.runs(study):
        if workload in (None, r.workload) and run in (None, r.key):
            for e in store.environment(r.id):
                out.write(json.dumps({
                    "record": "environment", "study": r.study, "run": r.key, "scope": e.scope,
                    "name": e.name, "recorded": e.recorded, "facts": e.facts,
                }, ensure_ascii=False) + "\n")  # fmt: skip


def design_lines(out: IO[str], store: Store, study: str | None, workload: str | None,
                 run: str | None) -> None:  # fmt: skip
    """The stored design of each study of the selected runs as a JSON line (lab.store.designs),
    so that ``lab import`` of the export keeps it."""
    studies = {r.study for r in store.runs(study) if workload in (None, r.workload)
               and run in (None, r.key)}  # fmt: skip
    for name in sorted(studies):
        design = store.study_design(name)
        if design is not None:
            out.write(json.dumps({"record": "design", "study": name, "design": design},
                                 ensure_ascii=False) + "\n")  # fmt: skip


def _csv_line(values: Iterable[Any]) -> str:
    """Values as the csv module writes them (quoted where they need it), with no line end."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(values)  # "\n" in a value is then quoted
    return out.getvalue()[:-1]


_NEEDS_QUOTES = re.compile(r'[",\r\n]')


def write_csv(out: IO[str], batches: Iterable[ExportBatch]) -> int:
    """A header, then one row per sample or failed attempt, each as ``csv.writer`` writes it;
    returns the number of rows. What a batch shares and each metric's three columns are
    encoded once: a sample's row is then its numbers and its source (through the csv module
    only where the source needs quoting), about half the time ``writerows`` takes for all its
    columns. A failed attempt's row (few of them) goes through the csv module whole."""
    out.write(_csv_line(EXPORT_COLUMNS) + "\n")
    count = 0
    for batch in batches:
        head = _csv_line(batch.context)
        metrics: dict[tuple[str, str | None, str | None], str] = {}
        marks: dict[tuple[Any, ...], str] = {}
        lines = []
        last, written = None, ""  # an iteration's source, as its first sample wrote it
        for row in batch.rows:
            iteration, attempt, metric, unit, direction, value, started, ended, source = row[:9]
            if value is None:  # a failed attempt: no sample
                lines.append(f"{head},{_csv_line(row)}\n")
                last = None
                continue
            named = metrics.get((metric, unit, direction))
            if named is None:
                named = metrics[(metric, unit, direction)] = _csv_line((metric, unit, direction))
            mark = marks.get(row[9:])
            if mark is None:  # boot, placement, exit status and times: one per iteration
                mark = marks[row[9:]] = _csv_line((*row[9:12], 1, *row[12:], None))
            # the samples of an iteration follow each other and share its source, which an
            # import of several lines makes "path:2,3,4": quoted once, not once a sample
            if source is None:
                last, source = None, ""
            elif source == last:
                source = written
            else:
                last = source
                if _NEEDS_QUOTES.search(source):
                    source = _csv_line((source,))
                written = source
            lines.append(
                f"{head},{iteration},{attempt},{named},{value!r},"
                f"{'' if started is None else repr(started)},"
                f"{'' if ended is None else repr(ended)},{source},{mark}\n"
            )
        out.write("".join(lines))
        count += len(lines)
    return count


def _json(value: Any) -> str:
    """One value as ``json.dumps(..., ensure_ascii=False)`` writes it; a number that is not
    finite is null, as in every JSON line lab writes."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return encode_basestring(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "null"
    return repr(value)


def _members(keys: Iterable[str], values: Iterable[Any]) -> str:
    """``"key": value, ...`` of a JSON object, as ``json.dumps`` writes them."""
    return ", ".join(
        f"{encode_basestring(k)}: {_json(v)}" for k, v in zip(keys, values, strict=True)
    )


def write_jsonl(out: IO[str], batches: Iterable[ExportBatch]) -> int:
    """One JSON object per sample or failed attempt, its keys in EXPORT_COLUMNS' order, as
    ``json.dumps`` of the row would write it; returns the number of rows. A sample's numbers
    and source are formatted inline, as ``json.dumps`` does (``repr`` of a finite float, else
    null)."""
    finite, string = math.isfinite, encode_basestring
    count = 0
    for batch in batches:
        shared = zip(EXPORT_COLUMNS[:8], batch.context, strict=True)
        head = "".join(f'"{key}": {_json(value)}, ' for key, value in shared)
        metrics: dict[tuple[str, str | None, str | None], str] = {}
        marks: dict[tuple[Any, ...], str] = {}
        lines = []
        for row in batch.rows:
            iteration, attempt, metric, unit, direction, value, started, ended, source = row[:9]
            if value is None:  # a failed attempt: no sample
                lines.append(f"{{{head}{_members(EXPORT_COLUMNS[8:], row)}}}\n")
                continue
            named = metrics.get((metric, unit, direction))
            if named is None:
                named = metrics[(metric, unit, direction)] = (
                    f'"metric": {_json(metric)}, "unit": {_json(unit)},'
                    f' "direction": {_json(direction)}'
                )
            mark = marks.get(row[9:])
            if mark is None:  # boot, placement, exit status and times: one per iteration
                mark = marks[row[9:]] = _members(EXPORT_COLUMNS[17:], sample_columns(row)[9:])
            begun = "null" if started is None or not finite(started) else repr(started)
            over = "null" if ended is None or not finite(ended) else repr(ended)
            lines.append(
                f'{{{head}"iteration": {iteration}, "attempt": {attempt}, {named},'
                f' "value": {repr(value) if finite(value) else "null"}, "started": {begun},'
                f' "ended": {over}, "source": {"null" if source is None else string(source)},'
                f" {mark}}}\n"
            )
        out.write("".join(lines))
        count += len(lines)
    return count


def require_parquet() -> None:
    """Refuse Parquet before anything is written when pyarrow is not installed."""
    if importlib.util.find_spec("pyarrow") is None:
        raise UsageError(
            "--format parquet needs pyarrow, which is not installed",
            hint="Install the extra: pip install './[parquet]' in lab's checkout (the"
            " distribution is kvm-lab; `lab` on the index is another project), or pip install"
            " pyarrow,"
            " or export as csv or jsonl",
        )


def write_parquet(path: Path, batches: Iterable[ExportBatch]) -> int:
    """One row group per batch, the columns typed (strings, int64, float64); returns the
    number of rows (samples and failed attempts). pandas reads it with ``pd.read_parquet``,
    polars with ``pl.read_parquet``."""
    require_parquet()
    import pyarrow as pa
    import pyarrow.parquet as pq

    text, integer, real = pa.string(), pa.int64(), pa.float64()
    types = (
        (text,) * 8 + (integer, integer, text, text, text, real, real, real) + (text,) * 4
        + (integer, integer, real, real, real, text)
    )  # fmt: skip
    schema = pa.schema(list(zip(EXPORT_COLUMNS, types, strict=True)))
    count = 0
    with pq.ParquetWriter(str(path), schema) as writer:
        for batch in batches:
            rows, size = batch.rows, len(batch.rows)
            shared = [pa.repeat(pa.scalar(value, text), size) for value in batch.context]
            if any(len(row) != SAMPLE_WIDTH for row in rows):  # failed attempts: every row whole
                rows = list(map(sample_columns, rows))
            columns = list(zip(*rows, strict=True))
            if len(columns) == SAMPLE_WIDTH:  # samples only: their ok (1) and error put in
                own = _arrays(pa, columns[:12], types[8:20])
                own.append(pa.repeat(pa.scalar(1, integer), size))
                own += _arrays(pa, columns[12:], types[21:25])
                own.append(pa.nulls(size, text))
            else:
                own = _arrays(pa, columns, types[8:])
            writer.write_table(pa.Table.from_arrays(shared + own, schema=schema))
            count += size
    return count


def _arrays(pa: Any, columns: Iterable[Iterable[Any]], types: Iterable[Any]) -> list[Any]:
    """Each column as a pyarrow array of its type."""
    return [pa.array(column, kind) for column, kind in zip(columns, types, strict=True)]
