"""The rows of the tables of ``lab compare``, defined once for every output format.

Each row is a label and a function of an arm (or a pair) returning a raw value; the text
formats round it for reading, CSV and JSON keep it as it is. Numbers are shown with as many
decimals as the smallest margin of error needs for two significant digits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lab.core.units import format_percent, scale_for
from lab.report.boots import arm_table, pair_table
from lab.report.hosts import host_note, host_table
from lab.report.warmup import warmup_notes, warmup_table
from lab.stats.analysis import (
    ALL,
    Arm,
    MetricComparison,
    Pair,
    PairedPair,
    PlacementPair,
    cpu_set_name,
)

Value = float | int | str | None


@dataclass(frozen=True)
class Row:
    key: str  # a stable name for CSV and JSON
    label: str  # what the table shows
    kind: str  # "value" (in the metric's unit), "count", "pct", "p", "ratio", "text", "level",
    # "share" (a fraction shown in percent)
    get: Callable[[Any], Value]


SUMMARY_ROWS = (
    Row("mean", "Mean", "value", lambda a: a.summary.mean),
    Row("n", "Samples", "count", lambda a: a.summary.n),
    Row("sd", "Standard deviation", "value", lambda a: a.summary.sd),
    Row("min", "Min", "value", lambda a: a.summary.min),
    Row("max", "Max", "value", lambda a: a.summary.max),
    Row("median", "Median", "value", lambda a: a.summary.median),
    Row("confidence", "Confidence level", "level", lambda a: a.summary.confidence),
    Row("margin", "Margin of error", "value", lambda a: a.summary.margin),
)

DIFFERENCE_ROWS = (
    Row("diff", "Difference of means (B − A)", "value", lambda p: p.difference.diff),
    Row("diff_low", "  Welch CI low", "value", lambda p: p.difference.diff_ci[0]),
    Row("diff_high", "  Welch CI high", "value", lambda p: p.difference.diff_ci[1]),
    Row("diff_method", "  interval from", "text", lambda p: p.difference.method),
    Row("percent", "Change relative to A (%)", "pct", lambda p: p.difference.percent),
    Row("percent_low", "  ratio CI low (%)", "pct", lambda p: p.difference.percent_ci[0]),
    Row("percent_high", "  ratio CI high (%)", "pct", lambda p: p.difference.percent_ci[1]),
    Row("median_diff", "Difference of medians", "value", lambda p: p.difference.median_diff),
    Row("median_low", "  bootstrap CI low", "value", lambda p: p.difference.median_diff_ci[0]),
    Row("median_high", "  bootstrap CI high", "value", lambda p: p.difference.median_diff_ci[1]),
    Row("bm_p", "Brunner–Munzel p", "p", lambda p: p.difference.brunner_munzel_p),
    Row("bm_p_bh", "  Benjamini–Hochberg adjusted", "p", lambda p: p.p_adjusted),
    Row("cohen_d", "Cohen's d", "ratio", lambda p: p.difference.cohen_d),
    Row("cliff_delta", "Cliff's delta", "ratio", lambda p: p.difference.cliff_delta),
    Row("verdict", "Verdict", "text", lambda p: p.verdict.outcome.value),
)  # fmt: skip


PAIRED_ROWS = (
    Row("pairs", "Pairs (iterations in both)", "count", lambda q: q.paired.n),
    Row("unpaired_a", "  samples of A without a partner", "count", lambda q: q.paired.unpaired_a),
    Row("unpaired_b", "  samples of B without a partner", "count", lambda q: q.paired.unpaired_b),
    Row("paired_diff", "Paired difference (B − A)", "value", lambda q: q.paired.diff),
    Row("paired_low", "  paired t CI low", "value", lambda q: q.paired.diff_ci[0]),
    Row("paired_high", "  paired t CI high", "value", lambda q: q.paired.diff_ci[1]),
    Row("welch_low", "  Welch CI low (independent)", "value", lambda q: q.welch_ci[0]),
    Row("welch_high", "  Welch CI high (independent)", "value", lambda q: q.welch_ci[1]),
    Row("paired_percent", "Paired change relative to A (%)", "pct", lambda q: q.paired.percent),
    Row("paired_percent_low", "  CI low (%)", "pct", lambda q: q.paired.percent_ci[0]),
    Row("paired_percent_high", "  CI high (%)", "pct", lambda q: q.paired.percent_ci[1]),
    Row("paired_t_p", "Paired t p", "p", lambda q: q.paired.t_p),
    Row("wilcoxon_p", "Wilcoxon signed-rank p", "p", lambda q: q.paired.wilcoxon_p),
    Row("correlation", "Correlation of the pairs (r)", "ratio", lambda q: q.paired.correlation),
    Row("variance_ratio", "var(B − A) / (var A + var B)", "ratio",
        lambda q: q.paired.variance_ratio),
    Row("variance_removed", "Variance removed by pairing", "share",
        lambda q: q.paired.variance_removed),
)  # fmt: skip


def _cell(variant: str, on: str, what: str) -> Callable[[PlacementPair], Value]:
    """A cell of the placement model: ``variant`` ("a"/"b") on the CPUs of ``on``."""

    def get(q: PlacementPair) -> Value:
        key = (getattr(q, variant), cpu_set_name(getattr(q, on)))
        return q.effects.cells[key] if what == "n" else q.effects.cell_means[key]

    return get


def _effect(which: str, part: str) -> Callable[[PlacementPair], Value]:
    def get(q: PlacementPair) -> Value:
        effect = getattr(q.effects, which)
        if effect is None:
            return None
        return {"estimate": effect.estimate, "low": effect.ci[0], "high": effect.ci[1],
                "percent": effect.percent, "p": effect.p}[part]  # fmt: skip

    return get


PLACEMENT_ROWS = (
    Row("placed", "Samples with a placement", "count", lambda q: q.effects.n),
    Row("unplaced", "  without one (left out)", "count", lambda q: q.unplaced),
    Row("a_on_a", "Mean of A on A's CPUs (own)", "value", _cell("a", "a", "mean")),
    Row("a_on_a_n", "  samples", "count", _cell("a", "a", "n")),
    Row("a_on_b", "Mean of A on B's CPUs (swapped)", "value", _cell("a", "b", "mean")),
    Row("a_on_b_n", "  samples", "count", _cell("a", "b", "n")),
    Row("b_on_b", "Mean of B on B's CPUs (own)", "value", _cell("b", "b", "mean")),
    Row("b_on_b_n", "  samples", "count", _cell("b", "b", "n")),
    Row("b_on_a", "Mean of B on A's CPUs (swapped)", "value", _cell("b", "a", "mean")),
    Row("b_on_a_n", "  samples", "count", _cell("b", "a", "n")),
    Row("variant_effect", "Variant effect (B − A), CPU sets balanced", "value",
        _effect("variant", "estimate")),
    Row("variant_low", "  CI low", "value", _effect("variant", "low")),
    Row("variant_high", "  CI high", "value", _effect("variant", "high")),
    Row("variant_percent", "  relative to A (%)", "pct", _effect("variant", "percent")),
    Row("variant_p", "  p", "p", _effect("variant", "p")),
    Row("placement_effect", "Placement effect (B's CPUs − A's), variants balanced", "value",
        _effect("placement", "estimate")),
    Row("placement_low", "  CI low", "value", _effect("placement", "low")),
    Row("placement_high", "  CI high", "value", _effect("placement", "high")),
    Row("placement_percent", "  relative to A (%)", "pct",
        _effect("placement", "percent")),
    Row("placement_p", "  p", "p", _effect("placement", "p")),
    Row("interaction", "Interaction (variant effect on B's CPUs − on A's)", "value",
        _effect("interaction", "estimate")),
    Row("interaction_low", "  CI low", "value", _effect("interaction", "low")),
    Row("interaction_high", "  CI high", "value", _effect("interaction", "high")),
    Row("interaction_p", "  p", "p", _effect("interaction", "p")),
    Row("residual_sd", "Residual standard deviation", "value", lambda q: q.effects.residual_sd),
)  # fmt: skip


def _diag(attr: str, label: str, kind: str) -> Row:
    return Row(attr, label, kind, lambda a: getattr(a.diagnostics, attr))


DIAGNOSTIC_ROWS = (
    _diag("skewness", "Skewness", "ratio"),
    _diag("excess_kurtosis", "Excess kurtosis", "ratio"),
    _diag("above_3sd", "Samples ≥ +3σ", "count"),
    _diag("below_3sd", "Samples ≤ −3σ", "count"),
    _diag("expected_3sd", "  normal expects (each side)", "expect"),
    _diag("above_6sd", "Samples ≥ +6σ", "count"),
    _diag("below_6sd", "Samples ≤ −6σ", "count"),
    _diag("expected_6sd", "  normal expects (each side)", "expect"),
    _diag("tukey_outliers", "Beyond Tukey fences (1.5 IQR)", "count"),
    _diag("tukey_far_out", "Beyond outer fences (3 IQR)", "count"),
    _diag("most_extreme_sd", "Most extreme value (σ)", "ratio"),
    _diag("lag1_autocorrelation", "Lag-1 autocorrelation", "ratio"),
    Row(
        "effective_n", "Effective sample size", "count", lambda a: round(a.diagnostics.effective_n)
    ),
    _diag("kendall_tau", "Kendall τ (value vs iteration)", "ratio"),
    _diag("kendall_p", "  p", "p"),
    _diag("drift_percent", "Theil–Sen drift over the run (%)", "pct"),
    _diag("theil_sen_slope", "  slope per iteration", "sci"),
    Row("theil_sen_low", "  slope CI low", "sci", lambda a: a.diagnostics.theil_sen_ci[0]),
    Row("theil_sen_high", "  slope CI high", "sci", lambda a: a.diagnostics.theil_sen_ci[1]),
    Row("warmup_change", "Warm-up: first iterations vs rest (%)", "pct", lambda a: _warmup(a)),
    _diag("warmup_p", "  Welch p", "p"),
    Row("dropped", "Samples left out by trimming", "count", lambda a: a.dropped),
)


def _warmup(arm: Arm) -> float:
    d = arm.diagnostics
    if not d.warmup_n or not d.rest_mean:
        return math.nan
    return (d.warmup_mean / d.rest_mean - 1) * 100


def decimals_for(comparisons: Sequence[MetricComparison], factor: float = 1.0) -> int:
    """Decimals that show the smallest margin of error, in units of ``factor`` (1e-6 for
    µs of a metric in s), with two significant digits."""
    margins = [
        a.summary.margin / factor
        for c in comparisons
        for a in c.arms
        if math.isfinite(a.summary.margin) and a.summary.margin > 0
    ]
    if not margins:
        return 2
    return max(0, min(8, 1 - math.floor(math.log10(min(margins)))))


def format_value(value: Value, kind: str, decimals: int, factor: float = 1.0) -> str:
    """A raw value as the text tables show it: one in the metric's unit ("value", "sci")
    divided by ``factor``, the prefix the table's title names (µs for 1e-6 of a metric in s)."""
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and math.isnan(value):
        return "–"
    if kind == "count":
        return f"{int(value):,}"
    if kind == "level":
        return f"{value * 100:g}%"
    if kind == "share":
        return f"{value * 100:.1f}%"
    if kind == "value":
        return f"{value / factor:,.{decimals}f}"
    if kind == "pct":
        return format_percent(value)  # a change from near zero: 1.2e+56, not 57 digits
    if kind == "p":
        return "< 1e-300" if value == 0 else f"{value:.3g}"
    if kind == "expect":
        return f"{value:.3g}"
    if kind == "sci":
        return f"{value / factor:.3g}"
    return f"{value:.3f}"  # ratio-like numbers without a unit


