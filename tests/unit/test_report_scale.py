"""``lab report`` at scale (issue 31 §2): each block's tables and figures are drawn by worker
processes, the page and its files written here; the violins' densities are binned kernel
densities, as close to matplotlib's exact ones as a bin's width allows."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from matplotlib import mlab

import lab.report.html as html
from lab.cli import main
from lab.report import plots
from lab.report.plots import violin_stats
from tests.unit.test_compare import study_store

pytestmark = pytest.mark.usefixtures("no_config")


@pytest.mark.parametrize(
    "values",
    [
        np.random.default_rng(1).normal(147.0, 14.5, 24_000),
        np.r_[
            np.random.default_rng(2).normal(10, 1, 5_000),
            np.random.default_rng(3).normal(30, 2, 300),
        ],
        np.array([5.0, 5.5, 4.0, 7.25, 6.0, 5.0, 4.5]),
    ],
    ids=["normal", "two-peaked", "seven"],
)
def test_a_violins_density_is_matplotlibs_kernel_density(values: np.ndarray) -> None:
    found = violin_stats(values)
    exact = mlab.GaussianKDE(values, "scott").evaluate(found["coords"])
    assert found["coords"][0] == values.min() and found["coords"][-1] == values.max()
    assert np.max(np.abs(found["vals"] - exact)) < 1e-3 * exact.max()
    assert found["median"] == np.median(values) and found["mean"] == pytest.approx(values.mean())


def test_a_violin_of_equal_values_is_a_point() -> None:
    found = violin_stats(np.full(50, 3.0))
    assert found["min"] == found["max"] == 3.0 and found["vals"].max() == 1.0


def test_each_blocks_figures_are_drawn_by_a_worker_and_written_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the report draws everything in its own process")
    drawn = html.figure_pngs

    def marked(c: object) -> list[tuple[str, bytes, str]]:  # runs in the forked worker
        return [(name, data, f"{caption} [drawn by {os.getpid()}]")
                for name, data, caption in drawn(c)]  # fmt: skip

    monkeypatch.setattr(html, "figure_pngs", marked)
    db = study_store(tmp_path / "lab.db", n=60)
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "out"), "--no-embed"]) == 0
    page = (tmp_path / "out" / "index.html").read_text()
    workers = set(re.findall(r"\[drawn by (\d+)\]", page))
    assert workers and str(os.getpid()) not in workers
    sources = re.findall(r'<img src="(figures/\d\d-[^"]+)"', page)
    assert len(sources) == 2 * 6  # two blocks of six figures, each a file of its own
    for src in sources:
        assert (tmp_path / "out" / src).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_with_one_block_nothing_is_forked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pool for one block")

    monkeypatch.setattr(html, "ProcessPoolExecutor", refuse)
    db = study_store(tmp_path / "lab.db", n=60)
    argv = [
        "report",
        "--db",
        str(db),
        "--out",
        str(tmp_path / "out"),
        "--metric",
        "total_time_s",
        "--no-embed",
    ]
    assert main(argv) == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert len(re.findall(r'<img src="figures/\d\d-', page)) == 6


def test_a_histogram_is_one_outline_per_arm(tmp_path: Path) -> None:
    from lab.app.analyse import AnalyseRequest, Selection, compare_samples, select_samples
    from lab.store import Store

    db = study_store(tmp_path / "lab.db", n=60)
    with Store.open(db, create=False) as store:
        samples = select_samples(store, Selection(db=str(db)))
    c = compare_samples(samples, AnalyseRequest(Selection(db=str(db))))[0]
    fig, _ = plots.histogram(c)
    (ax,) = fig.axes
    assert len(ax.patches) == len(c.arms)
