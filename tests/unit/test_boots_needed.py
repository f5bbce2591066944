"""An inconclusive verdict on boot means says how many more boots per variant would settle it
(issue 40 §2): on synthetic stores with boot ids, checked against Welch's and the log ratio's
intervals worked out here with scipy at that many boots, and one fewer."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from lab.cli import main
from lab.stats.boots import boot_difference
from lab.stats.bootsneeded import ArmMeans, intervals
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")


def boots_store(path: Path, shift: float, direction: str = "lower", between: float = 3.0) -> None:
    """Twins of 5 boots × 30 iterations, boot effects of sd ``between``, noise of sd 1, B's
    mean ``shift`` above A's 100; boot ids as lab run records them."""
    rng = np.random.default_rng(40)
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, "sync", 150,
                               [MetricInfo("t", "s", direction)])  # fmt: skip
        for variant, mean in (("thp", 100.0), ("shp1g", 100.0 + shift)):
            effects = np.repeat(rng.normal(0, between, 5), 30)
            values = mean + effects + rng.normal(0, 1, 150)
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, boot_id=f"{variant}-{(i - 1) // 30}",
                                metrics={"t": float(v)})
                for i, v in enumerate(values, 1)
            ])  # fmt: skip


def reference(a: np.ndarray, b: np.ndarray, boots: int, level: float) -> dict[str, Any]:
    """Welch's interval of B − A and the log ratio's, from the observed means and sds of the
    boot means as if each arm had ``boots`` of them (scipy's t)."""
    ma, mb, sa, sb = a.mean(), b.mean(), a.std(ddof=1), b.std(ddof=1)

    def welch(va: float, vb: float) -> float:
        df = (va + vb) ** 2 / (va**2 / (boots - 1) + vb**2 / (boots - 1))
        return float(stats.t.ppf(0.5 + level / 2, df) * math.sqrt(va + vb))

    half = welch(sa**2 / boots, sb**2 / boots)
    log_half = welch((sa / ma) ** 2 / boots, (sb / mb) ** 2 / boots)
    ratio = math.log(mb / ma)
    return {
        "diff": (mb - ma - half, mb - ma + half),
        "percent": (math.expm1(ratio - log_half) * 100, math.expm1(ratio + log_half) * 100),
    }


def boot_means(db: Path) -> tuple[np.ndarray, np.ndarray]:
    with Store.open(db, create=False) as store:
        series = {s.variant: s.values for s in store.values()}
    return series["thp"].reshape(5, 30).mean(axis=1), series["shp1g"].reshape(5, 30).mean(axis=1)


def compare(capsys: pytest.CaptureFixture[str], db: Path, *extra: str) -> tuple[dict, str]:
    assert main(["compare", "--db", str(db), "--format", "json", *extra]) == 0
    (c,) = json.loads(capsys.readouterr().out)
    assert main(["compare", "--db", str(db), *extra]) == 0
    return c["boots"]["pairs"][0], " ".join(capsys.readouterr().out.split())


def test_the_intervals_at_the_observed_boots_are_compares() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(100, 3, 6), rng.normal(98, 2, 4)
    found = boot_difference(a, b, 0.99)
    percent, diff = intervals(ArmMeans.of(a), ArmMeans.of(b), 0.99)
    assert percent == pytest.approx(found.percent_ci, rel=1e-12)
    assert diff == pytest.approx(found.diff_ci, rel=1e-12)


def test_an_inconclusive_difference_says_how_many_more_boots_tell_it_from_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    boots_store(db, -2.0)
    pair, out = compare(capsys, db, "--confidence", "95", "--threshold", "0%")
    assert pair["verdict"] == "inconclusive"
    more = pair["boots_needed"]
    assert isinstance(more, int) and more >= 1
    a, b = boot_means(db)

    def decided(boots: int) -> bool:  # "faster" or "slower": both intervals one side of 0
        ref = reference(a, b, boots, 0.95)
        below = ref["diff"][1] < 0 and ref["percent"][1] < 0
        return below or (ref["diff"][0] > 0 and ref["percent"][0] > 0)

    assert decided(5 + more) and not decided(5 + more - 1)
    assert pair["boots_needed_per_boot"] == 30
    assert "estimate" in pair["boots_needed_note"]
    assert f"about {more:,} more boots per variant (at 30 iterations per boot)" in out
    assert "estimate" in out and "±0 %" in out


