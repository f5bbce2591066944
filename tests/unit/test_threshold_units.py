"""A zero or negative baseline, and a threshold in the metric's own unit (issue: retransmits
with A all 0 gave "ratio undefined" though Welch's interval excluded 0; negative means gave
a percentage of the wrong sign)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from lab.cli import main
from lab.core.errors import UsageError
from lab.stats.analysis import analyse
from lab.stats.series import Series
from lab.stats.verdict import Outcome, Threshold, parse_threshold
from lab.store import IterationRecord, MetricInfo, Store

ORDER = ["thp", "shp1g"]


def series(variant: str, values: np.ndarray, metric: str = "retransmits") -> Series:
    return Series("s", "iperf3", metric, "", "lower", variant, "local", f"lab-{variant}",
                  np.arange(1, values.size + 1), values)  # fmt: skip


def retransmits() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    return np.zeros(30), rng.poisson(5, 30).astype(float)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1%", Threshold(0.01)), (" 0.5 % ", Threshold(0.005)), ("0.5", Threshold(0.5, False)),
     ("2", Threshold(2.0, False)), ("0", Threshold(0.0, False))],
)  # fmt: skip
def test_a_threshold_is_a_percentage_with_its_sign_or_a_value_in_units(
    text: str, expected: Threshold
) -> None:
    assert parse_threshold(text) == expected


@pytest.mark.parametrize("text", ["1 percent", "-0.5", "nan", "inf", "%"])
def test_a_threshold_that_is_neither_is_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_threshold(text)


def test_a_zero_baseline_is_judged_on_the_difference_in_units() -> None:
    a, b = retransmits()
    welch = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.9999)
    [by_percent] = analyse([series("thp", a), series("shp1g", b)], 99.99, 0.01, order=ORDER)
    pair = by_percent.pairs[0]
    assert pair.difference.diff_ci == pytest.approx((welch.low, welch.high))
    assert pair.verdict.outcome == Outcome.INCONCLUSIVE  # a change in % of 0 is undefined
    assert "--threshold in the metric's unit" in pair.verdict.text
    [by_units] = analyse(
        [series("thp", a), series("shp1g", b)], 99.99, Threshold(0.5, False), order=ORDER
    )
    verdict = by_units.pairs[0].verdict
    assert welch.low > 0.5  # so B is worse (more retransmits) by more than 0.5, for scipy too
    assert verdict.outcome == Outcome.SLOWER
    assert "judged on the difference" in verdict.text
    assert f"{welch.low:.4g}" in verdict.text and f"{welch.high:.4g}" in verdict.text
    [wide] = analyse(
        [series("thp", a), series("shp1g", b)], 99.99, Threshold(20.0, False), order=ORDER
    )
    assert wide.pairs[0].verdict.outcome == Outcome.EQUIVALENT  # all of it within ±20


def test_negative_means_keep_the_sign_of_the_difference() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.normal(-10, 0.2, 20), rng.normal(-5, 0.2, 20)  # B higher: worse, lower is better
    [c] = analyse(
        [series("thp", a, "offset"), series("shp1g", b, "offset")], 99.99, 0.01, order=ORDER
    )
    d = c.pairs[0].difference
    assert d.percent == pytest.approx((b.mean() - a.mean()) / abs(a.mean()) * 100)
    assert d.percent > 0  # was B/A − 1 = −50 %: the wrong sign
    verdict = c.pairs[0].verdict
    assert verdict.outcome == Outcome.SLOWER
    assert "1 % of |thp" in verdict.text and f"mean| = {0.01 * abs(a.mean()):.4g}" in verdict.text


def test_compare_takes_a_threshold_in_units_for_one_metric_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = retransmits()
    db = tmp_path / "lab.db"
    with Store.open(db) as store:
        study = store.ensure_study("s")
        metrics = [MetricInfo("retransmits", "", "lower"), MetricInfo("gbps", "Gbit/s", "higher")]
        run = store.ensure_run(study, "k", "iperf3", {}, "alternate", 30, metrics)
        for variant, values in (("thp", a), ("shp1g", b)):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i + 1, 1, True, started=float(i), ended=i + 0.5,
                                metrics={"retransmits": v, "gbps": 10.0 + i % 3})
                for i, v in enumerate(values)
            ])  # fmt: skip
    assert main(["compare", "--db", str(db), "--threshold", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "2 metrics" in err and "--metric" in err
    code = main(["compare", "--db", str(db), "--threshold", "0.5", "--metric", "retransmits"])
    out = capsys.readouterr().out
    assert code == 0 and "B worse" in out and "±0.5 (metric's unit)" in out
    assert "B − A +" in out  # A's mean is 0: the change is shown in units, not in %
