"""The report's figures, drawn with matplotlib's object API on the Agg canvas (no display).

Large arms are thinned for drawing only (never for the statistics): scatter and violin use
at most ``MAX_POINTS`` evenly spaced samples, and each figure says so in its caption.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats

from lab.core import text
from lab.report import axes as axis_
from lab.report.summary import primary_change
from lab.stats.analysis import ALL, MetricComparison

# Names in figures are data: "$x$" in a variant's name is not mathematics (and "$\\frac"
# would fail the whole report). The lab's own labels use no mathtext.
matplotlib.rcParams["text.parse_math"] = False

MAX_POINTS = 20_000
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def thin(values: np.ndarray, limit: int = MAX_POINTS) -> np.ndarray:
    """Evenly spaced indices into values, at most ``limit`` of them."""
    if values.size <= limit:
        return np.arange(values.size)
    return np.linspace(0, values.size - 1, limit).round().astype(np.int64)


def new_figure(width: float = 7.0, height: float = 4.0) -> tuple[Figure, Axes]:
    """A figure of ``width`` × ``height`` inches on the Agg canvas, and its one axes."""
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _label(c: MetricComparison, inches: float = 3.4) -> str:
    """The metric and its unit as an axis's label, in lines that fit ``inches``."""
    label = text.shown(f"{c.metric} ({c.unit})" if c.unit else c.metric)
    return axis_.wrapped(label, axis_.chars_for(inches))


MAX_BINS = 400  # more than a figure 7 inches wide can show


def histogram_bins(values: np.ndarray) -> tuple[np.ndarray, str]:
    """The histogram's bin edges by the Freedman–Diaconis rule (width 2·IQR/n^(1/3), as
    ``np.histogram_bin_edges(values, "fd")``) and what the caption says of them.

    Over every sample when that makes at most :data:`MAX_BINS` bins; otherwise over the
    0.1–99.9 percentile range (a far outlier would make the rule's bins millions), and
    equal-width bins there when even that makes too many or the IQR is 0 (the rule's width
    is then 0: one bin)."""
    rule = "bins by the Freedman–Diaconis rule (width 2·IQR/n^(1/3))"
    if _fd_count(values, (float(values.min()), float(values.max()))) is not None:
        return np.histogram_bin_edges(values, "fd"), rule
    low, high = (float(v) for v in np.percentile(values, [0.1, 99.9]))
    if low == high:
        low, high = low - 0.5, high + 0.5
    if _fd_count(values[(values >= low) & (values <= high)], (low, high)) is not None:
        return np.histogram_bin_edges(values, "fd", range=(low, high)), rule
    count = min(MAX_BINS, max(10, math.ceil(math.log2(values.size)) + 1))
    said = f"{count} equal bins (the IQR is too small for the Freedman–Diaconis rule)"
    return np.linspace(low, high, count + 1), said


def _fd_count(values: np.ndarray, span: tuple[float, float]) -> int | None:
    """How many bins the Freedman–Diaconis rule makes over ``span``; None beyond
    :data:`MAX_BINS` or when its width is 0 (numpy would make one bin)."""
    if values.size < 2:
        return None
    q1, q3 = np.percentile(values, [25, 75])
    width = 2.0 * float(q3 - q1) * values.size ** (-1.0 / 3)
    if not width > 0:
        return None
    count = math.ceil((span[1] - span[0]) / width) if span[1] > span[0] else 1
    return count if count <= MAX_BINS else None


def histogram(c: MetricComparison) -> tuple[Figure, str]:
    fig, ax = new_figure()
    everything = np.concatenate([a.values for a in c.arms])
    edges, rule = histogram_bins(everything)
    low, high = float(edges[0]), float(edges[-1])
    outside = 0
    for i, arm in enumerate(c.arms):
        # an arm whose few samples all lie beyond the drawn range has no density: drawn empty
        with np.errstate(invalid="ignore", divide="ignore"):
            label = text.shown(f"{arm.label} (n={arm.summary.n:,})")
            # one filled outline an arm, not a rectangle a bin: 160 patches took 0.2 s to draw
            ax.hist(arm.values, bins=edges.tolist(), alpha=0.45, color=COLORS[i % len(COLORS)],
                    label=label, density=True, histtype="stepfilled")  # fmt: skip
        ax.axvline(arm.summary.mean, color=COLORS[i % len(COLORS)], linestyle="--", linewidth=1)
        outside += int(np.count_nonzero((arm.values < low) | (arm.values > high)))
    ax.set_xlim(low, high)  # a mean beyond the drawn bins does not stretch the axis
    ax.set_xlabel(_label(c, 6.5))
    ax.set_ylabel("density")
    ax.legend(loc="upper right")  # "best" tries every place against every patch: slow
    caption = f"Histograms overlaid per variant, {rule}; dashed lines are the means."
    if outside:
        samples = "sample is" if outside == 1 else "samples are"
        caption += f" {outside:,} {samples} beyond the 0.1–99.9 percentile range, not drawn."
    return fig, caption


