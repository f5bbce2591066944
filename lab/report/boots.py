"""The Boots tables of ``lab compare``: each arm's boots and variance components, and B
against A read from the boot means (``lab.stats.boots``)."""

from __future__ import annotations

import math
from typing import Any

from lab.stats.boots import BootAnalysis, BootComponents, BootPair
from lab.stats.bootsneeded import MAX_MORE
from lab.stats.verdict import Outcome, Threshold

Cell = float | int | str | None


def _sd(variance: float) -> float:
    return math.sqrt(variance) if math.isfinite(variance) else math.nan


ARM_ROWS: tuple[tuple[str, str, str, Any], ...] = (  # key, label, kind, value of components
    ("boots", "Boots", "count", lambda c: c.boots),
    ("samples", "Samples", "count", lambda c: c.samples),
    ("samples_per_boot", "  per boot (mean)", "ratio", lambda c: c.samples / c.boots),
    ("between_sd", "Between-boot standard deviation", "value", lambda c: _sd(c.between)),
    ("within_sd", "Within-boot standard deviation", "value", lambda c: _sd(c.within)),
    ("icc", "Intraclass correlation (share between boots)", "ratio", lambda c: c.icc),
    ("effective_samples", "Samples worth as independent ones", "ratio",
     lambda c: c.effective_samples),
)  # fmt: skip

PAIR_ROWS: tuple[tuple[str, str, str, Any], ...] = (  # key, label, kind, value of a BootPair
    ("boots_a", "Boots of A", "count", lambda p: p.difference.boots_a),
    ("boots_b", "Boots of B", "count", lambda p: p.difference.boots_b),
    ("diff", "Difference of boot means (B − A)", "value", lambda p: p.difference.diff),
    ("diff_low", "  Welch CI low", "value", lambda p: p.difference.diff_ci[0]),
    ("diff_high", "  Welch CI high", "value", lambda p: p.difference.diff_ci[1]),
    ("df", "  degrees of freedom", "ratio", lambda p: p.difference.df),
    ("percent", "Change relative to A (%)", "pct", lambda p: p.difference.percent),
    ("percent_low", "  ratio CI low (%)", "pct", lambda p: p.difference.percent_ci[0]),
    ("percent_high", "  ratio CI high (%)", "pct", lambda p: p.difference.percent_ci[1]),
    ("verdict", "Verdict", "text", lambda p: p.verdict.outcome.value),
)  # fmt: skip


def arm_table(
    boots: BootAnalysis, title: str
) -> tuple[str, tuple[str, ...], list[tuple[str, list[Cell], str]]]:
    """(title, header, rows as (label, raw cells, kind)) of the arms' boots."""
    header = ("", *(label for label, _ in boots.arms))
    rows = [(label, [get(c) for _, c in boots.arms], kind) for _, label, kind, get in ARM_ROWS]
    return f"{title}: boots (the unit: {boots.unit})", header, rows


def pair_table(
    boots: BootAnalysis, title: str, confidence: float
) -> tuple[str, tuple[str, ...], list[tuple[str, list[Cell], str]]]:
    """(title, header, rows) of B against A read from the boot means."""
    header = ("", *(f"{p.b} vs {p.a}" for p in boots.pairs))
    rows = [(label, [get(p) for p in boots.pairs], kind) for _, label, kind, get in PAIR_ROWS]
    return (
        f"{title}: B against A from the boot means at {confidence * 100:g}% confidence",
        header,
        rows,
    )


def _clean(value: Cell) -> Cell:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _arm_data(label: str, c: BootComponents) -> dict[str, Cell]:
    return {"arm": label, **{key: _clean(get(c)) for key, _, _, get in ARM_ROWS}}


def per_boot(boots: BootAnalysis, p: BootPair) -> float:
    """The iterations per boot of the pair's two arms, on average: what more boots would run."""
    arms = dict(boots.arms)
    a, b = arms[p.a], arms[p.b]
    return (a.samples + b.samples) / (a.boots + b.boots)


def needed_text(boots: BootAnalysis, p: BootPair, threshold: Threshold) -> str:
    """For an inconclusive verdict on boot means: about how many more boots per variant
    would settle it (``lab.stats.bootsneeded``), and that this is an estimate; else ""."""
    if p.verdict.outcome != Outcome.INCONCLUSIVE:
        return ""
    level = f"{p.difference.confidence * 100:g} %"
    if p.boots_needed is None:
        return (
            f"{p.b} vs {p.a} is inconclusive on boot means, and no number of boots (up to"
            f" {MAX_MORE:,} more per variant) would settle it at {level} against ±{threshold}"
            " while the boot means' mean and sd stay as observed: the change lies at the"
            " threshold, or the threshold cannot judge it (a percentage of a mean of 0)"
        )
    more = p.boots_needed
    return (
        f"{p.b} vs {p.a}: about {more:,} more boot{'s' if more != 1 else ''} per variant (at"
        f" {per_boot(boots, p):.3g} iterations per boot) would narrow the interval enough to"
        f" decide at {level} against ±{threshold}; an estimate, holding the boot means'"
        " observed mean and sd in each arm"
    )


def _pair_data(boots: BootAnalysis, p: BootPair, threshold: Threshold | None) -> dict[str, Cell]:
    entry: dict[str, Cell] = {"a": p.a, "b": p.b, "confidence": p.difference.confidence}
    entry.update((key, _clean(get(p))) for key, _, _, get in PAIR_ROWS)
    entry["verdict_text"] = p.verdict.text
    entry["boots_needed"] = p.boots_needed  # null unless inconclusive and settled by some
    entry["boots_needed_per_boot"] = per_boot(boots, p)
    entry["boots_needed_note"] = (
        needed_text(boots, p, threshold) or None if threshold is not None else None
    )
    return entry


def boots_data(boots: BootAnalysis, threshold: Threshold | None = None) -> dict[str, Any]:
    """The boots of a comparison for JSON: the unit, the note, each arm and each pair (with
    ``threshold``, the verdict's, an inconclusive pair's note on the boots it needs)."""
    return {
        "unit": boots.unit,
        "note": boots.note,
        "arms": [_arm_data(label, c) for label, c in boots.arms],
        "pairs": [_pair_data(boots, p, threshold) for p in boots.pairs],
    }
