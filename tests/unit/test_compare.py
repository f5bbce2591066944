"""``lab compare`` end to end on a store shaped like the reference study, in every format."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from lab.cli import main
from lab.core.inventory import guest_prefix
from lab.store import IterationRecord, MetricInfo, Store


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


pytestmark = pytest.mark.usefixtures("no_config")


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
    # the summary's t margin in every output (the study's z·s/√n was 0.3810 here)
    t9999 = stats.t.ppf(1 - 0.0001 / 2, 1999)
    assert thp["summary"]["margin"] == pytest.approx(t9999 * 4.38 / math.sqrt(2000))
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
    _, table, _ = run(capsys, "compare", "--detail", "--db", str(db), "--workload", "sysbench")
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
    Store.open(tmp_path / "new.db").close()
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
    _, table, _ = run(capsys, "compare", "--detail", "--db", str(db))
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


# -- counterbalanced placement (lab run --swap-every) --------------------------------------------

VARIANT_EFFECT, PLACEMENT_EFFECT = -2.0, 3.0  # B − A, and on B's CPUs − on A's


def placement_store(path: Path, n: int = 400, swap_every: int = 10) -> Path:
    """A sync run with swapped CPU sets: B is 2 s faster, and B's CPUs are 3 s slower.

    Without the swap the two effects would be one (+1 s, "B is slower"); with it the model
    must find each on its own.
    """
    from lab.run.placement import placement_for

    rng = np.random.default_rng(7)
    with Store.open(path) as store:
        study = store.ensure_study("placed")
        run = store.ensure_run(study, "p/sysbench", "sysbench", {}, "sync", n,
                               [MetricInfo("total_time_s", "s", "lower")])  # fmt: skip
        for variant, other, cpu in (("thp", "shp1g", 2), ("shp1g", "thp", 3)):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            records = []
            for i in range(1, n + 1):
                label = placement_for(i, swap_every)
                on = variant if label == "own" else other
                value = 100.0 + (VARIANT_EFFECT if variant == "shp1g" else 0.0)
                value += (PLACEMENT_EFFECT if on == "shp1g" else 0.0) + rng.normal(0, 1)
                records.append(IterationRecord(i, 1, True, metrics={"total_time_s": value}))
                store.record_placement(run, guest, i, label, [cpu if label == "own" else 5 - cpu])
            store.record(run, guest, records)
    return path


def test_swapped_cpu_sets_give_the_variant_and_the_placement_effect_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = placement_store(tmp_path / "placed.db")
    code, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json")
    assert code == 0
    (c,) = json.loads(out)
    p = c["placement"]
    assert (p["a"], p["b"], p["placed"], p["unplaced"]) == ("thp", "shp1g", 800, 0)
    assert p["variant_low"] < VARIANT_EFFECT < p["variant_high"]
    assert p["placement_low"] < PLACEMENT_EFFECT < p["placement_high"]
    assert p["variant_effect"] == pytest.approx(VARIANT_EFFECT, abs=0.3)
    assert p["placement_effect"] == pytest.approx(PLACEMENT_EFFECT, abs=0.3)
    assert p["interaction_low"] < 0 < p["interaction_high"]
    assert p["residual_sd"] == pytest.approx(1.0, abs=0.15)
    assert (p["a_on_a_n"], p["a_on_b_n"], p["b_on_b_n"], p["b_on_a_n"]) == (200, 200, 200, 200)
    assert p["b_on_b"] == pytest.approx(100 + VARIANT_EFFECT + PLACEMENT_EFFECT, abs=0.3)
    assert c["paired"] and c["pairs"]  # the rest of the output is still there
    _, text, _ = run(capsys, "compare", "--db", str(db), "--format", "csv")
    rows = {r["statistic"]: r for r in csv.DictReader(io.StringIO(text))
            if r["table"] == "placement"}  # fmt: skip
    assert float(rows["placement_effect"]["value"]) == pytest.approx(p["placement_effect"])
    assert rows["placed"]["subject"] == "shp1g vs thp"
    _, table, _ = run(capsys, "compare", "--detail", "--db", str(db))
    table = " ".join(table.split())  # as read, whatever rich wrapped
    assert "Placement: variant and CPU set told apart" in table
    assert "Placement effect (B's CPUs − A's)" in table
    assert "placement shp1g vs thp: on shp1g's CPUs instead of thp's +3" in table
    _, md, _ = run(capsys, "compare", "--db", str(db), "--format", "markdown", "--trim")
    assert md.count("Placement: variant and CPU set told apart") == 1  # all samples only
    assert "| Variant effect (B − A), CPU sets balanced |" in md


def test_json_and_csv_are_lab_report_s_rendering_of_the_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command only renders: its JSON and CSV are, byte for byte, what
    lab.report.formats makes of lab.app.analyse's Analysis for the same options, the paired
    and placement tables included."""
    from lab.app.analyse import AnalyseRequest, Selection, analyse
    from lab.core.config import Config
    from lab.core.context import Context
    from lab.report.formats import comparison_csv, comparison_json

    db = placement_store(tmp_path / "placed.db", n=60)
    request = AnalyseRequest(Selection(db=str(db)), paired="synced")  # lab compare's defaults
    analysis = analyse(Context(config=Config()), request)
    _, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json")
    assert out == comparison_json(analysis.comparisons, analysis.sweeps) + "\n"
    assert {"paired", "placement"} <= set(json.loads(out)[0])
    _, text, _ = run(capsys, "compare", "--db", str(db), "--format", "csv")
    assert text == comparison_csv(analysis.comparisons, analysis.sweeps)
    assert {"paired", "placement"} <= {r["table"] for r in csv.DictReader(io.StringIO(text))}


