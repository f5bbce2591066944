"""``lab compare`` on a sweep, end to end on a store: a row per value, the corrected verdicts,
the crossing, every format; a sweep is never refused as "several runs", other runs beside it
are."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from lab.store import IterationRecord, MetricInfo, Store
from tests.unit.test_compare import run as lab

TIME = MetricInfo("total_time_s", "s", "lower")
SIZES = ("4M", "16M", "64M", "256M")
SHIFT = {"4M": 0.0, "16M": 0.0, "64M": -4.0, "256M": -6.0}  # shp1g's change in %, by size
SWEEP = "sysbench-memory-sweep-0123456789ab"


def constructed(n: int, mean: float, sd: float, seed: int) -> np.ndarray:
    """n samples with exactly this mean and sd (one sample: the mean)."""
    z = np.random.default_rng(seed).standard_normal(n)
    return mean + sd * (z - z.mean()) / z.std(ddof=1) if n > 1 else np.full(n, mean)


def sweep_store(path: Path, n: int = 30, other_run: bool = False) -> Path:
    """A sweep of total_size, as `lab run --sweep total_size=4M,16M,64M,256M` stores it."""
    with Store.open(path) as store:
        study = store.ensure_study("default")
        thp = store.ensure_guest(study, "lab-thp", "thp")
        shp = store.ensure_guest(study, "lab-shp1g", "shp1g")
        sweep = store.ensure_sweep(study, SWEEP, "sysbench-memory", [("total_size", SIZES)],
                                   "interleaved")  # fmt: skip
        for position, size in enumerate(SIZES):
            key = f"sysbench-memory-run{position}"
            run = store.ensure_run(study, key, "sysbench-memory", {"total_size": size},
                                   "concurrent", n, [TIME])  # fmt: skip
            store.add_sweep_run(sweep, run, position, {"total_size": size})
            for seed, (guest, shift) in enumerate(((thp, 0.0), (shp, SHIFT[size]))):
                values = constructed(n, 10.0 * (1 + shift / 100), 0.05, 10 * position + seed)
                store.record(run, guest, [IterationRecord(i + 1, 1, True, started=float(i),
                                                          metrics={"total_time_s": float(v)})
                                          for i, v in enumerate(values)])  # fmt: skip
        if other_run:  # the same workload from another command
            run = store.ensure_run(study, "sysbench-memory-alone", "sysbench-memory",
                                   {"total_size": "1G"}, "concurrent", n, [TIME])  # fmt: skip
            for guest in (thp, shp):
                store.record(run, guest, [IterationRecord(i + 1, 1, True,
                                                          metrics={"total_time_s": 10.0 + i})
                                          for i in range(3)])  # fmt: skip
    return path


pytestmark = pytest.mark.usefixtures("no_config")


def test_a_sweep_is_compared_value_by_value_with_its_crossing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(sweep_store(tmp_path / "lab.db"))
    code, out, err = lab(capsys, "compare", "--db", db, "--confidence", "99")
    assert code == 0, err
    table = " ".join(out.split())
    title = "sweep of sysbench-memory · total_time_s (s), lower is better: shp1g vs thp"
    assert f"{title} (sweep {SWEEP})" in table
    rows = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert rows == list(SIZES)  # a row per value, in the sweep's order
    assert table.count("B better") == 2 and table.count("equivalent") == 2
    assert ("crossing: total_size=64M, the smallest value where B is better beyond ±1 %, and at"
            " every larger value") in table  # fmt: skip
    assert "4 verdicts, corrected together with Holm" in table
    assert "several runs" not in err and "never pooled" not in err


def test_json_csv_and_markdown_carry_the_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(sweep_store(tmp_path / "lab.db"))
    _, out, _ = lab(capsys, "compare", "--db", db, "--format", "json", "--confidence", "99")
    (sweep,) = json.loads(out)  # no other run: the sweep's object alone
    assert (sweep["sweep"], sweep["axis"], sweep["correction"]) == (SWEEP, "total_size", "holm")
    values = sweep["values"]
    assert [v["point"] for v in values] == [{"total_size": s} for s in SIZES]
    assert [v["verdict"]["outcome"] for v in values] == ["equivalent", "equivalent", "faster",
                                                        "faster"]  # fmt: skip
    assert all(v["p"] <= v["p_adjusted"] <= 1 for v in values)
    assert values[2]["percent"] == pytest.approx(-4.0, abs=0.2)
    assert sweep["crossings"] == [{"rest": {}, "value": "64M", "not_above": []}]
    _, out, _ = lab(capsys, "compare", "--db", db, "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    verdicts = {r[7]: r[9] for r in rows if r[6] == "sweep" and r[8] == "verdict"}
    assert verdicts["total_size=64M"] == "faster" and verdicts["total_size=4M"] == "equivalent"
    assert [rows[-1][6], *rows[-1][7:]] == ["crossing", "total_size", "value", "64M"]
    _, out, _ = lab(capsys, "compare", "--db", db, "--format", "markdown")
    assert "| total_size | A | B | change (B vs A) | p | adjusted p | verdict |" in out
    assert "- crossing: total_size=64M" in out


def test_detail_shows_each_value_s_tables_and_bh_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(sweep_store(tmp_path / "lab.db"))
    code, out, _ = lab(capsys, "compare", "--db", db, "--detail", "--correction", "bh")
    assert code == 0
    flat = " ".join(out.split())
    assert "sysbench-memory (total_size=64M) · total_time_s" in flat
    assert "corrected together with Benjamini–Hochberg" in flat
    assert "Benjamini–Hochberg over the 4 values of the sweep" in flat  # in each verdict's text


def test_other_runs_beside_a_sweep_are_refused_and_each_can_be_picked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(sweep_store(tmp_path / "lab.db", other_run=True))
    code, _, err = lab(capsys, "compare", "--db", db)
    assert code == 2
    flat = " ".join(err.split())
    assert "holds 2 runs of sysbench-memory that differ" in flat
    assert f"sweep {SWEEP} (total_size = 4M, 16M, 64M, 256M: 4 runs)" in flat
    assert "sysbench-memory-alone (total_size=1G)" in flat and "--sweep KEY" in flat
    code, out, _ = lab(capsys, "compare", "--db", db, "--sweep", SWEEP[:30], "--format", "json")
    assert code == 0 and [s["sweep"] for s in json.loads(out)] == [SWEEP]
    code, out, _ = lab(capsys, "compare", "--db", db, "--run", "sysbench-memory-alone",
                       "--format", "json")  # fmt: skip
    (alone,) = json.loads(out)
    assert "sweep" not in alone and alone["arms"][0]["summary"]["n"] == 3
    code, out, _ = lab(capsys, "compare", "--db", db, "--run", "sysbench-memory-run2",
                       "--format", "json")  # one value of the sweep, as one run  # fmt: skip
    (value,) = json.loads(out)
    assert value["pairs"][0]["verdict"]["outcome"] == "faster"
    code, _, err = lab(capsys, "compare", "--db", db, "--sweep", "nope")
    assert code == 2 and "no sweep 'nope'" in err


def test_a_sweep_without_two_samples_anywhere_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(sweep_store(tmp_path / "lab.db", n=1))
    code, _, err = lab(capsys, "compare", "--db", db)
    assert code == 2
    assert f"no value of sweep {SWEEP} has 2 samples per variant yet" in " ".join(err.split())


def test_fail_on_worse_reads_a_sweep_s_corrected_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(sweep_store(tmp_path / "lab.db"))
    assert lab(capsys, "compare", "--db", db, "--fail-on", "worse")[0] == 0  # B never worse
    code, _, err = lab(capsys, "compare", "--db", db, "--fail-on", "worse", "--baseline",
                       "shp1g,thp")  # now B is thp, worse from 64M on  # fmt: skip
    assert code == 9 and "sysbench-memory (total_size=64M)" in err


def test_the_report_has_the_sweep_table_its_plot_and_each_value_s_backing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    db = sweep_store(tmp_path / "lab.db")
    with Store.open(db) as store:
        (sweep,) = store.sweeps()
        for i, r in enumerate(sweep.runs[:2]):  # two values recorded what backed the twins
            store.record_environment(r.run_id, "guest", "lab-shp1g", {
                "qemu_hugetlb_kib": "1048576", "qemu_anon_huge_kib": "0",
                "memory_kib": "1048576", "memory_backing_declared": "hugetlb"})  # fmt: skip
            store.record_environment(r.run_id, "guest", "lab-thp", {
                "qemu_hugetlb_kib": "0", "qemu_anon_huge_kib": str(524288 * (i + 1)),
                "memory_kib": "1048576", "memory_backing_declared": "default"})  # fmt: skip
    code, _, err = lab(
        capsys, "report", "--db", str(db), "--out", str(tmp_path / "out"), "--no-embed"
    )
    assert code == 0, err
    page = (tmp_path / "out" / "index.html").read_text()
    section = page[page.index('<h2 id="sweeps">') : page.index('<h2 id="metadata">')]
    rows = re.findall(r'<tr class="(\w+)"><td>(\w+)</td>', section)
    assert rows == [("equivalent", "4M"), ("equivalent", "16M"), ("faster", "64M"),
                    ("faster", "256M")]  # fmt: skip
    assert "crossing: total_size=64M" in section
    (src,) = re.findall(r'<img src="(figures/sweep-[^"]+)"', section)
    assert (tmp_path / "out" / src).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "log axis" in section  # 4M to 256M spans decades
    backing = section[section.index("What backed each twin") :]
    backing = backing[: backing.index("</table>")]
    assert "100 % of its 1,048,576 KiB of RAM in hugetlb pages" in backing
    assert "50 % of its 1,048,576 KiB of RAM in transparent huge pages" in backing  # 4M
    assert "100 % of its 1,048,576 KiB of RAM in transparent huge pages" in backing  # 16M
    assert backing.count("not recorded") == 4  # 64M and 256M, both twins


def test_the_sweep_plot_marks_each_verdict_and_the_crossing() -> None:
    from lab.report.sweepplot import sweep_plot
    from lab.stats.sweep import compare_sweep
    from tests.unit.test_sweep_stats import _family

    where, comparisons = _family({"4M": 0.0, "64M": -5.0, "1G": -5.0})
    fig, caption = sweep_plot(compare_sweep("sw", where, ["a", "b", "c"], comparisons))
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4M", "64M", "1G"]
    labels = ax.get_legend_handles_labels()[1]
    assert "±1% threshold" in labels and "crossing: total_size=64M" in labels
    assert {"B better", "equivalent"} <= set(labels)
    assert "corrected with Holm over the 3 values" in caption


def test_lab_runs_names_each_run_s_sweep_and_the_command_that_resumes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(sweep_store(tmp_path / "lab.db", other_run=True))
    _, out, _ = lab(capsys, "runs", "--db", db, "--json")
    sweeps = {r["key"]: r["sweep"] for r in json.loads(out)}
    assert sweeps["sysbench-memory-run2"] == SWEEP and sweeps["sysbench-memory-alone"] is None
    _, out, _ = lab(capsys, "runs", "--db", db, "show", "sysbench-memory-run2", "--json")
    command = json.loads(out)["command"]
    assert "--sweep total_size=4M,16M,64M,256M --sweep-order interleaved" in command
    assert "-p total_size" not in command  # the swept key is the sweep's, not a parameter
    _, out, _ = lab(capsys, "runs", "--db", db, "show", "sysbench-memory-alone", "--json")
    assert "-p total_size=1G" in json.loads(out)["command"]


def test_intervals_far_wider_than_the_changes_are_cut_at_the_axis_and_said_so() -> None:
    """Three noisy samples a side at 99.99 %: the ratio's interval spans thousands of %,
    which would flatten the changes to a line at 0; it is cut, its end an arrowhead."""
    import numpy as np

    from lab.core.sweeps import Axis, points
    from lab.report.sweepplot import sweep_plot
    from lab.stats.analysis import analyse
    from lab.stats.sweep import compare_sweep
    from tests.unit.test_sweep_stats import ONE_PERCENT, _series

    values = {"4M": (10.0, 2.0), "64M": (20.0, 40.0)}  # (shift %, sd): the second is noisy
    axis = Axis("total_size", tuple(values))
    comparisons = []
    for i, (shift, sd) in enumerate(values.values()):
        rng = np.random.default_rng(i)
        a, b = rng.normal(100.0, sd, 3), rng.normal(100.0 * (1 + shift / 100), sd, 3)
        (c,) = analyse(_series("s", a, b), 0.9999, ONE_PERCENT, order=["thp", "shp1g"])
        comparisons.append(c)
    found = compare_sweep("sw", points([axis]), ["a", "b"], comparisons)
    ends = [e for v in found.values for e in v.pair.difference.percent_ci]
    changes = [v.pair.difference.percent for v in found.values]
    fig, caption = sweep_plot(found)
    (ax,) = fig.axes
    low, high = ax.get_ylim()
    assert max(ends) > 10 * (high - low)  # the noisy value's interval: far off the axis
    assert low < -1 and high > max(changes)  # the threshold band and the changes in view
    assert "beyond the drawn range (arrowheads) are cut; the table has them" in caption


def test_a_sweep_whose_every_interval_is_cut_still_plots() -> None:
    """CI found this: when no interval end fits the drawn range, the span was taken over the
    changes alone and min() was handed one float (TypeError) instead of a list."""
    import numpy as np

    from lab.core.sweeps import Axis, points
    from lab.report.sweepplot import sweep_plot
    from lab.stats.analysis import analyse
    from lab.stats.sweep import compare_sweep
    from tests.unit.test_sweep_stats import ONE_PERCENT, _series

    values = {"4M": 0.5, "64M": -0.5}  # small changes, wide intervals: no end is drawn
    axis = Axis("total_size", tuple(values))
    comparisons = []
    for shift in values.values():
        a = np.array([80.0, 100.0, 120.0])
        b = a * (1 + shift / 100)
        (c,) = analyse(_series("s", a, b), 0.9999, ONE_PERCENT, order=["thp", "shp1g"])
        comparisons.append(c)
    found = compare_sweep("sw", points([axis]), ["a", "b"], comparisons)
    changes = [v.pair.difference.percent for v in found.values]
    fig, caption = sweep_plot(found)
    (ax,) = fig.axes
    low, high = ax.get_ylim()
    assert low < min(changes) and high > max(changes)
    assert "4 interval ends beyond the drawn range" in caption
