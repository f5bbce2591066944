"""A sweep's figure: B's change at each value of its first key, with each value's verdict."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from lab.core import text
from lab.core.sweeps import magnitude
from lab.report.plots import COLORS, new_figure
from lab.report.summary import WORDS
from lab.stats.sweep import SweepComparison
from lab.stats.verdict import Outcome

VERDICT_MARKS = {  # marker, colour, filled
    Outcome.FASTER: ("o", "#1a7f37", True),
    Outcome.SLOWER: ("v", "#b42318", True),
    Outcome.EQUIVALENT: ("s", "#555555", True),
    Outcome.INCONCLUSIVE: ("o", "#9a6700", False),
}


def sweep_plot(sweep: SweepComparison) -> tuple[Figure, str]:
    """B's change in % of A at each value of the sweep's first key, with its interval, the
    ±threshold band shaded, each value's verdict (in the family) as its marker, and the
    crossing; a log axis for values that span a decade or more (sizes)."""
    fig, ax = new_figure(7.5, 4.2)
    axis = sweep.axis
    texts = [dict(v.point)[axis] for v in sweep.values]
    sizes = [magnitude(t) for t in texts]
    numeric = all(s is not None and s > 0 for s in sizes)
    if numeric:
        where = {t: float(s or 0) for t, s in zip(texts, sizes, strict=True)}
        if max(where.values()) / min(where.values()) >= 10:
            ax.set_xscale("log")
    else:
        where = {t: float(i) for i, t in enumerate(dict.fromkeys(texts))}
    if sweep.threshold.relative:  # one in units has no place on an axis in %
        t = sweep.threshold.value * 100
        ax.axhspan(-t, t, color="#dddddd", label=f"±{t:g}% threshold")
    ax.axhline(0, color="black", linewidth=0.8)
    groups: dict[tuple[tuple[str, str], ...], list[Any]] = {}
    for v in sweep.values:
        groups.setdefault(tuple((k, x) for k, x in v.point if k != axis), []).append(v)
    low, high = _sweep_span(sweep)
    cut = 0
    for i, (rest, members) in enumerate(groups.items()):
        members.sort(key=lambda v: where[dict(v.point)[axis]])
        x = np.array([where[dict(v.point)[axis]] for v in members])
        pct = np.array([v.pair.difference.percent for v in members])
        ci = np.array([v.pair.difference.percent_ci for v in members]).reshape(-1, 2)
        color = COLORS[i % len(COLORS)]
        name = ", ".join(f"{k}={x}" for k, x in rest)
        ax.plot(x, pct, color=color, linewidth=1, alpha=0.6, label=text.shown(name) or None)
        # An interval far wider than the changes (few samples, 99.99 %) is cut at the axis,
        # its cut end an arrowhead, so the changes themselves stay readable.
        shown_ci = np.clip(np.nan_to_num(ci, nan=0.0), low, high)
        err = np.abs(np.vstack([pct - shown_ci[:, 0], shown_ci[:, 1] - pct]))
        ax.errorbar(x, np.nan_to_num(pct), yerr=np.nan_to_num(err), fmt="none", ecolor=color,
                    capsize=4, alpha=0.8)  # fmt: skip
        for end, bound, arrow in ((1, high, "^"), (0, low, "v")):
            beyond = (ci[:, end] > high) if end else (ci[:, end] < low)
            cut += int(beyond.sum())
            ax.plot(x[beyond], np.full(int(beyond.sum()), bound), marker=arrow,
                    linestyle="none", color=color)  # fmt: skip
        for xv, yv, v in zip(x, pct, members, strict=True):
            marker, mark, filled = VERDICT_MARKS[v.verdict.outcome]
            ax.plot([xv], [yv], marker=marker, markersize=9, linestyle="none",
                    markeredgecolor=mark, markerfacecolor=mark if filled else "white")  # fmt: skip
    shown = {v.verdict.outcome for v in sweep.values}
    for outcome in (o for o in VERDICT_MARKS if o in shown):  # one legend entry each, in order
        marker, mark, filled = VERDICT_MARKS[outcome]
        ax.plot([], [], marker=marker, markersize=8, linestyle="none", markeredgecolor=mark,
                markerfacecolor=mark if filled else "white", label=WORDS[outcome])  # fmt: skip
    for crossing in sweep.crossings:
        if crossing.value is not None:
            ax.axvline(where[crossing.value], color="#1a7f37", linestyle=":", linewidth=1.2,
                       label=text.shown(f"crossing: {axis}={crossing.value}"))  # fmt: skip
    ax.set_xticks(
        sorted(set(where.values())),
        [text.shown(t) for t, _ in sorted(where.items(), key=lambda kv: kv[1])],
    )
    ax.minorticks_off()
    ax.set_xlabel(text.shown(axis))
    better = "lower" if sweep.direction == "lower" else "higher"
    ax.set_ylabel(f"B vs A, % of A's mean ({better} is better)")
    title = f"{sweep.metric}: {sweep.labels[1]} vs {sweep.labels[0]}"
    ax.set_title(text.shown(title), fontsize="medium")
    ax.legend(fontsize="small", loc="best")
    caption = (
        f"{sweep.labels[1]}'s change against {sweep.labels[0]} in % of {sweep.labels[0]}'s mean"
        f" at each value of {axis}, with its {sweep.confidence * 100:g}% interval (each value's"
        f" own run); the grey band is the practical threshold; each marker is the value's"
        f" verdict, corrected with {sweep.correction.method} over the {len(sweep.values)}"
        " values; the dotted line is the crossing, the smallest value where B is better"
        " beyond the threshold."
    )
    ax.set_ylim(low, high)
    if cut:
        caption += (f" {cut} interval end{'s' if cut > 1 else ''} beyond the drawn range"
                    " (arrowheads) are cut; the table has them.")  # fmt: skip
    if numeric and ax.get_xscale() == "log":
        caption += f" {axis} on a log axis."
    return fig, caption


def _sweep_span(sweep: SweepComparison) -> tuple[float, float]:
    """The change axis: the changes and the threshold band with room around them, and the
    intervals where they fit in three times that (beyond it an interval says little more
    than "wide")."""
    pct = [v.pair.difference.percent for v in sweep.values]
    ends = [e for v in sweep.values for e in v.pair.difference.percent_ci]
    t = sweep.threshold.value * 100 if sweep.threshold.relative else 0.0
    finite = [p for p in pct if np.isfinite(p)] or [0.0]
    low, high = min(*finite, -t, 0.0), max(*finite, t, 0.0)
    room = max(high - low, 2 * t, 1.0)
    limit_low, limit_high = low - 3 * room, high + 3 * room
    drawn = [e for e in ends if np.isfinite(e) and limit_low <= e <= limit_high]
    low, high = min([low, *drawn]), max([high, *drawn])
    pad = 0.05 * (high - low or 1.0)
    return low - pad, high + pad
