"""The factorial answer printed: each factor's effect, and each interaction's, with its
interval in the metric's unit and as a ratio, and its share of the variation
(:mod:`lab.app.effects`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from lab.core.text import cell
from lab.stats.agelead import age_leads

if TYPE_CHECKING:
    from lab.stats.effects import Effect
    from lab.stats.factorialdata import FactorialAnswer


def share_text(shares: dict[str, float], term: str) -> str:
    """A term's share of the variation; a term fitted from the blocks' means (a factor of the
    runs, lab.stats.effects) has none among the within-block sums of squares."""
    return f"{shares[term] * 100:.1f} %" if term in shares else "(between runs)"


def ratio_text(effect: Effect, direction: str) -> str:
    """ "×1.31 [1.22, 1.40], worse": the ratio of the high level to the low, and what it
    means where its interval excludes 1 (``direction``: which way the metric is better)."""
    if effect.ratio is None or effect.ratio_ci is None:
        return "-"
    low, high = effect.ratio_ci
    text = f"×{effect.ratio:.3g} [{low:.3g}, {high:.3g}]"
    if low > 1 or high < 1:
        up = low > 1
        better = up == (direction == "higher")
        text += ", better" if better else ", worse"
    return text


def headline(answer: FactorialAnswer) -> str:
    """What was fitted: the workload, its factors, cells, blocks and samples, the intervals."""
    d, e = answer.data, answer.effects
    blocks = "" if d.blocks is None else f" in {len(set(d.blocks.tolist()))} blocks (runs)"
    head = f"Factorial effects: {d.workload}: {' × '.join(d.factors)}, {len(d.cells)} cells{blocks}"
    if e is None:
        return head
    corrected = (
        "Bonferroni over each metric's effects" if str(e.correction) == "bonferroni" else "each"
    )
    return f"{head}; intervals at {e.confidence * 100:g} % ({corrected})"


def print_effects(console: Console, answers: Sequence[FactorialAnswer]) -> None:
    """One table per factorial workload, a row per metric and term: the level the effect is
    given at, the estimate ± in the metric's unit, the ratio of the high level to the low (log
    scale), the term's share of the variation; then the block's and the error's shares."""
    by_workload: dict[tuple[str, str], list[FactorialAnswer]] = {}
    for answer in answers:
        by_workload.setdefault((answer.data.study, answer.data.workload), []).append(answer)
    for group in by_workload.values():
        table = Table("metric", "term", "at level", "effect", "ratio high/low", "share",
                      title=headline(group[0]), title_justify="left",
                      title_style="bold")  # fmt: skip
        notes = []
        for answer in group:
            d, e = answer.data, answer.effects
            if e is None:
                table.add_row(cell(d.metric), "-", "", cell(f"no fit: {answer.why_not}"), "", "")
                continue
            shares = {x.term: x.share for x in e.shares}
            for i, x in enumerate(e.effects):
                half = (x.ci[1] - x.ci[0]) / 2
                table.add_row(
                    cell(f"{d.metric} ({d.unit})" if i == 0 and d.unit else d.metric if i == 0
                         else ""),
                    cell(x.term + (f" (= {', '.join(x.aliases)})" if x.aliases else "")),
                    cell(x.level), f"{x.estimate:+.4g} ± {half:.3g}", ratio_text(x, d.direction),
                    share_text(shares, x.term),
                )  # fmt: skip
            rest = [f"{t} {shares[t] * 100:.1f} %" for t in ("block", "error") if t in shares]
            table.add_row("", "", "", "", "", cell(", ".join(rest)), end_section=True)
            notes.append(", ".join(e.not_estimable))
        console.print(table)
        method = next((a.effects.method for a in group if a.effects is not None), "")
        console.print(cell(
            "* an effect is half the change from a factor's low level to its high one (q, Jain"
            " ch. 17), averaged over the other factors; the ratio is high over low, from the"
            f" same fit of log values; {method}"
        ))  # fmt: skip
        for answer in group:
            for lead in age_leads(answer.data.factors, answer.data.orders, answer.effects):
                assert answer.effects is not None
                console.print(cell(f"* {answer.data.metric}: "
                                   f"{lead.sentence(answer.effects.confidence)}"))  # fmt: skip
        for answer in group:
            e = answer.effects
            if e is not None and e.confounded:
                between = (f"from the runs' means ({e.df_between} degrees of freedom)"
                           if e.df_between is not None else
                           "not estimated: no run to spare beside one per level")  # fmt: skip
                console.print(cell(
                    f"* {answer.data.metric}: {', '.join(e.confounded)} holds one level per run"
                    f" (block): its interactions are fitted within runs, itself {between}"
                ))  # fmt: skip
        missing = sorted({n for n in notes if n})
        if missing:
            console.print(cell(f"* not estimable from these cells: {'; '.join(missing)}"))
        console.print()
