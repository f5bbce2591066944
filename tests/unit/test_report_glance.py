"""The report reads at a glance (issue 33 §4): one absurd interval is cut at the axis's end
with its value instead of collapsing every other change onto 0; no heading without content;
histogram bins by the Freedman–Diaconis rule; means as bars from zero or as points; every
axis label inside its figure.

The report is built from an imported CSV, as a user would, with its figures drawn in this
process and kept (``figure_pngs`` and ``forest`` wrapped), so the tests read the figure
objects themselves, never pixels.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.patches import Polygon
from matplotlib.text import Annotation

import lab.report.html as html
from lab.cli import main
from lab.report import axes, drawing, plots
from lab.report.summary import primary_change
from lab.stats.analysis import MetricComparison

LONG_METRIC = "time_to_first_byte_after_a_cold_cache_flush_and_a_warm_up_of_the_connection_pool"
LONG_UNIT = "milliseconds per request per connection, measured on the client side"


def samples() -> dict[tuple[str, str], list[float]]:
    """(variant, metric) -> values: two ordinary metrics and retransmits of 0, 0, 0, 1e9."""
    rng = np.random.default_rng(7)
    found: dict[tuple[str, str], list[float]] = {}
    for variant, shift in (("thp", 0.0), ("shp1g", 1.0)):
        found[variant, "bandwidth"] = rng.normal(2.6 + 0.15 * shift, 0.1, 60).round(4).tolist()
        found[variant, "latency"] = rng.normal(30 - shift, 1.0, 60).round(3).tolist()
        found[variant, "retransmits"] = [0.0, 0.0, 0.0, 1e9 if shift else 1.0]
        found[variant, LONG_METRIC] = rng.normal(5 + shift, 0.5, 30).round(3).tolist()
    return found


UNITS = {"bandwidth": ("Gbit/s", "higher"), "latency": ("ms", "lower"),
         "retransmits": ("count", "lower"), LONG_METRIC: (LONG_UNIT, "lower")}  # fmt: skip


@dataclass
class Built:
    page: str
    figures: dict[tuple[str, str], tuple[Figure, str]] = field(default_factory=dict)
    comparisons: dict[str, MetricComparison] = field(default_factory=dict)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    folder = tmp_path_factory.mktemp("glance")
    with (folder / "d.csv").open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["variant", "workload", "metric", "value", "iteration", "unit", "direction"])
        for (variant, metric), values in samples().items():
            for i, value in enumerate(values, 1):
                out.writerow([variant, "iperf3", metric, value, i, *UNITS[metric]])
    (folder / "none.toml").write_text("")
    config = ["--config", str(folder / "none.toml")]
    assert main([*config, "import", "--db", str(folder / "lab.db"), str(folder / "d.csv")]) == 0
    result = Built(page="")

    def kept_figures(c: MetricComparison) -> list[tuple[str, bytes, str]]:
        drawn = plots.all_figures(c)
        result.comparisons[c.metric] = c
        result.figures.update({(c.metric, name): (fig, cap) for name, fig, cap in drawn})
        return [(name, plots.png(fig), caption) for name, fig, caption in drawn]

    def kept_forest(comparisons: list[MetricComparison]) -> tuple[Figure, str]:
        fig, caption = plots.forest(comparisons)
        result.figures["*", "forest"] = (fig, caption)
        return fig, caption

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(drawing, "PARALLEL_TASKS", 10**6)  # drawn here, where the tests see them
        patch.setattr(html, "figure_pngs", kept_figures)
        patch.setattr(html, "forest", kept_forest)
        assert main([*config, "report", "--db", str(folder / "lab.db"),
                     "--out", str(folder / "out")]) == 0  # fmt: skip
    result.page = (folder / "out" / "index.html").read_text()
    yield result


def test_histogram_bins_are_the_freedman_diaconis_rules(built: Built) -> None:
    data = samples()
    for metric in ("bandwidth", "latency"):
        fig, caption = built.figures[metric, "hist"]
        everything = np.array(data["thp", metric] + data["shp1g", metric])
        reference = np.histogram_bin_edges(everything, "fd")
        for outline in (p for p in fig.axes[0].patches if isinstance(p, Polygon)):
            assert np.unique(outline.get_xy()[:, 0]) == pytest.approx(reference)
        assert "Freedman–Diaconis" in caption
    # 0, 0, 0, 1e9: the rule would make a billion bins; equal ones over the drawn range
    fig, caption = built.figures["retransmits", "hist"]
    (outline, *_) = (p for p in fig.axes[0].patches if isinstance(p, Polygon))
    assert len(np.unique(outline.get_xy()[:, 0])) <= plots.MAX_BINS + 1
    assert "1 sample is beyond the 0.1–99.9 percentile range, not drawn." in caption


def test_means_are_bars_from_zero_or_points(built: Built) -> None:
    data, kinds = samples(), set()
    for metric in ("bandwidth", "latency", "retransmits", LONG_METRIC):
        fig, caption = built.figures[metric, "means"]
        ax = fig.axes[0]
        means = [np.mean(data[v, metric]) for v in ("thp", "shp1g")]
        bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        if bars:
            kinds.add("bars")
            rects = list(bars[0])
            assert [r.get_y() for r in rects] == [0, 0]  # every bar starts at zero
            assert [r.get_height() for r in rects] == pytest.approx(means)
            assert ax.get_ylim()[0] <= 0 <= ax.get_ylim()[1]
            assert "bars from zero" in caption
        else:
            kinds.add("points")
            dots = [line for line in ax.lines if line.get_marker() == "o"]
            assert sorted(y for d in dots for y in d.get_ydata()) == pytest.approx(sorted(means))
            assert not ax.patches and "does not start at zero" in caption
    assert kinds == {"bars", "points"}  # retransmits from 0; bandwidth's means far from it


def test_bars_from_zero_only_where_zero_is_near() -> None:
    assert plots.bars_from_zero(-0.7, 1.2) and plots.bars_from_zero(9.0, 21.0)
    assert not plots.bars_from_zero(2.5, 2.8) and not plots.bars_from_zero(-31.0, -28.0)


def test_an_interval_beyond_the_axis_is_cut_there_and_labelled_with_its_value(
    built: Built,
) -> None:
    fig, caption = built.figures["*", "forest"]
    ax = fig.axes[0]
    low, high = ax.get_xlim()
    c = built.comparisons["retransmits"]
    percent, interval = primary_change(c, c.pairs[0])
    far = max(interval)  # B − A, as each metric's difference plot reads it
    assert far > high  # the interval runs far beyond the axis ...
    labels = [t for t in ax.texts if isinstance(t, Annotation)]
    assert len(labels) == 1
    (label,) = labels
    assert label.xy[0] == pytest.approx(high, abs=0.1 * (high - low))  # ... cut at its end
    assert axes.percent_text(percent) in label.get_text()
    assert axes.percent_text(far) in label.get_text()
    arrows = [line for line in ax.lines if line.get_marker() == ">"]
    assert [tuple(line.get_xydata()[0]) for line in arrows] == [label.xy]
    # the ordinary changes keep an axis of their size, each drawn at its value
    points = sorted(x for line in ax.lines if line.get_marker() == "o"
                    for x in line.get_xdata())  # fmt: skip
    ordinary = [built.comparisons[m] for m in ("bandwidth", "latency", LONG_METRIC)]
    expected = sorted(primary_change(c, c.pairs[0])[0] for c in ordinary)
    assert points == pytest.approx(expected)
    assert high - low < 20 * max(abs(p) for p in expected)
    assert axes.percent_text(far) in caption  # and the page says so beside the figure
    assert axes.percent_text(far) in built.page


def test_change_bounds_leave_out_only_what_is_far_beyond_the_rest() -> None:
    low, high = axes.change_bounds([5.0, -3.0, 1e11], [1.0, 9.0, -6.0, 0.5, 2e5, 4e16], 1.0)
    assert low <= -6.0 and 9.0 <= high < 100  # every ordinary end drawn; 2e5 and 1e11 not
    alone = axes.change_bounds([1e11], [2e5, 4e16], 1.0)  # the only change is always drawn
    assert alone[0] <= 0 and 1e11 <= alone[1] < 4e16


def test_one_wide_interval_leaves_the_threshold_band_readable() -> None:
    """Issue 40: one interval to −1,885 % (and its change, −70 %) set the shared axis, and
    the ±1 % band and every other row shrank to nothing; it is cut at the axis's end."""
    points = [1.83, -0.53, 0.42, -70.5]
    ends = [1.03, 2.75, -1.45, 0.40, -0.25, 1.09, -99.7, -1885.0]
    low, high = axes.change_bounds(points, ends, 1.0)
    assert 2.0 / (high - low) > 0.2  # the band is a fifth of the axis or more
    assert low > -70.5 and high >= 2.75  # the far change is cut; the ordinary ends are drawn


