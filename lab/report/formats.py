"""``lab compare`` output: rich tables for people, Markdown for documents, JSON and CSV for tools.

JSON keeps every field of every result (NaN becomes null); CSV is long ("tidy"): one row per
statistic of each arm or pair, so a spreadsheet can pivot it.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console, Group
from rich.table import Table

from lab.core.text import cell, shown
from lab.report.boots import boots_data
from lab.report.hosts import host_note, host_table
from lab.report.summary import (
    HEADER,
    STYLES,
    boot_notes,
    boots_needed_notes,
    family_note,
    summary_rows,
    tied_notes,
)
from lab.report.sweeps import as_json_data as sweep_json
from lab.report.sweeps import csv_rows as sweep_csv_rows
from lab.report.tables import (
    DIAGNOSTIC_ROWS,
    DIFFERENCE_ROWS,
    PAIRED_ROWS,
    PLACEMENT_ROWS,
    SUMMARY_ROWS,
    TableData,
    block_tables,
    blocks,
    notes,
    paired_data,
    placement_data,
)
from lab.report.warmup import warmup_csv_rows, warmup_data
from lab.stats.analysis import MetricComparison
from lab.stats.blocked import BlockedDifference, as_dict
from lab.stats.sweep import SweepComparison

FORMATS = ("table", "markdown", "json", "csv")

CSV_COLUMNS = (
    "study", "workload", "metric", "unit", "direction", "subset", "table", "subject",
    "statistic", "value",
)  # fmt: skip


def rich_table(data: TableData) -> Table:
    """A table whose every title, header and cell is text, never markup: they hold names
    from the store (``lab.core.text``)."""
    table = Table(title=cell(data.title), title_justify="left", title_style="bold")
    table.add_column(cell(data.header[0]), no_wrap=True)
    for head in data.header[1:]:
        table.add_column(cell(head), justify="right")
    for row in data.rows:
        style = "bold" if row[0] in ("Verdict", "combined") else None
        table.add_row(*map(cell, row), style=style)
    return table


def print_tables(console: Console, comparisons: Sequence[MetricComparison]) -> None:
    for block in blocks(comparisons):
        parts: list[Any] = [rich_table(t) for t in block_tables(block)]
        parts.extend(cell(line) for line in notes(block))
        console.print(Group(*parts))
        console.print()


def _widths(header: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[int] | None:
    """Column widths for a rich table of these cells (as shown: control characters escaped)
    in ``width`` columns with no word cut,
    narrowing the widest column first (rich's own narrowing cuts words); None when even each
    column's longest word does not fit beside the others' (a space each side, a rule
    between columns)."""
    columns = [(head, *(r[i] for r in rows)) for i, head in enumerate(header)]
    natural = [max(cell_len(line) for text in c for line in text.split("\n")) for c in columns]
    least = [max(cell_len(word) for text in c for word in text.split() or [""]) for c in columns]
    room = width - 3 * len(header) - 1
    if sum(least) > room:
        return None
    widths = list(natural)
    while sum(widths) > room:
        widest = max((w, i) for i, w in enumerate(widths) if w > least[i])[1]
        widths[widest] -= 1
    return widths


def summary_layout(
    rows: Sequence[Sequence[str]], width: int
) -> tuple[tuple[str, ...], list[tuple[str, ...]], list[int] | None]:
    """The summary's header, cells and column widths for a console ``width`` wide: six
    columns where they fit with no number cut, else three of two lines a row (workload over
    metric, A over B, verdict over change), as ``COLUMNS=100`` needs for long names."""
    widths = _widths(HEADER, rows, width)
    if widths is not None:
        return HEADER, [tuple(r) for r in rows], widths
    header: tuple[str, ...] = ("workload\nmetric", "A\nB", "verdict\nchange (B vs A)")
    cells: list[tuple[str, ...]] = [
        (f"{w}\n{m}", f"{a}\n{b}", f"{v}\n{c}") for w, m, a, b, c, v in rows
    ]
    return header, cells, _widths(header, cells, width)


def print_summary(console: Console, comparisons: Sequence[MetricComparison]) -> None:
    """The answer first: one row per workload, metric and pair, the verdict coloured."""
    rows = summary_rows(comparisons)
    if not rows:
        return
    first = comparisons[0]
    title = (
        f"Summary: mean ± margin of error at {first.confidence * 100:g} %, B's change with its"
        f" interval, verdict against ±{first.threshold}"
    )
    shown_rows = [[shown(text, lines=True) for text in row.cells] for row in rows]
    header, cells, widths = summary_layout(shown_rows, console.width)
    table = Table(*header, title=title, title_justify="left", title_style="bold")
    for index, column in enumerate(table.columns):
        column.overflow = "fold"  # a name too long for any column folds, never ends in "…"
        column.width = widths[index] if widths else None
    for row, texts in zip(rows, cells, strict=True):
        table.add_row(*map(cell, texts), style=STYLES[row.outcome] or None)
    console.print(table)
    for c in comparisons:
        if c.stopped is not None:
            console.print(cell(f"* {c.workload} · {c.metric}: {c.stopped.note}"))
    for line in [*boot_notes(comparisons), *boots_needed_notes(comparisons),
                 *tied_notes(comparisons)]:  # fmt: skip
        console.print(cell(f"* {line}"))
    note = family_note(comparisons)
    if note:
        console.print(cell(note))
    console.print()


def markdown(comparisons: Sequence[MetricComparison]) -> str:
    out: list[str] = []
    for block in blocks(comparisons):
        for table in block_tables(block):
            out.append(f"**{shown(table.title)}**\n")
            out.append("| " + " | ".join(map(shown, table.header)) + " |")
            out.append("|" + "|".join(["---", *["---:"] * (len(table.header) - 1)]) + "|")
            out.extend(
                "| " + " | ".join(shown(v.strip()) for v in row) + " |" for row in table.rows
            )
            out.append("")
        out.extend(f"- {shown(line)}" for line in notes(block))
        out.append("")
    return "\n".join(out)


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def as_json_data(comparisons: Sequence[MetricComparison]) -> list[dict[str, Any]]:
    data = []
    for c in comparisons:
        arms = [
            {
                "label": a.label, "variant": a.variant, "guest": a.guest, "host": a.host,
                "summary": dataclasses.asdict(a.summary),
                "diagnostics": dataclasses.asdict(a.diagnostics),
                "dropped": a.dropped,
            }
            for a in c.arms
        ]  # fmt: skip
        pairs = [
            {
                "a": p.a, "b": p.b,
                "difference": {
                    **p.difference.as_dict(),
                    "percent": p.difference.percent,
                    "percent_ci": p.difference.percent_ci,
                },
                "verdict": {
                    "outcome": p.verdict.outcome.value, "text": p.verdict.text,
                    "benefit_ci_percent": p.verdict.benefit_ci,
                },
                "p_adjusted_bh": p.p_adjusted,
                **({"verdict_confidence_bonferroni": p.verdict_confidence}
                   if p.verdict_confidence is not None else {}),
            }
            for p in c.pairs
        ]  # fmt: skip
        data.append(
            {
                "study": c.study, "workload": c.workload, "metric": c.metric, "unit": c.unit,
                "direction": c.direction, "subset": c.subset, "confidence": c.confidence,
                "threshold": c.threshold.value,
                "threshold_relative": c.threshold.relative, "arms": arms, "pairs": pairs,
                "stopped": None if c.stopped is None else dataclasses.asdict(c.stopped),
            }
        )  # fmt: skip
    return [_clean(d) for d in data]


def as_json(comparisons: Sequence[MetricComparison]) -> str:
    return json.dumps(as_json_data(comparisons), indent=2, ensure_ascii=False)


def as_csv(comparisons: Sequence[MetricComparison]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for c in comparisons:
        head = (c.study, c.workload, c.metric, c.unit, c.direction, c.subset)
        for arm in c.arms:
            for row in (*SUMMARY_ROWS, *DIAGNOSTIC_ROWS):
                table = "summary" if row in SUMMARY_ROWS else "diagnostics"
                writer.writerow((*head, table, arm.label, row.key, _csv(row.get(arm))))
        for pair in c.pairs:
            for row in DIFFERENCE_ROWS:
                subject = f"{pair.b} vs {pair.a}"
                writer.writerow((*head, "difference", subject, row.key, _csv(row.get(pair))))
    return buf.getvalue()


def _csv(value: Any) -> Any:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return repr(value) if isinstance(value, float) else value


def comparison_json(
    comparisons: Sequence[MetricComparison], sweeps: Sequence[SweepComparison] = (),
    factorials: Sequence[dict[str, Any]] = (),
) -> str:  # fmt: skip
    """``lab compare --format json``: :func:`as_json` with a ``paired`` list where the paired
    analysis ran, a ``placement`` object where the CPU sets were swapped, the ``warmup`` of
    each arm, and a ``hosts`` object (as ``--by host`` gives) where the arms ran on several
    hosts; then an object per sweep, then one per factorial workload · metric."""
    data = as_json_data(comparisons)
    for entry, c in zip(data, comparisons, strict=True):
        if c.paired:
            entry["paired"] = paired_data(c)
        if c.placement is not None:
            entry["placement"] = placement_data(c)
        if c.warmup is not None:
            entry["warmup"] = warmup_data(c.warmup)
        if c.hosts is not None:
            entry["hosts"] = as_dict(c.hosts)
        if c.boots is not None:
            entry["boots"] = boots_data(c.boots, c.threshold)
    data += [sweep_json(sweep) for sweep in sweeps]  # objects with a "sweep" key
    data += factorials  # objects with an "effects" key (lab.app.effects)
    # cleaned again: the objects added here (hosts' Cochran's Q p of one host) may hold NaN
    return json.dumps(_clean(data), indent=2, ensure_ascii=False, allow_nan=False)


def comparison_csv(
    comparisons: Sequence[MetricComparison], sweeps: Sequence[SweepComparison] = ()
) -> str:
    """``lab compare --format csv``: :func:`as_csv`, then the rows of the paired, placement,
    boots and warm-up tables and of each sweep's table, in the same long layout."""
    return (
        as_csv(comparisons) + _paired_csv(comparisons) + _placement_csv(comparisons)
        + _boots_csv(comparisons) + _warmup_csv(comparisons) + _sweep_csv(sweeps)
    )  # fmt: skip


def _sweep_csv(sweeps: Sequence[SweepComparison]) -> str:
    """Rows of each sweep's table in the long CSV layout (no header)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for sweep in sweeps:
        writer.writerows(sweep_csv_rows(sweep))
    return buf.getvalue()


def _paired_csv(comparisons: Sequence[MetricComparison]) -> str:
    """Rows of the ``paired`` table in the long CSV layout of :func:`as_csv` (no header)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for c in comparisons:
        head = (c.study, c.workload, c.metric, c.unit, c.direction, c.subset)
        for q in c.paired:
            for row in PAIRED_ROWS:
                value = row.get(q)
                if isinstance(value, float):
                    value = repr(value) if math.isfinite(value) else ""
                writer.writerow((*head, "paired", f"{q.b} vs {q.a}", row.key, value))
    return buf.getvalue()


def _placement_csv(comparisons: Sequence[MetricComparison]) -> str:
    """Rows of the ``placement`` table in the long CSV layout (no header)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for c in comparisons:
        q = c.placement
        if q is None:
            continue
        head = (c.study, c.workload, c.metric, c.unit, c.direction, c.subset)
        for row in PLACEMENT_ROWS:
            value = row.get(q)
            if isinstance(value, float):
                value = repr(value) if math.isfinite(value) else ""
            writer.writerow((*head, "placement", f"{q.b} vs {q.a}", row.key,
                             "" if value is None else value))  # fmt: skip
    return buf.getvalue()


def _boots_csv(comparisons: Sequence[MetricComparison]) -> str:
    """Rows of the Boots tables in the long CSV layout (no header): "boots" per arm, "boot
    means" per pair read from them."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for c in comparisons:
        if c.boots is None:
            continue
        head = (c.study, c.workload, c.metric, c.unit, c.direction, c.subset)
        data = boots_data(c.boots, c.threshold)
        writer.writerow((*head, "boots", "", "unit", data["unit"]))
        for arm in data["arms"]:
            for key, value in arm.items():
                if key != "arm":
                    writer.writerow((*head, "boots", arm["arm"], key,
                                     "" if value is None else value))  # fmt: skip
        for pair in data["pairs"]:
            subject = f"{pair['b']} vs {pair['a']}"
            for key, value in pair.items():
                if key not in ("a", "b"):
                    writer.writerow((*head, "boot means", subject, key,
                                     "" if value is None else value))  # fmt: skip
    return buf.getvalue()


def _warmup_csv(comparisons: Sequence[MetricComparison]) -> str:
    """Rows of the Warm-up table in the long CSV layout (no header); iterations as '1–2'."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for c in comparisons:
        if c.warmup is None:
            continue
        head = (c.study, c.workload, c.metric, c.unit, c.direction, c.subset)
        for subject, key, value in warmup_csv_rows(c.warmup):
            writer.writerow((*head, "warmup", subject, key, value))
    return buf.getvalue()


def print_by_host(console: Console, results: Sequence[BlockedDifference], form: str) -> None:
    """``lab compare --by host``: per workload and metric, B − A within each host and the
    hosts combined, as a table and its note; or, with ``form`` json, every result's fields."""
    if form == "json":
        # NaN is null (Cochran's Q has no p for one host): NaN is no JSON, and jq refused it
        data = _clean([as_dict(r) for r in results])
        console.file.write(json.dumps(data, indent=2, allow_nan=False) + "\n")
        return
    for r in results:
        unit = f" ({r.unit})" if r.unit else ""
        console.print(rich_table(TableData(*host_table(r, f"{r.workload} · {r.metric}{unit}"))))
        console.print(cell(host_note(r)))