VIOLIN_POINTS = 100  # where a violin's density is evaluated (matplotlib's default)
VIOLIN_BINS = 2_048  # the histogram its density is smoothed from


def violin_stats(values: np.ndarray, points: int = VIOLIN_POINTS) -> dict[str, Any]:
    """What ``Axes.violin`` draws of one arm: its Gaussian kernel density (Scott's bandwidth,
    as ``Axes.violinplot``) at ``points`` values from its minimum to its maximum, and its
    mean, median, minimum and maximum.

    The density is the samples' histogram on :data:`VIOLIN_BINS` bins smoothed with the
    kernel (a binned KDE: within a bin's width of the exact sum, which ``violinplot``
    computes over every sample at every point: 10 s for 18 violins of 20,000 samples
    each; this takes milliseconds, for every sample, not a thinned share)."""
    low, high = float(values.min()), float(values.max())
    coords = np.linspace(low, high, points)
    stats_ = {"coords": coords, "mean": float(values.mean()), "median": float(np.median(values)),
              "min": low, "max": high, "quantiles": np.array([])}  # fmt: skip
    sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
    width = sd * values.size ** (-1.0 / 5)  # Scott's factor times the sample's sd
    pad = 4 * width
    if not (width > 0 and high > low and math.isfinite(low - pad) and math.isfinite(high + pad)):
        stats_["vals"] = np.where(
            np.isclose(coords, low), 1.0, 0.0
        )  # one value, or too far apart for a double
        return stats_
    # Bins no narrower than a few steps between doubles there: samples of 1e15 that differ by
    # units (a counter's) have 0.125 between doubles, and 2,048 bins over their span would be
    # narrower (numpy refuses them, and lab report died). They are as many as the doubles.
    ulp = float(np.spacing(max(abs(low - pad), abs(high + pad))))
    bins = int(min(VIOLIN_BINS, max(1.0, ((high + pad) - (low - pad)) / (4 * ulp))))
    counts, edges = np.histogram(values, bins=bins, range=(low - pad, high + pad))
    centres = (edges[:-1] + edges[1:]) / 2
    # each point's density: the kernel summed over the bins' centres, weighted by counts
    z = (coords[:, None] - centres[None, :]) / width
    kernel = np.exp(-0.5 * z * z)
    density = kernel @ counts / (values.size * width * math.sqrt(2 * math.pi))
    stats_["vals"] = density
    return stats_


def box_violin(c: MetricComparison) -> tuple[Figure, str]:
    fig, ax = new_figure()
    positions = np.arange(1, len(c.arms) + 1)
    parts = ax.violin([violin_stats(a.values) for a in c.arms], positions=positions,
                      showextrema=False, widths=0.8)  # fmt: skip
    bodies: list[Any] = list(parts["bodies"])  # type: ignore[call-overload]
    for i, body in enumerate(bodies):
        body.set_facecolor(COLORS[i % len(COLORS)])
        body.set_alpha(0.3)
    ax.boxplot([a.values for a in c.arms], positions=positions, widths=0.25,
               flierprops={"markersize": 2, "alpha": 0.4})  # fmt: skip
    ax.set_xticks(positions, [text.shown(a.label) for a in c.arms])
    ax.set_ylabel(_label(c))
    caption = (
        "Box plots (whiskers at 1.5 IQR, outliers as points) inside violin plots (Gaussian"
        " kernel densities of every sample)."
    )
    return fig, caption


