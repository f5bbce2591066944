"""What backed each twin's memory over a run: the ``backing.*`` evidence metrics, drawn."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from lab.core import text
from lab.report.plots import COLORS, new_figure

# What backed a twin's memory, by evidence metric (``backing.*`` in KiB): line style, what
# the line is, and where it was read. Host side: the QEMU process's smaps, less TCG's code.
BACKING_LINES = {
    "backing.qemu_hugetlb_kib": ("-", "QEMU hugetlb pages", "host"),
    "backing.qemu_anon_huge_kib": ("--", "QEMU transparent huge pages", "host"),
    "backing.qemu_rss_kib": (":", "QEMU resident memory (RSS)", "host"),
    "backing.guest_anon_huge_kib": ("-.", "guest AnonHugePages", "guest"),
}
OTHER_LINE = (0, (1, 4))  # an evidence metric in KiB the report does not know yet
STYLE_WORDS = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dash-dot"}


def backing_plot(
    run: str,
    series: Mapping[str, Mapping[str, tuple[np.ndarray, np.ndarray]]],
    memory_kib: Mapping[str, int],
) -> tuple[Figure, str]:
    """What backed each twin's memory over run ``run``'s iterations, read after each one:
    a colour per guest, a line style per kind (hugetlb, THP, RSS, the guest's own
    AnonHugePages), so that a variant that lost its huge pages midway shows where.

    ``series``: guest -> ``backing.*`` metric in KiB -> (iterations, values), as
    ``Store.evidence_series`` reads them; ``memory_kib``: guest -> its RAM where recorded.
    In % of each guest's RAM when every guest's is known (twins of different sizes compare
    as shares), in MiB otherwise.
    """
    fig, ax = new_figure(9.5, 4.2)
    share = all(memory_kib.get(guest, 0) > 0 for guest in series)
    iterations: set[int] = set()
    for i, (guest, metrics) in enumerate(series.items()):
        scale = 100.0 / memory_kib[guest] if share else 1.0 / 1024
        for metric, (x, y) in sorted(metrics.items(), key=lambda kv: _kind_order(kv[0])):
            style, what, _ = BACKING_LINES.get(metric, (OTHER_LINE, _metric_words(metric), ""))
            ax.plot(x, y * scale, color=COLORS[i % len(COLORS)], linestyle=style,
                    marker="." if x.size < 30 else None,
                    label=text.shown(f"{guest}: {what}"))  # fmt: skip
            iterations.update(x.tolist())
    ax.set_xlabel("iteration")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # no iteration 2.5
    ax.set_ylabel("% of the guest's RAM" if share else "MiB")
    ax.set_ylim(bottom=0)
    ax.set_title(text.shown(f"run {run}: what backed each twin's memory"), fontsize="medium")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside: 8 lines
    return fig, _backing_caption(run, series, share, len(iterations))


def _kind_order(metric: str) -> tuple[int, str]:
    """Known kinds in the order of ``BACKING_LINES`` (hugetlb first), then the others."""
    kinds = list(BACKING_LINES)
    return (kinds.index(metric) if metric in BACKING_LINES else len(kinds), metric)


def _metric_words(metric: str) -> str:
    return metric.removeprefix("backing.").removesuffix("_kib")


def _backing_caption(
    run: str, series: Mapping[str, Mapping[str, object]], share: bool, iterations: int
) -> str:
    """Says what each line of :func:`backing_plot` is and when it was read."""
    present = {metric for metrics in series.values() for metric in metrics}
    lines = [f"{STYLE_WORDS[style]}: {what}" for metric, (style, what, _) in BACKING_LINES.items()
             if metric in present]  # fmt: skip
    others = sorted(_metric_words(m) for m in present - BACKING_LINES.keys())
    lines += [f"loosely dotted: {', '.join(others)}"] if others else []
    sides = {BACKING_LINES[m][2] for m in present if m in BACKING_LINES}
    read = []
    if "host" in sides:
        read.append("QEMU's lines are read on the host (its process's smaps, less TCG's"
                    " translation buffer) after each iteration")  # fmt: skip
    if "guest" in sides:
        read.append("the guest's AnonHugePages by the guest itself (its kernel's count of"
                    " anonymous huge pages, in /proc/vmstat) after each iteration")  # fmt: skip
    unit = "in % of each guest's RAM" if share else "in MiB (a guest's RAM was not recorded)"
    return (
        f"What backed each twin's memory over run {run}'s {iterations:,} iterations, {unit}:"
        f" one colour per guest ({', '.join(series)}); {'; '.join(lines)}. "
        + ("; ".join(read) + ". " if read else "")
        + "Evidence, not a verdict."
    )