@dataclass(frozen=True)
class TableData:
    """A table ready for rich, Markdown or HTML: a title, a header and rows of strings."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def _columns(block: Sequence[MetricComparison], subjects: str) -> list[tuple[str, Any]]:
    """(header, object) per column: arms or pairs, each subset side by side."""
    columns: list[tuple[str, Any]] = []
    first = block[0]
    count = {"arms": len(first.arms), "pairs": len(first.pairs), "paired": len(first.paired)}
    for i in range(count[subjects]):
        for c in block:
            obj: Arm | Pair | PairedPair
            if subjects == "arms":
                obj = c.arms[i]
                name = obj.label
            elif subjects == "paired":
                obj = c.paired[i]
                name = f"{obj.b} vs {obj.a}"
            else:
                obj = c.pairs[i]
                name = f"{obj.b} vs {obj.a}"
            suffix = "" if len(block) == 1 else (" (all)" if c.subset == ALL else " (trimmed)")
            columns.append((name + suffix, obj))
    return columns


def _table(
    title: str, rows: Sequence[Row], columns: list[tuple[str, Any]], decimals: int,
    skip_none: bool, factor: float = 1.0,
) -> TableData:  # fmt: skip
    body = []
    for row in rows:
        values = [row.get(obj) for _, obj in columns]
        if skip_none and all(v is None for v in values):
            continue
        if row.key == "dropped" and all(v == 0 for v in values):
            continue
        body.append((row.label, *(format_value(v, row.kind, decimals, factor) for v in values)))
    return TableData(title, ("", *(h for h, _ in columns)), tuple(body))


def block_tables(block: Sequence[MetricComparison]) -> list[TableData]:
    """The study's table, the difference table and the diagnostics for one workload·metric."""
    first = block[0]
    # in the unit the summary shows (µs, not 0.00000174 s): scaled by A's mean, as its row is
    factor, unit = scale_for(first.arms[0].summary.mean if first.arms else math.nan, first.unit)
    decimals = decimals_for(block, factor)
    better = "lower" if first.direction == "lower" else "higher"
    heading = f"{first.workload} · {first.metric}{f' ({unit})' if unit else ''}, {better} is better"
    tables = [
        _table(
            f"{heading}: the study's table",
            SUMMARY_ROWS,
            _columns(block, "arms"),
            decimals,
            False,
            factor,
        )
    ]
    if first.pairs:
        tables.append(
            _table(
                f"{heading}: B against A at {first.confidence * 100:g}% confidence,"
                f" threshold ±{first.threshold}",
                DIFFERENCE_ROWS,
                _columns(block, "pairs"),
                decimals,
                True,
                factor,
            )
        )
    if first.paired:
        tables.append(
            _table(
                f"{heading}: paired by iteration (synchronised runs) at"
                f" {first.confidence * 100:g}% confidence",
                PAIRED_ROWS,
                _columns(block, "paired"),
                decimals,
                False,
                factor,
            )
        )
    placed = next((c.placement for c in block if c.placement is not None), None)
    if placed is not None:
        tables.append(
            _table(
                f"{heading}: Placement: variant and CPU set told apart (the twins swapped"
                f" CPU sets) at {placed.effects.confidence * 100:g}% confidence",
                PLACEMENT_ROWS,
                [(f"{placed.b} vs {placed.a}", placed)],
                decimals,
                False,
                factor,
            )
        )
    tables.append(
        _table(
            f"{heading}: diagnostics",
            DIAGNOSTIC_ROWS,
            _columns(block, "arms"),
            decimals,
            False,
            factor,
        )
    )
    hosts = next((c.hosts for c in block if c.hosts is not None), None)
    if hosts is not None:
        tables.append(TableData(*host_table(hosts, first.title)))  # raw values: its unit
    if first.boots is not None:  # each arm's boots; the pairs read from their means
        tables.extend(_boot_tables(first, heading, decimals, factor))
    if first.warmup is not None:  # what was left out before every table above, and why
        title, header, rows = warmup_table(first.warmup, heading)
        tables.append(TableData(title, header, tuple(rows)))
    return tables