def run_order(c: MetricComparison) -> tuple[Figure, str]:
    fig, ax = new_figure(8.0, 4.0)
    lines, dense = 0, False
    for i, arm in enumerate(c.arms):
        color = COLORS[i % len(COLORS)]
        idx = thin(arm.values)
        dense = idx.size > 2000  # small points for a cloud, visible ones for a few samples
        ax.scatter(arm.iterations[idx], arm.values[idx], s=3 if dense else 12, color=color,
                   alpha=0.25 if dense else 0.7, label=text.shown(arm.label),
                   rasterized=True)  # fmt: skip
        x, y = smoothed(arm.iterations, arm.values)
        if x.size > 1:  # one bin (under 10 samples) is a point, no line
            ax.plot(x, y, color=color, linewidth=2)
            lines += 1
    ax.set_xlabel("iteration")
    ax.set_ylabel(_label(c))
    # above the axes, never over a sample ("best" weighs 40,000 points: slow)
    ax.legend(markerscale=4 if dense else 1, loc="lower left", bbox_to_anchor=(0.0, 1.0),
              ncols=max(1, len(c.arms)), frameon=False, borderaxespad=0.2)  # fmt: skip
    caption = "Every sample against its iteration" + (
        "; each line is a running median (of 50 bins, or of 5 samples each when fewer)."
        if lines
        else "."
    )
    if any(a.values.size > MAX_POINTS for a in c.arms):
        caption += f" Points drawn: {MAX_POINTS:,} evenly spaced per variant."
    return fig, caption


