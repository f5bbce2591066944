"""``lab compare`` with the boot as the unit: each arm's boots and ICC in every output, and the
verdict from the boot means where every arm has two boots or more. The stores are synthetic:
each boot shifts its samples by a known effect, and the references are computed here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

TIME = MetricInfo("t", "s", "lower")

pytestmark = pytest.mark.usefixtures("no_config")


def boot_store(
    path: Path,
    boots: dict[str, int],
    per_boot: int = 30,
    between: float = 2.0,
    declared: str | None = None,
    record_boots: bool = True,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One run of workload "w": each variant's ``boots[variant]`` boots of ``per_boot``
    iterations, boot effects of sd ``between`` and noise of sd 1; B (shp1g) 1 % lower on
    average. Returns each variant's (values, boot labels) in iteration order."""
    rng = np.random.default_rng(7)
    means = {"thp": 100.0, "shp1g": 99.0}
    stored = {}
    with Store.open(path) as store:
        study = store.ensure_study("s")
        n = max(boots.values()) * per_boot
        run = store.ensure_run(study, "s/w", "w", {}, "sync", n, [TIME])
        for variant, k in boots.items():
            labels = np.repeat([f"{variant}-boot{j}" for j in range(k)], per_boot)
            values = (means[variant] + np.repeat(rng.normal(0, between, k), per_boot)
                      + rng.normal(0, 1, k * per_boot))  # fmt: skip
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, boot_id=str(b) if record_boots else None,
                                metrics={"t": float(v)})
                for i, (v, b) in enumerate(zip(values, labels, strict=True), 1)
            ])  # fmt: skip
            stored[variant] = (values, labels)
        if declared is not None:
            store.record_warmup(run, declared)
    return stored


def compare_json(capsys: pytest.CaptureFixture[str], db: Path, *extra: str) -> dict[str, Any]:
    assert main(["compare", "--db", str(db), "--format", "json", *extra]) == 0
    (c,) = json.loads(capsys.readouterr().out)
    assert isinstance(c, dict)
    return c


def anova_icc(values: np.ndarray, labels: np.ndarray) -> float:
    """The reference: the balanced one-way ANOVA's ICC, by hand."""
    groups = [values[labels == b] for b in dict.fromkeys(labels)]
    n = groups[0].size
    msb = n * np.var([g.mean() for g in groups], ddof=1)
    msw = np.mean([g.var(ddof=1) for g in groups])
    between = max(0.0, (msb - msw) / n)
    return float(between / (between + msw))


