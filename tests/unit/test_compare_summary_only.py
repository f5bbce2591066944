"""``lab compare`` without ``--detail`` prints the summary alone and computes only what it shows:
the median bootstrap, the rank test, the effect sizes and the diagnostics wait until read."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from lab.app.analyse import AnalyseRequest, Selection, compare_samples, select_samples
from lab.cli import main
from lab.report.formats import as_json_data, print_summary, print_tables
from lab.stats.analysis import MetricComparison
from lab.stats.difference import cohens_d, rank_test
from lab.stats.stopping import StoppedInterval
from lab.store import IterationRecord, MetricInfo, Store

TIME = MetricInfo("time_s", "s", "lower")
RATE = MetricInfo("rate", "MiB/s", "higher")
LAZY = ("_median", "_ranks", "cohen_d")  # Difference's statistics computed when read


def make(path: Path, means: dict[str, float], n: int, r: float = 0.0, stop: bool = False) -> Path:
    """One workload, two metrics; AR(1) noise with lag-1 correlation r, a few outliers."""
    rng = np.random.default_rng(11)
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "k", "w", {}, "concurrent", n, [TIME, RATE])
        for variant, mean in means.items():
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            noise = rng.normal(0, 0.1, n)
            for i in range(1, n):
                noise[i] += r * noise[i - 1]
            values = mean + noise
            values[rng.integers(0, n, 3)] += 1.5
            store.record(run, guest, [
                IterationRecord(i + 1, 1, True, started=float(i), ended=i + 0.5,
                                metrics={"time_s": float(v), "rate": 100.0 / float(v)})
                for i, v in enumerate(values)
            ])  # fmt: skip
        if stop:
            found = StoppedInterval("time_s", "Lai's t confidence sequence at 99.99 %",
                                    "30 pairs", 0.9999, True, -2.0, (-4.0, 0.5), -20.0,
                                    (-40.0, 5.0), "after 30 pairs: …")  # fmt: skip
            store.record_stop(store.runs()[0].id, found.reason, found.to_json())
    return path


STORES = {
    "autocorrelated": lambda p: make(p, {"thp": 10.0, "shp1g": 9.97}, 1500, r=0.7),
    "three arms": lambda p: make(p, {"thp": 10.0, "shp1g": 9.9, "shp2m": 10.0}, 400),
    "stopped": lambda p: make(p, {"thp": 10.0, "shp1g": 8.0}, 30, stop=True),
}


pytestmark = pytest.mark.usefixtures("no_config")


def comparisons(db: Path) -> list[MetricComparison]:
    with Store.open(db, create=False) as store:
        samples = select_samples(store, Selection(db=str(db)))
    return compare_samples(samples, AnalyseRequest(Selection(db=str(db)), trim=True))


def summary(found: list[MetricComparison]) -> str:
    console = Console(file=io.StringIO(), width=160)
    print_summary(console, found)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


@pytest.mark.parametrize("kind", sorted(STORES))
def test_the_summary_alone_is_the_summary_of_the_full_output(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = STORES[kind](tmp_path / "lab.db")
    assert main(["compare", "--db", str(db)]) == 0
    alone, err = capsys.readouterr()
    assert main(["compare", "--db", str(db), "--detail"]) == 0
    full, _ = capsys.readouterr()
    assert "Summary" in alone and "--detail" in err
    assert "Margin of error" in full and full.startswith(alone)


@pytest.mark.parametrize("kind", sorted(STORES))
def test_the_summary_computes_no_statistic_it_does_not_show(kind: str, tmp_path: Path) -> None:
    found = comparisons(STORES[kind](tmp_path / "lab.db"))
    before = summary(found)
    arms = [a for c in found for a in c.arms]
    differences = [p.difference for c in found for p in c.pairs]
    assert not any("diagnostics" in vars(a) for a in arms)
    assert not any(name in vars(d) for d in differences for name in LAZY)
    if kind == "autocorrelated":  # the summary's intervals come from batch means
        assert any(d.method != "Welch" for d in differences)
    # read everything, as --detail and --format json do: the summary does not change
    print_tables(Console(file=io.StringIO()), found)
    as_json_data(found)
    assert all("diagnostics" in vars(a) for a in arms)
    assert summary(found) == before


def test_statistics_computed_when_read_are_those_of_the_samples(tmp_path: Path) -> None:
    [c, *_] = comparisons(STORES["three arms"](tmp_path / "lab.db"))
    arms = {a.label: a for a in c.arms}
    for pair in c.pairs:
        a, b = arms[pair.a].values, arms[pair.b].values
        d = pair.difference
        ranks = rank_test(a, b)
        assert (d.brunner_munzel_p, d.cliff_delta) == (ranks.brunner_munzel_p, ranks.cliff_delta)
        assert d.cohen_d == cohens_d(a, b)
        assert d.median_diff == float(np.median(b) - np.median(a))
        assert d.median_diff_ci[0] < d.median_diff < d.median_diff_ci[1]
        assert pair.p_adjusted is not None and pair.p_adjusted >= d.brunner_munzel_p
