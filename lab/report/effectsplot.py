"""A factorial's figures: the effects plot (each term's ratio of its high level to its low,
with its interval) and the interaction plot (the cell means of one factor's levels, a line per
level of another): where the lines are parallel, the factors do not interact."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from lab.core import text
from lab.report.plots import COLORS, new_figure
from lab.stats.factorialdata import FactorialAnswer


def effects_plot(answer: FactorialAnswer) -> tuple[Figure, str]:
    """Each effect as a ratio high/low on a log axis, with its interval, 1 marked."""
    assert answer.effects is not None
    d, effects = answer.data, [e for e in answer.effects.effects if e.ratio_ci is not None]
    fig, ax = new_figure(6.5, 1.2 + 0.45 * max(1, len(effects)))
    for y, e in enumerate(effects):
        assert e.ratio is not None and e.ratio_ci is not None
        low, high = e.ratio_ci
        color = COLORS[1] if low > 1 or high < 1 else COLORS[0]
        ax.errorbar([e.ratio], [y], xerr=[[e.ratio - low], [high - e.ratio]], fmt="o",
                    color=color, capsize=3)  # fmt: skip
    ax.axvline(1.0, color="#555555", linewidth=0.8, linestyle="--")
    ax.set_xscale("log")
    ax.set_yticks(range(len(effects)), [text.shown(f"{e.term} ({e.level})") for e in effects])
    ax.invert_yaxis()
    ax.set_xlabel(text.shown(f"{d.metric}: ratio of the high level to the low"))
    e0 = answer.effects
    caption = (
        f"{d.workload} · {d.metric}: each effect as the ratio of its high level to its low"
        f" (geometric means), with its {e0.confidence * 100:g} % interval"
        f" ({'Bonferroni over the effects' if str(e0.correction) == 'bonferroni' else 'each'});"
        " red where the interval excludes 1"
    )
    return fig, caption


def interaction_plot(answer: FactorialAnswer) -> tuple[Figure, str]:
    """The mean of each cell: the first factor's levels along the axis, a line per level of
    the second (cells a design left out are missing points)."""
    d = answer.data
    first, second = d.factors[0], d.factors[1]
    xs, lines = d.orders[first], d.orders[second]
    fig, ax = new_figure(5.5, 3.6)
    for i, level in enumerate(lines):
        means = []
        for x in xs:
            mask = (d.levels[first] == x) & (d.levels[second] == level)
            means.append(float(np.mean(d.values[mask])) if mask.any() else np.nan)
        ax.plot(range(len(xs)), means, marker="o", color=COLORS[i % len(COLORS)],
                label=text.shown(f"{second} {level}"))  # fmt: skip
    ax.set_xticks(range(len(xs)), [text.shown(x) for x in xs])
    ax.set_xlabel(text.shown(first))
    ax.set_ylabel(text.shown(f"{d.metric} ({d.unit})" if d.unit else d.metric))
    ax.legend(fontsize="small", loc="best")
    caption = (
        f"{d.workload} · {d.metric}: the mean of each cell, by {first} along the axis and a line"
        f" per level of {second}; parallel lines mean no interaction (cell means pool the"
        " blocks: the effects above are fitted within them)"
    )
    return fig, caption
