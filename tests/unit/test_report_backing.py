"""``lab report`` draws what backed each twin's memory over a run's iterations: the
``backing.*`` sizes (KiB) the store holds per iteration, one figure per run that has them,
inside the Evidence section; a run without them gets none."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from matplotlib.axes import Axes

from lab.cli import main
from lab.report.backingplot import backing_plot
from lab.store import IterationRecord, MetricInfo, Store

PNG = b"\x89PNG\r\n\x1a\n"
RAM_KIB = 1_048_576  # both twins' RAM: 1 GiB
ITERATIONS = (1, 2, 3, 5, 6, 7, 8, 9)  # iteration 4 has no successful attempt: a gap
SIZES = (
    MetricInfo("backing.qemu_rss_kib", "KiB", None),
    MetricInfo("backing.qemu_anon_huge_kib", "KiB", None),
    MetricInfo("backing.qemu_hugetlb_kib", "KiB", None),
    MetricInfo("backing.guest_anon_huge_kib", "KiB", None),
)
COUNTER = MetricInfo("backing.guest_thp_fault_alloc", "count", None)


pytestmark = pytest.mark.usefixtures("no_config")


def backing(variant: str, i: int) -> dict[str, float]:
    """What backed a twin's memory after iteration ``i``: shp1g's 1 GiB of hugetlb pages
    throughout; thp's transparent huge pages growing by 128 MiB an iteration."""
    if variant == "shp1g":
        return {"backing.qemu_rss_kib": 40_000.0, "backing.qemu_anon_huge_kib": 0.0,
                "backing.qemu_hugetlb_kib": float(RAM_KIB),
                "backing.guest_anon_huge_kib": 2048.0 * i}  # fmt: skip
    return {"backing.qemu_rss_kib": 300_000.0 + 131_072 * i,
            "backing.qemu_anon_huge_kib": 131_072.0 * i, "backing.qemu_hugetlb_kib": 0.0,
            "backing.guest_anon_huge_kib": 120_000.0 * i}  # fmt: skip


def backing_store(path: Path, memory: bool = True) -> Path:
    """Run hp/stream recorded what backed both twins after each iteration (stored out of
    order); run hp/iperf3 recorded nothing of it. ``memory``: their RAM is in the facts."""
    with Store.open(path) as store:
        study = store.ensure_study("hugepages")
        stream = store.ensure_run(
            study,
            "hp/stream",
            "stream",
            {},
            "sync",
            len(ITERATIONS),
            [MetricInfo("triad_mb_s", "MB/s", "higher"), *SIZES, COUNTER],
        )
        iperf = store.ensure_run(study, "hp/iperf3", "iperf3", {}, "sync", len(ITERATIONS),
                                 [MetricInfo("sender_gbit_s", "Gbit/s", "higher")])  # fmt: skip
        for k, variant in enumerate(("thp", "shp1g")):
            name = f"lab-{variant}"
            guest = store.ensure_guest(study, name, variant)
            noise = np.random.default_rng(k).normal(0, 1, len(ITERATIONS))
            store.record(stream, guest, [
                IterationRecord(i, 1, True, metrics={
                    "triad_mb_s": 20_000 + 100 * k + float(z), **backing(variant, i),
                    "backing.guest_thp_fault_alloc": 500.0})
                for i, z in sorted(zip(ITERATIONS, noise, strict=True), reverse=True)
            ])  # fmt: skip
            store.record(iperf, guest, [
                IterationRecord(i, 1, True, metrics={"sender_gbit_s": 30 + k + float(z)})
                for i, z in zip(ITERATIONS, noise, strict=True)
            ])  # fmt: skip
            if memory:
                store.record_environment(stream, "guest", name, {"memory_kib": str(RAM_KIB)})
    return path


def test_the_store_reads_each_twin_s_sizes_in_iteration_order(tmp_path: Path) -> None:
    with Store.open(backing_store(tmp_path / "lab.db")) as store:
        stream, iperf = (next(r.id for r in store.runs() if r.key == k)
                         for k in ("hp/stream", "hp/iperf3"))  # fmt: skip
        found = store.evidence_series(stream)
        assert list(found) == ["lab-thp", "lab-shp1g"]  # stored order: A first
        for variant, metrics in (("thp", found["lab-thp"]), ("shp1g", found["lab-shp1g"])):
            assert set(metrics) == {m.name for m in SIZES}  # the counter is no size
            for name, (x, y) in metrics.items():
                assert x.tolist() == list(ITERATIONS)
                assert y.tolist() == [backing(variant, i)[name] for i in ITERATIONS]
        assert store.evidence_series(iperf) == {}


