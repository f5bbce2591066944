"""The factorial answer printed: each factor's effect, and each interaction's, with its
interval in the metric's unit and as a ratio, and its share of the variation
(:mod:`lab.app.effects`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from lab.core.text import cell

if TYPE_CHECKING:
    from lab.app.effects import FactorialAnswer
    from lab.stats.effects import Effect


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
    d, e = answer.data, answer.effects
    blocks = "" if d.blocks is None else f" in {len(set(d.blocks.tolist()))} blocks (runs)"
    head = (
        f"Factorial effects: {d.workload} · {d.metric}: {' × '.join(d.factors)},"
        f" {len(d.cells)} cells{blocks}, {d.values.size} samples"
    )
    if e is None:
        return f"{head}: no effects ({answer.why_not})"
    corrected = "Bonferroni over the effects" if str(e.correction) == "bonferroni" else "each"
    return f"{head}; intervals at {e.confidence * 100:g} % ({corrected})"


def print_effects(console: Console, answers: Sequence[FactorialAnswer]) -> None:
    """One table per factorial workload · metric: term, level, estimate ± in the unit, the
    ratio of the high level to the low (log scale) and the term's share of the variation."""
    for answer in answers:
        d, e = answer.data, answer.effects
        if e is None:
            console.print(cell(headline(answer)))
            continue
        table = Table("term", "at level", f"effect ({d.unit or 'unit'})", "ratio high/low",
                      "share", title=headline(answer), title_justify="left",
                      title_style="bold")  # fmt: skip
        shares = {s.term: s.share for s in e.shares}
        for x in e.effects:
            half = (x.ci[1] - x.ci[0]) / 2
            table.add_row(
                cell(x.term + (f" (= {', '.join(x.aliases)})" if x.aliases else "")),
                cell(x.level), f"{x.estimate:+.4g} ± {half:.3g}", ratio_text(x, d.direction),
                f"{shares.get(x.term, float('nan')) * 100:.1f} %",
            )  # fmt: skip
        table.add_row("error", "", "", "", f"{shares.get('error', float('nan')) * 100:.1f} %")
        console.print(table)
        console.print(cell(
            f"* an effect is half the change from a factor's low level to its high one (q,"
            f" Jain ch. 17), averaged over the other factors; the ratio is high over low, from"
            f" the same fit of log values; {e.method}"
            + (f"; not estimable: {', '.join(e.not_estimable)}" if e.not_estimable else "")
        ))  # fmt: skip
        console.print()