def test_without_placement_labels_the_output_is_as_before(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json")
    assert all("placement" not in c for c in json.loads(out))
    _, text, _ = run(capsys, "compare", "--db", str(db), "--format", "csv")
    assert "placement" not in {r["table"] for r in csv.DictReader(io.StringIO(text))}
    _, table, _ = run(capsys, "compare", "--db", str(db))
    assert "Placement" not in table and "placement" not in table


def test_placement_with_one_placement_only_adds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = placement_store(tmp_path / "short.db", n=8, swap_every=10)  # never got to swap
    _, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json")
    assert "placement" not in json.loads(out)[0]


def two_host_store(path: Path, effects: dict[str, float], n: int = 40) -> dict[str, tuple]:
    """thp and shp1g on each host; shp1g's mean is thp's + the host's effect. Returns each
    host's (thp samples, shp1g samples)."""
    samples: dict[str, tuple] = {}
    with Store.open(path) as store:
        study = store.ensure_study("hosts")
        run_id = store.ensure_run(study, "h/sysbench", "sysbench", {}, None, n,
                                  [MetricInfo("total_time_s", "s", "lower")])  # fmt: skip
        for h, (host, effect) in enumerate(effects.items()):
            a = constructed(n, 100.0, 2.0, 2 * h)
            b = constructed(n, 100.0 + effect, 2.5 * (1 + 2 * h), 2 * h + 1)  # unequal weights
            samples[host] = (a, b)
            for variant, values in (("thp", a), ("shp1g", b)):
                name = guest_prefix(host) + variant
                guest = store.ensure_guest(study, name, variant, host=host)
                store.record(run_id, guest, [
                    IterationRecord(i + 1, 1, True, metrics={"total_time_s": float(v)})
                    for i, v in enumerate(values)
                ])  # fmt: skip
    return samples


def test_by_host_prints_each_host_and_the_weighted_combination(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = two_host_store(tmp_path / "h.db", {"local": -3.0, "rack2": +2.0})
    code, out, _ = run(capsys, "compare", "--db", str(tmp_path / "h.db"), "--by", "host")
    assert code == 0
    # The inverse-variance weighted mean of the per-host differences, computed here by hand.
    diffs, weights = [], []
    for a, b in samples.values():
        diffs.append(b.mean() - a.mean())
        weights.append(1 / (a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b)))
    combined = float(np.average(diffs, weights=weights))
    assert abs(combined - np.mean(diffs)) > 0.5  # the weights matter here
    lines = out.splitlines()
    local = next(line for line in lines if line.strip().startswith("│ local"))
    rack2 = next(line for line in lines if line.strip().startswith("│ rack2"))
    both = next(line for line in lines if "combined" in line and "│" in line)
    assert "-3" in local and "+2" in rack2
    assert f"{combined:+,.4g}" in both
    assert "shp1g − thp within each host" in out
    # Opposite effects on the two hosts: Cochran's Q says they disagree.
    assert "2 host(s), weighted by 1/se²" in out and "the hosts disagree about the effect" in out


def test_by_host_on_agreeing_hosts_does_not_cry_disagreement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two_host_store(tmp_path / "h.db", {"local": -3.0, "rack2": -3.0})
    code, out, _ = run(capsys, "compare", "--db", str(tmp_path / "h.db"), "--by", "host")
    assert code == 0
    assert "Cochran's Q" in out and "disagree" not in out


def test_plain_compare_and_its_json_add_the_by_host_result_when_hosts_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two_host_store(tmp_path / "h.db", {"local": -3.0, "rack2": +2.0})
    code, out, _ = run(capsys, "compare", "--detail", "--db", str(tmp_path / "h.db"))
    assert code == 0
    assert "shp1g − thp within each host, then combined" in out
    assert "by host: 2 host(s)" in out
    code, out, _ = run(capsys, "compare", "--db", str(tmp_path / "h.db"), "--format", "json")
    (entry,) = json.loads(out)
    code, by, _ = run(capsys, "compare", "--detail", "--db", str(tmp_path / "h.db"), "--by", "host",
                      "--format", "json")  # fmt: skip
    assert entry["hosts"] == json.loads(by)[0]  # the same analysis as --by host
    assert [h["host"] for h in entry["hosts"]["hosts"]] == ["local", "rack2"]


def test_one_host_gets_no_by_host_table(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compare", "--db", str(db))
    assert code == 0 and "within each host" not in out and "by host:" not in out
    code, out, _ = run(capsys, "compare", "--db", str(db), "--format", "json")
    assert all("hosts" not in entry for entry in json.loads(out))


def test_the_report_has_the_by_host_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two_host_store(tmp_path / "h.db", {"local": -3.0, "rack2": +2.0})
    code, _, _ = run(capsys, "report", "--db", str(tmp_path / "h.db"), "--out",
                     str(tmp_path / "r"))  # fmt: skip
    assert code == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert "shp1g − thp within each host, then combined</caption>" in page
    assert "<td>rack2</td>" in page and "by host: 2 host(s)" in page


def test_an_unknown_baseline_is_refused_naming_the_variants(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "shp" is no variant: ordered after the known ones it used to leave thp as A silently,
    # or with "shp,shp1g" to swap A and B so that "better" read as "worse"
    code, out, err = run(capsys, "compare", "--db", str(db), "--baseline", "shp,shp1g")
    assert code == 2 and out == ""
    assert "'shp'" in err and "thp, shp1g" in err
    assert run(capsys, "compare", "--db", str(db), "--baseline", "shp1g,thp")[0] == 0