def test_an_inconclusive_equivalence_says_how_many_more_boots_fit_it_within_the_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A throughput (higher is better) B about as good as A: the boots that bring the ratio's
    interval within ±5 %."""
    db = tmp_path / "lab.db"
    boots_store(db, 0.3, direction="higher")
    pair, _ = compare(capsys, db, "--confidence", "99", "--threshold", "5%")
    assert pair["verdict"] == "inconclusive"
    more = pair["boots_needed"]
    a, b = boot_means(db)

    def within(boots: int) -> bool:
        low, high = reference(a, b, boots, 0.99)["percent"]
        return low >= -5 and high <= 5

    assert within(5 + more) and not within(5 + more - 1)


def test_a_decisive_verdict_needs_no_more_boots_and_says_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    boots_store(db, -20.0, between=1.0)
    pair, out = compare(capsys, db, "--confidence", "95", "--threshold", "1%")
    assert pair["verdict"] == "faster"
    assert pair["boots_needed"] is None and pair["boots_needed_note"] is None
    assert "more boots per variant" not in out


def test_many_inconclusive_metrics_share_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Six metrics, no true difference, large boot effects: one line with the range, not six."""
    db = tmp_path / "lab.db"
    rng = np.random.default_rng(6)
    metrics = [MetricInfo(f"m{k}", "s", "lower") for k in range(6)]
    with Store.open(db) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, "sync", 40, metrics)
        for variant in ("thp", "shp1g"):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            shifts = {m.name: rng.normal(0, 3, 4) for m in metrics}
            store.record(run, guest, [
                IterationRecord(i, 1, True, boot_id=f"{variant}-{(i - 1) // 10}", metrics={
                    m.name: float(100 + shifts[m.name][(i - 1) // 10] + rng.normal(0, 1))
                    for m in metrics})
                for i in range(1, 41)
            ])  # fmt: skip
    assert main(["compare", "--db", str(db), "--format", "json", "--threshold", "0%"]) == 0
    needed = [c["boots"]["pairs"][0]["boots_needed"] for c in json.loads(capsys.readouterr().out)]
    assert main(["compare", "--db", str(db), "--threshold", "0%"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "6 verdicts read on boot means are inconclusive" in out
    assert f"about {min(needed):,} to {max(needed):,} more boots per variant" in out
    assert out.count("more boots per variant") == 1


def test_a_change_at_the_threshold_itself_never_settles_and_says_so() -> None:
    """Boot means whose change is exactly the threshold: no number of boots decides it."""
    from lab.report.boots import needed_text
    from lab.stats.boots import BootAnalysis, boot_verdict, components
    from lab.stats.bootsneeded import boots_needed
    from lab.stats.verdict import Threshold

    a = np.array([99.0, 101.0, 100.5, 99.5])
    b = a + 1.0  # +1 on a mean of 100: at a threshold of 1 in the metric's unit
    assert boots_needed(a, b, "lower", Threshold(1.0, relative=False), 0.95) is None
    assert boots_needed(a, b, "lower", Threshold(0.5, relative=False), 0.95) is not None
    labels = np.arange(4)
    pair = boot_verdict(("A", components(a, labels)), ("B", components(b, labels)), "lower",
                        Threshold(1.0, relative=False), 0.95)  # fmt: skip
    analysis = BootAnalysis((("A", components(a, labels)), ("B", components(b, labels))), (pair,))
    assert "no number of boots" in needed_text(analysis, pair, Threshold(1.0, relative=False))
