"""A sweep's table, defined once for every output format: a row per value (A, B, the change
with its interval, the p and adjusted p, the verdict in the family), then the crossing and how
the verdicts were corrected (``lab.stats.sweep``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from rich.console import Console
from rich.table import Column, Table

from lab.core.text import cell, shown
from lab.report.summary import STYLES, WORDS, summary_rows
from lab.stats.analysis import MetricComparison
from lab.stats.sweep import ALPHA_FLOOR, SweepComparison, SweepValue
from lab.stats.verdict import Outcome

HEADER = ("A", "B", "change (B vs A)", "p", "adjusted p", "verdict")


@dataclass(frozen=True)
class SweepRow:
    value: str  # "16M", or "16M (threads=2)" for a sweep of several keys
    cells: tuple[str, ...]  # as HEADER
    outcome: Outcome


def value_text(sweep: SweepComparison, value: SweepValue) -> str:
    """The value of the sweep's first key, with the other keys' after it."""
    point = dict(value.point)
    rest = ", ".join(f"{k}={v}" for k, v in value.point if k != sweep.axis)
    return f"{point[sweep.axis]}" + (f" ({rest})" if rest else "")


def p_text(value: float) -> str:
    if value <= ALPHA_FLOOR:
        return f"< {ALPHA_FLOOR:g}"
    return f"{value:.3g}"


def rows(sweep: SweepComparison) -> list[SweepRow]:
    made = []
    for value in sweep.values:
        (summary, *_) = summary_rows([value.comparison])  # its first pair: B against A
        word = WORDS[value.verdict.outcome]
        if value.alone.outcome != value.verdict.outcome:
            word += f" (alone: {WORDS[value.alone.outcome]})"
        made.append(SweepRow(
            value_text(sweep, value),
            (summary.a, summary.b, summary.change, p_text(value.p), p_text(value.p_adjusted),
             word),
            value.verdict.outcome,
        ))  # fmt: skip
    return made


def lines(sweep: SweepComparison) -> list[str]:
    """What goes under the table: the crossings, the correction, the values left out."""
    said = [c.describe(sweep.threshold) for c in sweep.crossings]
    said.append(sweep.note())
    said += [f"{value} is left out: {why}" for value, why in sweep.left_out]
    return said


def print_sweep(console: Console, sweep: SweepComparison) -> None:
    title = cell(f"{sweep.title} (sweep {sweep.sweep})")  # names from the store: text
    table = Table(Column(header=cell(sweep.axis)), *HEADER, title=title, title_justify="left",
                  title_style="bold")  # fmt: skip
    for row in rows(sweep):
        table.add_row(*map(cell, (row.value, *row.cells)), style=STYLES[row.outcome] or None)
    console.print(table)
    for line in lines(sweep):
        console.print(cell(line))
    console.print()


def markdown(sweep: SweepComparison) -> str:
    out = [shown(f"**{sweep.title} (sweep {sweep.sweep})**"), ""]
    out.append("| " + " | ".join(map(shown, (sweep.axis, *HEADER))) + " |")
    out.append("|" + "|".join(["---", *["---:"] * (len(HEADER) - 1), "---"]) + "|")
    out += ["| " + " | ".join(map(shown, (row.value, *row.cells))) + " |" for row in rows(sweep)]
    out.append("")
    out += [f"- {shown(line)}" for line in lines(sweep)]
    return "\n".join(out) + "\n\n"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def as_json_data(sweep: SweepComparison) -> dict[str, Any]:
    """The sweep as one object of ``lab compare --format json``'s list (its key: "sweep")."""
    values = []
    for value in sweep.values:
        pair, arms = value.pair, {a.label: a for a in value.comparison.arms}
        d = pair.difference
        values.append({
            "point": dict(value.point), "run": value.run,
            "a": {"label": pair.a, "mean": arms[pair.a].summary.mean, "n": arms[pair.a].summary.n},
            "b": {"label": pair.b, "mean": arms[pair.b].summary.mean, "n": arms[pair.b].summary.n},
            "percent": _finite(d.percent), "percent_ci": [_finite(x) for x in d.percent_ci],
            "diff": d.diff, "diff_ci": list(d.diff_ci), "p": value.p,
            "p_adjusted": value.p_adjusted, "claim": value.claim.value,
            "alone": value.alone.outcome.value,
            "verdict": {"outcome": value.verdict.outcome.value, "text": value.verdict.text},
        })  # fmt: skip
    return {
        "sweep": sweep.sweep, "study": sweep.study, "workload": sweep.workload,
        "metric": sweep.metric, "unit": sweep.unit, "direction": sweep.direction,
        "axis": sweep.axis, "confidence": sweep.confidence,
        "threshold": sweep.threshold.value, "threshold_relative": sweep.threshold.relative,
        "correction": sweep.correction.value, "values": values,
        "crossings": [{"rest": dict(c.rest), "value": c.value, "not_above": list(c.not_above)}
                      for c in sweep.crossings],
        "left_out": [{"value": v, "why": why} for v, why in sweep.left_out],
        "note": sweep.note(),
    }  # fmt: skip


def csv_rows(sweep: SweepComparison) -> Iterator[tuple[Any, ...]]:
    """Rows of the long CSV layout of ``lab compare`` (no header): table "sweep", the value as
    the subject."""
    head = (sweep.study, sweep.workload, sweep.metric, sweep.unit, sweep.direction, "sweep")
    for item in as_json_data(sweep)["values"]:
        subject = ", ".join(f"{k}={v}" for k, v in item["point"].items())
        for key, got in (
            ("run", item["run"]), ("mean_a", item["a"]["mean"]), ("mean_b", item["b"]["mean"]),
            ("percent", item["percent"]), ("percent_low", item["percent_ci"][0]),
            ("percent_high", item["percent_ci"][1]), ("p", item["p"]),
            ("p_adjusted", item["p_adjusted"]), ("alone", item["alone"]),
            ("verdict", item["verdict"]["outcome"]),
        ):  # fmt: skip
            yield (*head, "sweep", subject, key, "" if got is None else got)
    for crossing in sweep.crossings:
        rest = ", ".join(f"{k}={v}" for k, v in crossing.rest) or sweep.axis
        yield (*head, "crossing", rest, "value", crossing.value or "")


def per_value(sweep: SweepComparison) -> list[MetricComparison]:
    """Each value's full analysis, its workload named with the value, for the full tables."""
    return [replace(v.comparison, workload=f"{v.comparison.workload} ({v.label})")
            for v in sweep.values]  # fmt: skip