def smoothed(iterations: np.ndarray, values: np.ndarray, bins: int = 50) -> tuple[np.ndarray, ...]:
    """Medians of consecutive equal-count bins in iteration order, at their mean iteration."""
    count = max(1, min(bins, values.size // 5))
    chunks = np.array_split(np.arange(values.size), count)
    x = np.array([iterations[ch].mean() for ch in chunks])
    y = np.array([np.median(values[ch]) for ch in chunks])
    return x, y


def qq(c: MetricComparison) -> tuple[Figure, str]:
    fig, axes = new_figure(4.0 * len(c.arms), 4.0)
    fig.delaxes(axes)
    for i, arm in enumerate(c.arms):
        ax = fig.add_subplot(1, len(c.arms), i + 1)
        ordered = np.sort(arm.values)
        # evenly spaced quantiles, plus every one of the 50 most extreme values at each end
        tails = np.r_[0 : min(50, ordered.size), max(0, ordered.size - 50) : ordered.size]
        idx = np.union1d(thin(ordered, 2000), tails)
        theoretical = stats.norm.ppf((idx + 0.5) / ordered.size)  # Hazen plotting positions
        ax.scatter(theoretical, ordered[idx], s=4, color=COLORS[i % len(COLORS)])
        mean, sd = arm.summary.mean, arm.summary.sd
        ends = np.array([theoretical[0], theoretical[-1]])
        ax.plot(ends, mean + sd * ends, color="black", linewidth=1)
        ax.set_title(text.shown(arm.label))
        ax.set_xlabel("normal quantile")
        ax.set_ylabel(_label(c))
    caption = (
        "Normal Q–Q plots: ordered samples against normal quantiles; the line is the normal"
        " distribution with the sample's mean and sd. Points off the line at the ends are tails"
        " heavier than the margin of error assumes."
    )
    return fig, caption


def means(c: MetricComparison) -> tuple[Figure, str]:
    """Each arm's mean with its margin of error: bars from zero when zero is near (the
    bars' lengths then compare as the means do), points on an axis fitted to the means
    otherwise (a bar cut short of zero exaggerates the difference)."""
    fig, ax = new_figure(5.0, 4.0)
    labels = [text.shown(a.label) for a in c.arms]
    values = np.array([a.summary.mean for a in c.arms], dtype=float)
    errors = np.nan_to_num(np.array([a.summary.margin for a in c.arms], dtype=float))
    colors = [COLORS[i % len(COLORS)] for i in range(len(labels))]
    ends = np.r_[values - errors, values + errors]
    ends = ends[np.isfinite(ends)]
    bottom, top = (float(ends.min()), float(ends.max())) if ends.size else (0.0, 0.0)
    confidence = f"{c.confidence * 100:g}%"
    if bars_from_zero(bottom, top):
        ax.bar(labels, values, yerr=errors, capsize=8, color=colors, alpha=0.7)
        ax.axhline(0, color="black", linewidth=0.8)
        how = "bars from zero"
    else:
        positions = np.arange(len(labels))
        for i, (value, error) in enumerate(zip(values, errors, strict=True)):
            ax.errorbar([i], [value], yerr=[error], fmt="o", markersize=8, capsize=8,
                        color=colors[i])  # fmt: skip
        ax.set_xticks(positions, labels)
        ax.set_xlim(-0.6, len(labels) - 0.4)
        span = top - bottom or abs(top) * 0.01 or 1.0
        ax.set_ylim(bottom - 0.15 * span, top + 0.15 * span)
        how = "points: the y axis does not start at zero, so no bars"
    ax.set_ylabel(_label(c))
    caption = (
        f"Each arm's mean with the summary's margin of error at {confidence} confidence ({how})."
    )
    return fig, caption


def bars_from_zero(bottom: float, top: float) -> bool:
    """Whether means whose intervals span ``bottom`` to ``top`` are drawn as bars from zero:
    when zero is among them, or nearer than half the far end's size (a bar then shows the
    difference, not a sliver of it on a long bar)."""
    if bottom <= 0 <= top:
        return True
    near, far = sorted((abs(bottom), abs(top)))
    return near <= 0.5 * far


def _changes(
    ax: Axes, rows: Sequence[str], points: np.ndarray, intervals: np.ndarray, threshold: float,
    chars: int = 40,
) -> list[str]:  # fmt: skip
    """Each row's change in % with its interval on a horizontal axis (row 0 at the top),
    the threshold band shaded; what lies beyond :func:`lab.report.axes.change_bounds` is
    drawn at the axis's end as an arrowhead labelled with its value. Returns what was cut,
    as the caption says it."""
    y = np.arange(len(rows))[::-1].astype(float)
    lows, highs = (
        np.fmin(intervals[:, 0], intervals[:, 1]),
        np.fmax(intervals[:, 0], intervals[:, 1]),
    )
    bounds = axis_.change_bounds(points.tolist(), [*lows.tolist(), *highs.tolist()], threshold)
    if threshold:
        ax.axvspan(-threshold, threshold, color="#dddddd")  # the caption says what it is
    ax.axvline(0, color="black", linewidth=0.8)
    cut: list[str] = []
    for row, name in enumerate(rows):
        mid, lo, hi = points[row], lows[row], highs[row]
        drawn_lo, drawn_hi = (float(np.clip(np.nan_to_num(v, nan=mid), *bounds)) for v in (lo, hi))
        if math.isfinite(mid):
            shown_mid = float(np.clip(mid, *bounds))
            ax.plot([drawn_lo, drawn_hi], [y[row]] * 2, color="#4c72b0", linewidth=1.5)
            for end, value in ((drawn_lo, lo), (drawn_hi, hi)):
                if bounds[0] < end < bounds[1] or end == value:
                    ax.plot([end], [y[row]], marker="|", markersize=10, color="#4c72b0")
            if shown_mid == mid:
                ax.plot([mid], [y[row]], marker="o", color="#4c72b0")
        for side, bound in ((0, bounds[0]), (1, bounds[1])):
            beyond = [v for v in (mid, lo if side == 0 else hi)
                      if math.isfinite(v) and (v < bound if side == 0 else v > bound)]  # fmt: skip
            if not beyond:
                continue
            ax.plot([bound], [y[row]], marker="<" if side == 0 else ">", markersize=9,
                    color="#b42318", linestyle="none")  # fmt: skip
            words = axis_.percent_text(beyond[0])
            if len(beyond) > 1:
                words = (
                    f"{axis_.percent_text(beyond[0])} (interval to {axis_.percent_text(beyond[1])})"
                )
            ax.annotate(words, (bound, y[row]), xytext=(0, 7), textcoords="offset points",
                        ha="left" if side == 0 else "right", va="bottom", fontsize=9,
                        color="#b42318")  # fmt: skip
            what = "change" if beyond[0] == mid else "interval"
            cut.append(f"{' '.join(name.split())}: {what} {words}")
    ax.set_xlim(*axis_.limits(bounds))
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_yticks(y, ["\n".join(axis_.wrapped(part, chars) for part in name.split("\n"))
                      for name in rows])  # fmt: skip
    ax.ticklabel_format(axis="x", useOffset=False)
    return cut


def _cut_caption(cut: Sequence[str]) -> str:
    if not cut:
        return ""
    return (" Beyond the axis, drawn as an arrowhead at its end with the value: "
            + "; ".join(cut) + ".")  # fmt: skip


def difference(c: MetricComparison) -> tuple[Figure, str]:
    fig, ax = new_figure(6.0, 1.4 + 0.6 * len(c.pairs))
    names = [text.shown(f"{p.b} vs {p.a}") for p in c.pairs]
    pct = np.array([p.difference.percent for p in c.pairs], dtype=float)
    ci = np.array([p.difference.percent_ci for p in c.pairs], dtype=float).reshape(-1, 2)
    # a threshold in units has no place on an axis in %
    threshold = c.threshold.value * 100 if c.threshold.relative else 0.0
    cut = _changes(ax, names, pct, ci, threshold)
    better = "lower" if c.direction == "lower" else "higher"
    ax.set_xlabel(f"B − A, % of A's mean ({better} is better)")
    caption = (
        f"Difference of means as a percentage of A with its {c.confidence * 100:g}% confidence"
        " interval (ratio of means)"
        + (f"; the grey band is the ±{threshold:g} % threshold." if threshold else ".")
    )
    return fig, caption + _cut_caption(cut)


FOREST_INCHES = 5.0  # wide: shown 390 px wide (a phone), its 10 pt text is 10.8 px high


def forest(comparisons: Sequence[MetricComparison]) -> tuple[Figure, str]:
    """Every metric's change (B − A, in % of A, as each metric's difference plot reads it)
    with its interval, on one axis, the ±threshold band shaded: the whole answer in one
    picture, each row saying which way is better. An interval or change far beyond the
    others is cut at the axis's end, labelled with its value, so that one wide interval
    leaves the band and the others readable."""
    rows = [(c, p) for c in comparisons if c.subset == ALL for p in c.pairs]
    fig, ax = new_figure(FOREST_INCHES, 1.2 + 0.5 * len(rows))
    several = any(len(c.pairs) > 1 for c, _ in rows)
    names, changes, intervals = [], [], []
    for c, p in rows:
        percent, interval = primary_change(c, p)
        pair = f": {p.b} vs {p.a}" if several else ""
        names.append(
            text.shown(f"{c.workload} · {c.metric}{pair}") + f"\n({c.direction} is better)"
        )
        changes.append(percent)
        intervals.append(list(interval))
    # one in units has no place on an axis in %
    threshold = rows[0][0].threshold.value * 100 if rows and rows[0][0].threshold.relative else 0.0
    cut = _changes(ax, names, np.array(changes, dtype=float),
                   np.array(intervals, dtype=float).reshape(-1, 2), threshold,
                   chars=24)  # fmt: skip
    ax.set_xlabel("B − A, % of A's mean")
    caption = (
        f"Every metric's change (B − A, % of A's mean) with the interval its verdict read; the"
        f" grey band is the ±{threshold:g} % threshold."
        if threshold
        else "Every metric's change (B − A, % of A's mean) with the interval its verdict read."
    )
    return fig, caption + _cut_caption(cut)


PNG_OPTIONS = {"compress_level": 3}  # zlib's level: PIL's default (6) took longer, for 5 %


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", pil_kwargs=PNG_OPTIONS)
    return buf.getvalue()


def save(fig: Figure, path: Path) -> None:
    path.write_bytes(png(fig))


def figure_pngs(c: MetricComparison) -> list[tuple[str, bytes, str]]:
    """(name, PNG bytes, caption) of :func:`all_figures`: what a worker process draws for
    the page (``lab.report.html``), each figure closed once drawn."""
    return [(name, png(fig), caption) for name, fig, caption in all_figures(c)]


def all_figures(c: MetricComparison) -> list[tuple[str, Figure, str]]:
    """(name, figure, caption) for one workload·metric."""
    figures = [("hist", *histogram(c)), ("box", *box_violin(c)), ("order", *run_order(c)),
               ("qq", *qq(c)), ("means", *means(c))]  # fmt: skip
    if c.pairs and all(math.isfinite(p.difference.percent) for p in c.pairs):
        figures.append(("diff", *difference(c)))
    return figures