def _boot_tables(
    c: MetricComparison, heading: str, decimals: int, factor: float
) -> list[TableData]:
    """The Boots tables (``lab.report.boots``), their cells formatted as the others."""
    assert c.boots is not None
    parts = [arm_table(c.boots, heading)]
    if c.boots.pairs:
        level = c.pairs[0].verdict_confidence or c.confidence
        parts.append(pair_table(c.boots, heading, level))
    return [
        TableData(title, header, tuple((label, *(format_value(v, kind, decimals, factor)
                                                 for v in cells))
                                       for label, cells, kind in rows))
        for title, header, rows in parts
    ]  # fmt: skip


def blocks(comparisons: Sequence[MetricComparison]) -> list[list[MetricComparison]]:
    """Comparisons grouped by (study, workload, metric), subsets side by side."""
    grouped: dict[tuple[str, str, str], list[MetricComparison]] = {}
    for c in comparisons:
        grouped.setdefault((c.study, c.workload, c.metric), []).append(c)
    return list(grouped.values())


def notes(block: Sequence[MetricComparison]) -> list[str]:
    """The verdicts in words, then the diagnostics' warnings and how the bootstrap ran."""
    lines: list[str] = []
    for c in block:
        prefix = "" if len(block) == 1 else f"[{c.subset}] "
        lines.extend(prefix + "verdict: " + p.verdict.text for p in c.pairs)
        if c.stopped is not None:
            lines.append(f"{prefix}{c.stopped.note}; the tables' intervals are fixed-n")
        if c.boots is not None:
            lines.append(prefix + c.boots.note)
    if block[0].warmup is not None:
        lines.extend(warmup_notes(block[0].warmup))
    for c in block:
        lines.extend(f"[{c.subset}] {a.label}: {a.untrimmed}" for a in c.arms if a.untrimmed)
    for arm in block[0].arms:
        lines.extend(f"{arm.label}: {w}" for w in arm.diagnostics.warnings)
    for arm in block[0].arms:
        d = arm.diagnostics
        if d.kendall_points < d.n or d.theil_sen_points < d.n:
            lines.append(
                f"{arm.label}: drift measured on evenly spaced samples (Kendall τ on"
                f" {d.kendall_points:,}, Theil–Sen on {d.theil_sen_points:,} of {d.n:,})"
            )
    lines.extend(paired_note(q) for q in block[0].paired)
    lines.extend(placement_note(c.placement) for c in block if c.placement is not None)
    lines.extend(host_note(c.hosts) for c in block if c.hosts is not None)
    pairs: Sequence[Pair] = block[0].pairs
    if pairs:
        lines.append("median CI: " + pairs[0].difference.bootstrap.describe())
    return lines