def test_the_forest_reads_b_minus_a_with_no_legend_on_the_data_and_readable_text(
    built: Built,
) -> None:
    """As each metric's difference plot reads it (it said "right is better", turned), each
    row naming which way is better; no legend over a row; its text at least 9 px high when
    the page shows it 390 px wide (a phone: it was about 6)."""
    fig, caption = built.figures["*", "forest"]
    ax = fig.axes[0]
    assert ax.get_xlabel() == "B − A, % of A's mean" and ax.get_legend() is None
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert any("(lower is better)" in r for r in rows)
    assert any("(higher is better)" in r for r in rows)
    assert "right" not in caption and "turned" not in caption and "±1 % threshold" in caption
    texts = [ax.xaxis.label, *ax.texts, *ax.get_xticklabels(), *ax.get_yticklabels()]
    for t in texts:
        assert t.get_fontsize() / 72 * 390 / fig.get_figwidth() >= 9, t.get_text()


def test_the_run_order_legend_is_above_the_samples_and_the_caption_says_what_is_drawn(
    built: Built,
) -> None:
    """A legend at the upper right covered a sample, and the caption named a running median
    that four samples do not draw."""
    for metric in ("bandwidth", "retransmits"):
        fig, caption = built.figures[metric, "order"]
        fig.canvas.draw()
        ax = fig.axes[0]
        legend = ax.get_legend()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        assert legend.get_window_extent(renderer).y0 >= ax.get_window_extent(renderer).y1 - 1
        medians = [line for line in ax.lines if len(line.get_xdata()) > 1]
        assert bool(medians) == ("running median" in caption)
    assert "running median" not in built.figures["retransmits", "order"][1]  # 4 samples each


