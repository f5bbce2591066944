"""``lab report`` plots the thp twin's huge-page coverage against the host's age (issue 42):
per iteration, the host's order-9 unusable index across and the share of a THP-backed twin's
RAM in its QEMU's transparent huge pages up, one series per variant; absent from a store
that holds neither."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lab.app.thpcoverage import thp_backed, thp_coverage
from lab.cli import main
from lab.report.ageplot import age_plot
from lab.run.backing import DEFAULT_DECLARED, HUGETLB_DECLARED
from lab.run.environment import latest
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")

RAM_KIB = 1_048_576
INDEX = "backing.host_thp_unusable_index"
ANON = "backing.qemu_anon_huge_kib"
HUGETLB = "backing.qemu_hugetlb_kib"
METRICS = [MetricInfo("wall_s", "s", "lower"), MetricInfo(INDEX, "ratio", None),
           MetricInfo(ANON, "KiB", None), MetricInfo(HUGETLB, "KiB", None)]  # fmt: skip
# Two runs on one host: young (index 0.10 + 0.01·i), then aged (0.80 + 0.01·i); the thp
# twin's coverage 0.9 − 0.8·index of its RAM, the hugetlb twin's QEMU holds no THP.
# Iteration 3's QEMU could not be read (the index was): it pairs with nothing.
RUNS = {"young": 0.10, "aged": 0.80}


def index_at(start: float, i: int) -> float:
    return start + 0.01 * i


def coverage_at(index: float) -> float:
    """The thp twin's share of RAM in THP, in % (a line, so the test knows each point)."""
    return 100.0 * (0.9 - 0.8 * index)


def age_store(path: Path, *, evidence: bool = True, declared: bool = True) -> Path:
    with Store.open(path) as store:
        study = store.ensure_study("age")
        guests = {v: store.ensure_guest(study, f"lab-{v}", v) for v in ("thp", "shp1g")}
        for key, start in RUNS.items():
            metrics = METRICS if evidence else METRICS[:1]
            run = store.ensure_run(study, key, "null", {"k": key}, "sync", 5, metrics)
            for variant, guest in guests.items():
                records = []
                for i in range(1, 6):
                    values = {"wall_s": 1.0 + 0.01 * i}
                    if evidence:
                        values[INDEX] = index_at(start, i)
                        if i != 3:
                            thp = variant == "thp"
                            values[ANON] = (
                                coverage_at(index_at(start, i)) / 100 * RAM_KIB if thp else 0.0
                            )
                            values[HUGETLB] = 0.0 if thp else float(RAM_KIB)
                    records.append(IterationRecord(i, 1, True, metrics=values))
                store.record(run, guest, records)
                facts = {"memory_kib": str(RAM_KIB), "variant": variant}
                if declared:
                    facts["memory_backing_declared"] = (
                        DEFAULT_DECLARED if variant == "thp" else HUGETLB_DECLARED
                    )
                store.record_environment(run, "guest", f"lab-{variant}", facts)
    return path


def coverage_of(path: Path) -> object:
    with Store.open(path) as store:
        runs = store.runs()
        now = {r.key: latest(store.environment(r.id)) for r in runs}
        return thp_coverage(store, runs, now)


@pytest.mark.parametrize("declared", [True, False])
def test_each_thp_twin_iteration_is_one_point_of_index_and_coverage(
    tmp_path: Path, declared: bool
) -> None:
    found = coverage_of(age_store(tmp_path / "lab.db", declared=declared))
    assert list(found.points) == ["thp"]  # the hugetlb twin is no THP-backed one
    x, y = found.points["thp"]
    expected_x = [index_at(start, i) for start in RUNS.values() for i in (1, 2, 4, 5)]
    assert x.tolist() == pytest.approx(expected_x)
    assert y.tolist() == pytest.approx([coverage_at(v) for v in expected_x])
    assert found.runs == ("young", "aged")


def test_the_plot_draws_those_points_and_says_what_they_are(tmp_path: Path) -> None:
    found = coverage_of(age_store(tmp_path / "lab.db"))
    fig, caption = age_plot(found)
    (ax,) = fig.axes
    (scatter,) = ax.collections
    drawn = np.asarray(scatter.get_offsets())
    x, y = found.points["thp"]
    assert drawn[:, 0].tolist() == x.tolist() and drawn[:, 1].tolist() == y.tolist()
    assert "8 iterations of 2 runs" in caption and "(thp)" in caption
    assert "unusable free space index" in caption and "transparent huge pages" in caption


def test_a_twin_is_thp_backed_by_its_declaration_or_else_by_holding_no_hugetlb() -> None:
    none, some = (np.array([1, 2]), np.array([0.0, 0.0])), (np.array([1]), np.array([2048.0]))
    assert thp_backed({"memory_backing_declared": DEFAULT_DECLARED}, some)
    assert not thp_backed({"memory_backing_declared": HUGETLB_DECLARED}, none)
    assert thp_backed({"memory_backing_declared": "not available"}, none)
    assert not thp_backed({}, some)
    assert thp_backed({}, None)


def test_the_report_has_the_figure_only_when_the_store_holds_the_metrics(tmp_path: Path) -> None:
    with_them = age_store(tmp_path / "with.db")
    assert main(["report", "--db", str(with_them), "--out", str(tmp_path / "a"),
                 "--run", "young", "--no-embed"]) == 0  # fmt: skip
    page = (tmp_path / "a" / "index.html").read_text()
    assert 'id="thp-age"' in page and "figures/thp-coverage-age.png" in page
    assert "8 iterations of 2 runs" in page  # the host's age spans the study's runs
    assert (tmp_path / "a" / "figures" / "thp-coverage-age.png").read_bytes()[:4] == b"\x89PNG"
    without = age_store(tmp_path / "without.db", evidence=False)
    assert main(["report", "--db", str(without), "--out", str(tmp_path / "b"),
                 "--run", "young", "--no-embed"]) == 0  # fmt: skip
    page = (tmp_path / "b" / "index.html").read_text()
    assert "thp-age" not in page and "coverage" not in page.lower()
    assert not (tmp_path / "b" / "figures" / "thp-coverage-age.png").exists()