def paired_note(q: PairedPair) -> str:
    """How much pairing by iteration helped, in words."""
    d = q.paired
    head = f"paired {q.b} vs {q.a}: {d.n:,} iterations in both"
    if d.n < 3 or not math.isfinite(d.variance_ratio):
        return head + "; too few pairs to say what pairing removed"
    welch = q.welch_ci[1] - q.welch_ci[0]
    if d.diff_ci[1] > d.diff_ci[0]:
        narrower = welch / (d.diff_ci[1] - d.diff_ci[0])
        widths = f"the paired interval is {narrower:.2f}× narrower than Welch's"
    else:  # it was "nan× narrower"
        widths = "every pair differs by the same: the paired interval has no width"
    # r of an arm whose samples are all the same is 0/0 (it was "r = nan")
    r = (
        f"r = {d.correlation:.3f}"
        if math.isfinite(d.correlation)
        else "r undefined: an arm is constant"
    )
    return (
        f"{head}; pairing removed {d.variance_removed * 100:.1f} % of the variance of B − A"
        f" ({r}); {widths}"
    )


def placement_note(q: PlacementPair) -> str:
    """The two effects in words, with the model that separated them."""
    e = q.effects
    v, p = e.variant, e.placement
    level = f"{e.confidence * 100:g}%"
    return (
        f"placement {q.b} vs {q.a}: on {q.b}'s CPUs instead of {q.a}'s {p.estimate:+.4g}"
        f" ({level} CI {p.ci[0]:+.4g} to {p.ci[1]:+.4g}); the variant, CPU sets balanced,"
        f" {v.estimate:+.4g} ({level} CI {v.ci[0]:+.4g} to {v.ci[1]:+.4g}); {e.method}"
    )


def placement_data(c: MetricComparison) -> dict[str, Value] | None:
    """The placement rows of a comparison for JSON: NaN as None, every row by its key."""
    q = c.placement
    if q is None:
        return None
    entry: dict[str, Value] = {"a": q.a, "b": q.b, "confidence": q.effects.confidence,
                               "method": q.effects.method}  # fmt: skip
    for row in PLACEMENT_ROWS:
        value = row.get(q)
        entry[row.key] = None if isinstance(value, float) and not math.isfinite(value) else value
    return entry


def paired_data(c: MetricComparison) -> list[dict[str, Value]]:
    """The paired rows of a comparison for JSON: NaN as None, every row by its key."""
    data: list[dict[str, Value]] = []
    for q in c.paired:
        entry: dict[str, Value] = {"a": q.a, "b": q.b, "confidence": q.paired.confidence}
        for row in PAIRED_ROWS:
            value = row.get(q)
            entry[row.key] = (
                None if isinstance(value, float) and not math.isfinite(value) else value
            )
        data.append(entry)
    return data