def _lines(ax: Axes) -> dict[str, tuple[list[float], list[float], str]]:
    """Legend label -> (x, y, line style) of every line the plot drew."""
    return {
        line.get_label(): (
            np.asarray(line.get_xdata(), dtype=float).tolist(),
            np.asarray(line.get_ydata(), dtype=float).tolist(),
            line.get_linestyle(),
        )
        for line in ax.get_lines()
    }


def test_the_plot_draws_the_stored_series_as_shares_of_each_twin_s_ram(tmp_path: Path) -> None:
    with Store.open(backing_store(tmp_path / "lab.db")) as store:
        run = next(r.id for r in store.runs() if r.key == "hp/stream")
        series = store.evidence_series(run)
    fig, caption = backing_plot("hp/stream", series, {"lab-thp": RAM_KIB, "lab-shp1g": RAM_KIB})
    (ax,) = fig.axes
    lines = _lines(ax)
    assert len(lines) == 8  # four kinds for each of two twins
    x = [float(i) for i in ITERATIONS]
    assert lines["lab-shp1g: QEMU hugetlb pages"] == (x, [100.0] * 8, "-")
    assert lines["lab-thp: QEMU hugetlb pages"] == (x, [0.0] * 8, "-")
    assert lines["lab-thp: QEMU transparent huge pages"] == (x, [12.5 * i for i in x], "--")
    assert lines["lab-thp: QEMU resident memory (RSS)"][2] == ":"
    assert lines["lab-shp1g: guest AnonHugePages"][2] == "-."
    assert {label.split(":")[0] for label in lines} == {"lab-thp", "lab-shp1g"}
    colours = {str(line.get_label()).split(":")[0]: line.get_color() for line in ax.get_lines()}
    assert colours["lab-thp"] != colours["lab-shp1g"]
    assert ax.get_ylabel() == "% of the guest's RAM" and ax.get_xlabel() == "iteration"
    assert "8 iterations" in caption and "lab-thp, lab-shp1g" in caption


def test_without_each_twin_s_ram_the_plot_is_in_mib(tmp_path: Path) -> None:
    with Store.open(backing_store(tmp_path / "lab.db", memory=False)) as store:
        run = next(r.id for r in store.runs() if r.key == "hp/stream")
        series = store.evidence_series(run)
    fig, caption = backing_plot("hp/stream", series, {"lab-thp": RAM_KIB})  # shp1g's unknown
    (ax,) = fig.axes
    lines = _lines(ax)
    assert lines["lab-shp1g: QEMU hugetlb pages"][1] == [1024.0] * 8  # 1 GiB in MiB
    assert lines["lab-thp: QEMU transparent huge pages"][1] == [128.0 * i for i in ITERATIONS]
    assert ax.get_ylabel() == "MiB" and "in MiB" in caption


def evidence(page: str) -> str:
    return page[page.index('<h2 id="evidence">') : page.index("<h2>Verdicts</h2>")]


def test_the_report_has_one_backing_figure_for_the_run_that_recorded_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = backing_store(tmp_path / "lab.db")
    code = main(["report", "--db", str(db), "--out", str(tmp_path / "out"), "--no-embed"])
    assert code == 0, capsys.readouterr().err
    page = (tmp_path / "out" / "index.html").read_text()
    section = evidence(page)
    (src,) = re.findall(r'<img src="(figures/backing-[^"]+)"', page)
    assert src == "figures/backing-hp-stream.png" and src in section  # hp/iperf3: none
    assert (tmp_path / "out" / src).read_bytes()[:8] == PNG
    caption = section[section.index(src) :]
    caption = caption[caption.index("<figcaption>") : caption.index("</figcaption>")]
    assert "run hp/stream&#x27;s 8 iterations, in % of each guest&#x27;s RAM" in caption
    assert "solid: QEMU hugetlb pages" in caption and "dash-dot: guest AnonHugePages" in caption
    assert "read on the host" in caption and "after each iteration" in caption
    assert not list((tmp_path / "out" / "figures").glob("backing-hp-iperf3*"))


def test_embedded_the_backing_figure_is_inside_the_page(tmp_path: Path) -> None:
    db = backing_store(tmp_path / "lab.db")
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r"), "--embed"]) == 0
    section = evidence((tmp_path / "r" / "index.html").read_text())
    assert section.count('<img src="data:image/png;base64,') == 1
    assert not (tmp_path / "r" / "figures").exists()


def test_a_store_without_backing_metrics_has_no_backing_figure(tmp_path: Path) -> None:
    from tests.unit.test_compare import study_store

    db = study_store(tmp_path / "lab.db", n=30)
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "out"), "--no-embed"]) == 0
    assert "backing-" not in (tmp_path / "out" / "index.html").read_text()
    assert not list((tmp_path / "out" / "figures").glob("backing-*"))
