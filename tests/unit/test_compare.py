"""``lab compare`` end to end on a store shaped like the reference study, in every format."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

Z9999 = 3.890591886  # z(1 − 0.0001/2), from a normal table


def constructed(n: int, mean: float, sd: float, seed: int) -> np.ndarray:
    z = np.random.default_rng(seed).standard_normal(n)
    return mean + sd * (z - z.mean()) / z.std(ddof=1)


def study_store(path: Path, n: int = 2000, variants: tuple[str, ...] = ("thp", "shp1g")) -> Path:
    """sysbench (time, lower is better) and iperf3 (throughput, higher) as in tables 3 and 4."""
    params = {
        "thp": {"sysbench": (131.55, 4.38), "iperf3": (29.74, 1.58)},
        "shp1g": {"sysbench": (128.34, 4.2), "iperf3": (29.85, 1.4)},
        "shp2m": {"sysbench": (130.0, 4.3), "iperf3": (29.80, 1.5)},
    }
    with Store.open(path) as store:
        study = store.ensure_study("hugepages", "THP vs 1 GiB static huge pages")
        runs = {
            "sysbench": store.ensure_run(study, "hp/sysbench", "sysbench", {}, None, n,
                                         [MetricInfo("total_time_s", "s", "lower")]),
            "iperf3": store.ensure_run(study, "hp/iperf3", "iperf3", {}, None, n,
                                       [MetricInfo("sender_gbit_s", "Gbit/s", "higher")]),
        }  # fmt: skip
        for seed, variant in enumerate(variants):
            xml = f"<domain><name>lab-{variant}</name></domain>"
            guest = store.ensure_guest(study, f"lab-{variant}", variant, domain_xml=xml)
            for k, (workload, run) in enumerate(runs.items()):
                metric = "total_time_s" if workload == "sysbench" else "sender_gbit_s"
                mean, sd = params[variant][workload]
                values = constructed(n, mean, sd, seed * 10 + k)
                store.record(run, guest, [
                    IterationRecord(i + 1, 1, True, metrics={metric: float(v)})
                    for i, v in enumerate(values)
                ])  # fmt: skip
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return study_store(tmp_path_factory.mktemp("compare") / "lab.db")


@pytest.fixture(autouse=True)
def no_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_reproduces_the_study_and_gives_verdicts(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json")
    assert code == 0
    data = {c["workload"]: c for c in json.loads(out)}
    sysbench = data["sysbench"]
    thp, shp = sysbench["arms"]
    assert (thp["label"], shp["label"]) == ("thp", "shp1g")  # A is the guest stored first
    assert thp["summary"]["mean"] == pytest.approx(131.55)
    assert thp["summary"]["margin"] == pytest.approx(Z9999 * 4.38 / math.sqrt(2000))
    (pair,) = sysbench["pairs"]
    assert pair["difference"]["diff"] == pytest.approx(128.34 - 131.55)
    assert pair["difference"]["percent"] == pytest.approx((128.34 / 131.55 - 1) * 100)
    assert pair["verdict"]["outcome"] == "faster"  # the study's 2.4 %, beyond 1 %
    assert pair["p_adjusted_bh"] is None
    (net,) = data["iperf3"]["pairs"]
    assert net["verdict"]["outcome"] == "equivalent"  # the study's 0.4 %, within ±1 %
    assert data["iperf3"]["direction"] == "higher"


def test_baseline_reverses_the_pair(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json",
                    "--workload", "sysbench", "--baseline", "shp1g,thp")  # fmt: skip
    (c,) = json.loads(out)
    assert c["pairs"][0]["a"] == "shp1g" and c["pairs"][0]["verdict"]["outcome"] == "slower"


def test_threshold_changes_the_verdict(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json",
                    "--workload", "sysbench", "--threshold", "5%")  # fmt: skip
    assert json.loads(out)[0]["pairs"][0]["verdict"]["outcome"] == "equivalent"


def test_csv_is_long_and_exact(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "compare", "--db", str(db), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    margin = next(r for r in rows if r["workload"] == "iperf3" and r["subject"] == "thp"
                  and r["statistic"] == "margin")  # fmt: skip
    assert round(float(margin["value"]), 2) == 0.14  # z·1.58/√2000
    verdict = next(r for r in rows if r["statistic"] == "verdict" and r["workload"] == "sysbench")
    assert verdict["value"] == "faster" and verdict["subject"] == "shp1g vs thp"


def test_markdown_and_table(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, md, _ = run(capsys, "compare", "--db", str(db), "--format", "markdown")
    assert "| Margin of error | 0.38 | 0.37 |" in md  # z·4.38/√2000, z·4.2/√2000
    assert "verdict: shp1g is faster than thp" in md
    _, table, _ = run(capsys, "compare", "--db", str(db), "--workload", "sysbench")
    assert "the study's table" in table and "Verdict" in table and "faster" in table


def test_trim_is_side_by_side(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json", "--trim")
    subsets = [(c["workload"], c["subset"].split()[0]) for c in json.loads(out)]
    assert subsets == [("iperf3", "all"), ("iperf3", "without"),
                       ("sysbench", "all"), ("sysbench", "without")]  # fmt: skip


def test_three_variants_adjusted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = study_store(tmp_path / "three.db", n=300, variants=("thp", "shp1g", "shp2m"))
    _, out, _ = run(
        capsys, "compare", "--db", str(db), "--format", "json", "--workload", "sysbench"
    )
    pairs = json.loads(out)[0]["pairs"]
    assert len(pairs) == 3
    assert all(p["p_adjusted_bh"] >= p["difference"]["brunner_munzel_p"] for p in pairs)


def test_empty_store_says_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "compare", "--db", str(tmp_path / "new.db"))
    assert code == 2 and "no samples" in err and "lab import" in err
    code, _, err = run(capsys, "compare", "--db", str(tmp_path / "new.db"), "--workload", "x")
    assert "workload 'x'" in err


def test_not_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "results.csv"
    bogus.write_text("a,b\n1,2\n")
    code, _, err = run(capsys, "compare", "--db", str(bogus))
    assert code == 5 and "not a lab result store: it is a CSV file" in err


def test_bad_threshold(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "compare", "--db", str(db), "--threshold", "lots")
    assert code == 2 and "threshold" in err


def synced_store(path: Path, schedule: str | None = "sync", n: int = 400) -> Path:
    """Twins disturbed together (a shared per-iteration term); B fails iterations 7 and 8."""
    rng = np.random.default_rng(21)
    common = rng.normal(0, 3, n)
    values = {"thp": 100 + common + rng.normal(0, 1, n), "shp1g": 99 + common + rng.normal(0, 1, n)}
    with Store.open(path) as store:
        study = store.ensure_study("synced")
        run = store.ensure_run(study, "s/sysbench", "sysbench", {}, schedule, n,
                               [MetricInfo("total_time_s", "s", "lower")])  # fmt: skip
        for variant, x in values.items():
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i + 1, 1, variant == "thp" or i + 1 not in (7, 8),
                                metrics={"total_time_s": float(v)})
                for i, v in enumerate(x)
            ])  # fmt: skip
    return path


def test_synchronised_run_adds_the_paired_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scipy import stats

    db = synced_store(tmp_path / "sync.db")
    _, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json", "--confidence", "99")
    (c,) = json.loads(out)
    (paired,) = c["paired"]
    assert (paired["a"], paired["b"], paired["pairs"]) == ("thp", "shp1g", 398)
    assert (paired["unpaired_a"], paired["unpaired_b"]) == (2, 0)
    with Store.open(db) as store:
        thp, shp = sorted(store.values(), key=lambda s: s.variant != "thp")
    keep = ~np.isin(thp.iterations, [7, 8])
    ref = stats.ttest_rel(shp.values, thp.values[keep])
    ci = ref.confidence_interval(confidence_level=0.99)
    assert (paired["paired_low"], paired["paired_high"]) == pytest.approx((ci.low, ci.high))
    assert paired["wilcoxon_p"] == pytest.approx(
        stats.wilcoxon(shp.values - thp.values[keep]).pvalue
    )
    assert paired["variance_ratio"] == pytest.approx(0.1, abs=0.05)  # 2 of 9 + 1 + 9 + 1
    welch = c["pairs"][0]["difference"]["diff_ci"]
    assert [paired["welch_low"], paired["welch_high"]] == pytest.approx(welch)
    assert paired["paired_high"] - paired["paired_low"] < (welch[1] - welch[0]) / 2
    _, table, _ = run(capsys, "compare", "--db", str(db))
    assert "paired by iteration" in table and "Wilcoxon signed-rank p" in table
    assert "pairing removed" in table and "narrower than Welch's" in table
    _, text, _ = run(capsys, "compare", "--db", str(db), "--format", "csv")
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["table"] == "paired"]
    assert {r["statistic"] for r in rows} >= {"pairs", "wilcoxon_p", "variance_removed"}
    assert next(r for r in rows if r["statistic"] == "pairs")["value"] == "398"


def test_paired_only_when_synchronised_or_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = synced_store(tmp_path / "concurrent.db", schedule="concurrent", n=60)
    _, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json")
    assert "paired" not in json.loads(out)[0]
    _, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json", "--paired", "--trim")
    assert [len(c["paired"]) for c in json.loads(out)] == [1, 1]
    _, md, _ = run(capsys, "compare", "--db", str(db), "--format", "markdown", "--paired")
    assert "| Variance removed by pairing |" in md