def test_one_boot_per_arm_says_the_verdict_holds_for_this_boot_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    boot_store(db, {"thp": 1, "shp1g": 1}, per_boot=60)
    assert main(["compare", "--db", str(db)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "this boot only" in out and "(thp 1, shp1g 1)" in out
    c = compare_json(capsys, db)
    assert c["boots"]["unit"] == "iteration" and c["boots"]["pairs"] == []
    assert [a["boots"] for a in c["boots"]["arms"]] == [1, 1]
    assert "unit: boot" not in c["pairs"][0]["verdict"]["text"]


def test_several_boots_per_arm_give_the_verdict_from_the_boot_means(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    stored = boot_store(db, {"thp": 5, "shp1g": 5}, between=3.0)
    c = compare_json(capsys, db, "--confidence", "95")
    boots = c["boots"]
    assert boots["unit"] == "boot"
    for arm in boots["arms"]:
        values, labels = stored[arm["arm"]]
        assert arm["boots"] == 5 and arm["samples"] == values.size
        assert arm["icc"] == pytest.approx(anova_icc(values, labels))
    means = {v: np.array([x[lab == b].mean() for b in dict.fromkeys(lab)])
             for v, (x, lab) in stored.items()}  # fmt: skip
    reference = stats.ttest_ind(means["shp1g"], means["thp"], equal_var=False)
    ci = reference.confidence_interval(0.95)
    (pair,) = boots["pairs"]
    assert (pair["diff_low"], pair["diff_high"]) == pytest.approx((ci.low, ci.high))
    # Welch on the iterations as if independent: several times narrower
    naive = stats.ttest_ind(stored["shp1g"][0], stored["thp"][0], equal_var=False)
    low, high = naive.confidence_interval(0.95)
    assert high - low < (ci.high - ci.low) / 3
    verdict = c["pairs"][0]["verdict"]
    assert verdict["outcome"] == pair["verdict"] == "inconclusive"
    assert "[unit: boot, 5 and 5 boot means]" in verdict["text"]
    assert main(["compare", "--db", str(db), "--confidence", "95"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(boot means)" in out and "unit: boot." in out


def test_the_boots_are_those_of_the_samples_kept_after_the_warmup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    boot_store(db, {"thp": 3, "shp1g": 3}, per_boot=10, declared="2")
    c = compare_json(capsys, db)
    assert [a["samples"] for a in c["boots"]["arms"]] == [24, 24]  # 3 boots of 10 − 2
    assert [a["summary"]["n"] for a in c["arms"]] == [24, 24]


def test_one_arm_with_one_boot_keeps_the_iteration_verdict_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    boot_store(db, {"thp": 4, "shp1g": 1}, per_boot=20)
    c = compare_json(capsys, db)
    assert c["boots"]["unit"] == "iteration" and "these boots only" in c["boots"]["note"]
    assert "unit: boot" not in c["pairs"][0]["verdict"]["text"]


def test_samples_without_boot_ids_get_no_boot_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    boot_store(db, {"thp": 2, "shp1g": 2}, record_boots=False)
    assert "boots" not in compare_json(capsys, db)


def test_a_stopped_run_with_several_boots_is_judged_and_shown_by_its_boot_means() -> None:
    """The --until rule's interval treats iterations as independent; with boots measured the
    summary shows the boot means' change, unmarked by the stop's *, and the verdict theirs."""
    from lab.report.summary import summary_rows
    from lab.stats.analysis import analyse, with_boots, with_stops
    from lab.stats.series import Series, series_key
    from lab.stats.stopping import StoppedInterval

    rng = np.random.default_rng(8)
    labels = np.repeat([f"boot{j}" for j in range(4)], 20)
    arms = [Series("s", "w", "t", "s", "lower", v, "local", f"lab-{v}", np.arange(1, 81),
                   mean + np.repeat(rng.normal(0, 3, 4), 20) + rng.normal(0, 1, 80))
            for v, mean in (("thp", 100.0), ("shp1g", 95.0))]  # fmt: skip
    stop = StoppedInterval("t", "Lai's t confidence sequence", "80 pairs", 0.99, True, -5.0,
                           (-5.5, -4.5), -5.0, (-5.5, -4.5), "after 80 pairs")  # fmt: skip
    [plain] = analyse(arms, 99, 0.01, order=["thp", "shp1g"])
    [c] = with_boots(with_stops([plain], {("s", "w"): stop}),
                     {series_key(s): labels for s in arms})  # fmt: skip
    assert c.stopped == stop and c.boots is not None and c.boots.unit == "boot"
    boot = c.boots.pairs[0].difference
    (row,) = summary_rows([c])
    assert row.change.endswith("(boot means)") and "*" not in row.change
    assert f"{boot.percent_ci[0]:+.2f}" in row.change
    assert "[unit: boot, 4 and 4 boot means]" in c.pairs[0].verdict.text


def test_the_csv_has_the_boots_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import csv
    import io

    db = tmp_path / "lab.db"
    stored = boot_store(db, {"thp": 3, "shp1g": 3})
    assert main(["compare", "--db", str(db), "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    boots = {(r[7], r[8]): r[9] for r in rows if r[6] == "boots"}
    assert boots[("", "unit")] == "boot" and boots[("thp", "boots")] == "3"
    assert float(boots[("thp", "icc")]) == pytest.approx(anova_icc(*stored["thp"]))
    means = {(r[7], r[8]): r[9] for r in rows if r[6] == "boot means"}
    assert means[("shp1g vs thp", "verdict")] in ("faster", "slower", "equivalent", "inconclusive")


def test_a_boot_is_its_run_and_boot_id_and_samples_without_one_are_no_boot() -> None:
    from lab.app.analyse import boot_labels

    key = ("s", "w", "t", "thp", "local", "lab-thp")
    runs = np.array([1, 1, 1, 2, 2, 2])
    boots = np.array(["x", "x", "y", "x", "x", "y"], dtype=object)  # the same ids in run 2
    assert list(boot_labels({key: (runs, boots)})[key]) == [0, 0, 1, 2, 2, 3]
    assert boot_labels({key: (runs, np.full(6, "", dtype=object))}) == {}


def test_a_run_against_another_is_read_by_each_runs_boots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    rng = np.random.default_rng(10)
    with Store.open(db) as store:
        study = store.ensure_study("s")
        guest = store.ensure_guest(study, "lab-thp", "thp")
        for key, boots in (("before", 3), ("after", 4)):
            run = store.ensure_run(study, key, "w", {"tag": key}, "sync", boots * 10, [TIME])
            shifts = np.repeat(rng.normal(0, 2, boots), 10)
            store.record(run, guest, [
                IterationRecord(i + 1, 1, True, boot_id=f"b{i // 10}",
                                metrics={"t": float(100 + shifts[i] + rng.normal(0, 1))})
                for i in range(boots * 10)
            ])  # fmt: skip
    c = compare_json(capsys, db, "--run", "before", "--against", "after")
    assert c["boots"]["unit"] == "boot"
    assert [(a["arm"], a["boots"]) for a in c["boots"]["arms"]] == [("before", 3), ("after", 4)]


def test_a_boot_note_true_of_every_row_is_said_once_for_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 40: the footnote named every metric (24 in the demo study) and each one's ICC,
    the same note told again per metric; the ICCs are in --detail's Boots tables."""
    db = tmp_path / "lab.db"
    rng = np.random.default_rng(3)
    metrics = [MetricInfo(f"m{k}", "s", "lower") for k in range(6)]
    with Store.open(db) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, "sync", 40, metrics)
        for variant in ("thp", "shp1g"):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, boot_id=f"{variant}-{i // 10}",
                                metrics={m.name: float(rng.normal(100, 1)) for m in metrics})
                for i in range(1, 41)
            ])  # fmt: skip
    assert main(["compare", "--db", str(db)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("unit: boot") == 1 and "* every row: unit: boot." in out
    assert "w · m0" not in out and "intraclass" not in out
    assert main(["compare", "--db", str(db), "--detail", "--metric", "m0"]) == 0
    assert "Intraclass correlation" in capsys.readouterr().out
