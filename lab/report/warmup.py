"""The Warm-up table and notes: what each arm's rule was, what was cut, and the tests' say.

One column per arm (per arm and run when a study pooled several runs of a workload). The
CUSUM test's text is shown for every arm whatever the rule, so a reader sees whether a
declared count was long enough, or whether a run that declared none had a warm-up;
MSER-5 stands beside it as a second opinion (``lab.stats.warmup``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from lab.stats.discard import NONE, ArmCut, WarmupCut, describe_rule
from lab.stats.warmup import WarmupSuggestion


def ranges(iterations: Sequence[int]) -> str:
    """'1–2, 31–32, 40' for [1, 2, 31, 32, 40]; '–' for none."""
    if not iterations:
        return "–"
    spans: list[list[int]] = []
    for i in sorted(iterations):
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        elif not spans or i != spans[-1][1]:
            spans.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)


WARMUP_ROWS: tuple[tuple[str, str, Callable[[ArmCut], Any]], ...] = (
    ("declared", "Declared warm-up", lambda a: describe_rule(a.rule)),
    ("source", "  from", lambda a: a.source),
    ("boots", "Boots", lambda a: a.boots),
    ("samples", "Samples before the cut", lambda a: a.samples),
    ("discarded", "Discarded", lambda a: len(a.discarded)),
    ("discarded_iterations", "  iterations", lambda a: ranges(a.discarded)),
    ("own", "  by this arm's own rule", lambda a: ranges(a.own)),
    ("cusum", "CUSUM test (every sample, in order)", lambda a: a.cusum.text),
    ("mser5", "MSER-5 (a second opinion)", lambda a: a.mser.text),
)


def _header(cut: WarmupCut, arm: ArmCut) -> str:
    several = len({a.run for a in cut.arms}) > 1
    return f"{arm.label} · {arm.run}" if several else arm.label


def warmup_table(cut: WarmupCut, title: str) -> tuple[str, tuple[str, ...], list[tuple[str, ...]]]:
    """(title, header, rows) of the Warm-up table, every cell as text."""
    header = ("", *(_header(cut, a) for a in cut.arms))
    rows = []
    for _, label, get in WARMUP_ROWS:
        cells = [get(a) for a in cut.arms]
        rows.append((label, *(f"{c:,}" if isinstance(c, int) else str(c) for c in cells)))
    return f"{title}: Warm-up", header, rows


def warmup_notes(cut: WarmupCut) -> list[str]:
    """One line when samples were discarded; one when none was declared but CUSUM saw one."""
    if cut.discarded:
        rules = ", ".join(dict.fromkeys(f"{describe_rule(a.rule)}, {a.source}" for a in cut.arms))
        per_arm: dict[str, tuple[int, int, list[int]]] = {}
        for a in cut.arms:
            dropped, total, its = per_arm.get(a.label, (0, 0, []))
            per_arm[a.label] = (dropped + len(a.discarded), total + a.samples,
                                its + list(a.discarded))  # fmt: skip
        arms = "; ".join(
            f"{label} {dropped:,} of {total:,} samples (iterations {ranges(its)})"
            for label, (dropped, total, its) in per_arm.items()
        )
        return [f"warm-up discarded ({rules}): {arms}"]
    found = [a for a in cut.arms if a.rule == NONE and a.cusum.n]
    if found:
        arms = ", ".join(f"{a.label} {a.cusum.n}" for a in found)
        return [
            f"warm-up: none declared, but the CUSUM test finds one ({arms} iterations);"
            " see the Warm-up table, or compare with --warmup auto"
        ]
    return []


def _suggestion(s: WarmupSuggestion) -> dict[str, Any]:
    def clean(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return {"n": s.n, "method": s.method, "statistic": clean(s.statistic), "p": clean(s.p),
            "change_at": s.change_at, "text": s.text}  # fmt: skip


def warmup_data(cut: WarmupCut) -> list[dict[str, Any]]:
    """The Warm-up table for JSON: one object per arm (and run), iterations as lists."""
    return [
        {
            "arm": a.label, "run": a.run, "rule": a.rule, "source": a.source,
            "samples": a.samples, "boots": a.boots, "discarded": list(a.discarded),
            "own": list(a.own), "cusum": _suggestion(a.cusum), "mser5": _suggestion(a.mser),
        }
        for a in cut.arms
    ]  # fmt: skip


def warmup_csv_rows(cut: WarmupCut) -> list[tuple[str, str, Any]]:
    """(subject, statistic, value) rows of the Warm-up table for the long CSV layout."""
    rows = []
    for a in cut.arms:
        subject = _header(cut, a)
        rows.append((subject, "rule", a.rule))
        rows.extend((subject, key, get(a)) for key, _, get in WARMUP_ROWS[1:])
    return rows