def test_every_axis_label_is_inside_its_figure(built: Built) -> None:
    assert {m for m, _ in built.figures} >= {LONG_METRIC, "*"}
    for (metric, name), (fig, _) in built.figures.items():
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        box = fig.bbox
        for ax in fig.axes:
            (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
            ticks = [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1]
            ticks += [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
            texts = [ax.xaxis.label, ax.yaxis.label, ax.title, *ax.texts, *ticks]
            for t in texts:
                if not t.get_text() or not t.get_visible():
                    continue
                extent = t.get_window_extent(renderer)
                inside = (extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1
                          and extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1)  # fmt: skip
                assert inside, f"{metric} {name}: {t.get_text()[:40]!r} at {extent} of {box}"


def headings(page: str) -> list[tuple[str, str]]:
    """Each h1-h3 and what follows it up to the next heading of its level or above."""
    marks = list(re.finditer(r"<h([1-3])\b[^>]*>(.*?)</h\1>", page, re.S))
    found = []
    for i, mark in enumerate(marks):
        level = int(mark.group(1))
        end = next((m.start() for m in marks[i + 1 :] if int(m.group(1)) <= level), len(page))
        found.append((mark.group(2), page[mark.end() : end]))
    return found


def test_no_heading_without_content(built: Built) -> None:
    found = headings(built.page)
    assert len(found) >= 7  # the title, summary, verdicts, four blocks, metadata, guests
    for title, content in found:
        words = re.sub(r"<[^>]+>", " ", content).split()
        assert words or "<img" in content, f"heading {title!r} has no content"
    assert "Evidence" not in [t for t, _ in found]  # an import records no environment
    assert "Guest thp (thp on local, study imported): no facts" in built.page


def test_the_page_fits_a_phone(built: Built) -> None:
    """The viewport is the phone's, wide tables scroll inside themselves, and the summary's
    rows become cards at phone width, each cell named by its column."""
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in built.page
    assert "@media (max-width: 600px)" in built.page and "overflow-x: auto" in built.page
    summary = built.page[built.page.index('<table class="summary">') :]
    summary = summary[: summary.index("</table>")]
    header = re.findall(r"<th>(.*?)</th>", summary)
    for row in re.findall(r"<tr class=\"\w+\">(.*?)</tr>", summary):
        assert re.findall(r'<td data-label="([^"]*)">', row) == header
