"""The thp twin's huge-page coverage against the host's age (issue 42): as a host's free
memory fragments, fewer 2 MiB blocks are left for transparent huge pages.

Each point is one iteration of a THP-backed twin at which the run read both its host's
order-9 unusable free space index (``backing.host_thp_unusable_index``: 0 when every free
page lies in a 2 MiB block or larger, 1 when none does) and its QEMU's transparent huge
pages (``backing.qemu_anon_huge_kib``, on the host, less TCG's translation buffer): the
coverage is that share of the guest's RAM. The runs read both together, after an iteration
(``lab.run.evidence``), so the pairs are the iterations that have both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from matplotlib.figure import Figure

from lab.core import text
from lab.report.plots import COLORS, new_figure

UNUSABLE = "backing.host_thp_unusable_index"
ANON_HUGE = "backing.qemu_anon_huge_kib"
AGE_METRICS = (UNUSABLE, ANON_HUGE)
MARKERS = ("o", "s", "^", "D", "v", "P")


@dataclass(frozen=True)
class CoverageGuest:
    """One THP-backed twin of one run: its variant, its RAM and its evidence series."""

    run: str
    variant: str
    memory_kib: int
    series: Mapping[str, tuple[np.ndarray, np.ndarray]]  # metric -> (iterations, values)


@dataclass(frozen=True)
class Coverage:
    """Per variant, every paired iteration: the host's unusable index (x) and the share of
    the guest's RAM in transparent huge pages, in % (y); and the runs they come from."""

    points: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    runs: tuple[str, ...] = ()


def coverage_points(guests: Iterable[CoverageGuest]) -> Coverage:
    """The pairs of :class:`Coverage`, in the order the guests come, a guest's by iteration;
    a guest without both metrics, or without its RAM, gives none."""
    xs: dict[str, list[np.ndarray]] = {}
    ys: dict[str, list[np.ndarray]] = {}
    runs: list[str] = []
    for g in guests:
        if g.memory_kib <= 0 or UNUSABLE not in g.series or ANON_HUGE not in g.series:
            continue
        (ix, index), (ax, anon) = g.series[UNUSABLE], g.series[ANON_HUGE]
        both, at_index, at_anon = np.intersect1d(ix, ax, assume_unique=True,
                                                 return_indices=True)  # fmt: skip
        if not both.size:
            continue
        xs.setdefault(g.variant, []).append(index[at_index])
        ys.setdefault(g.variant, []).append(anon[at_anon] * 100.0 / g.memory_kib)
        if g.run not in runs:
            runs.append(g.run)
    points = {v: (np.concatenate(xs[v]), np.concatenate(ys[v])) for v in xs}
    return Coverage(points, tuple(runs))


def age_plot(coverage: Coverage) -> tuple[Figure, str]:
    """A scatter of :func:`coverage_points`: a colour and marker per variant."""
    fig, ax = new_figure(7.0, 4.2)
    for i, (variant, (x, y)) in enumerate(coverage.points.items()):
        ax.scatter(x, y, s=14, alpha=0.6, color=COLORS[i % len(COLORS)],
                   marker=MARKERS[i % len(MARKERS)],
                   label=text.shown(f"{variant} ({x.size:,} iterations)"))  # fmt: skip
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("host's unusable free space index for 2 MiB blocks (0 = young, 1 = aged)")
    ax.set_ylabel("% of the guest's RAM in THP")
    ax.set_title("huge-page coverage against the host's age", fontsize="medium")
    ax.legend(fontsize="small", loc="best")
    return fig, _caption(coverage)


def _caption(coverage: Coverage) -> str:
    total = sum(x.size for x, _ in coverage.points.values())
    runs = len(coverage.runs)
    return (
        f"Each THP-backed twin's huge-page coverage against its host's age, at {total:,}"
        f" iterations of {runs:,} run{'s' if runs != 1 else ''}, one colour per variant"
        f" ({', '.join(coverage.points)}): across, the host's order-9 unusable free space"
        " index read after the iteration (the share of free memory no 2 MiB block can come"
        " from: low on a young host, near 1 on an aged one); up, the share of the guest's RAM"
        " its QEMU held in transparent huge pages then (AnonHugePages in its smaps, read on"
        " the host). Coverage that falls as the index rises is THP decaying as the host ages."
        " Evidence, not a verdict."
    )
