"""The answer first: `lab compare`'s summary table, and --fail-on worse for pipelines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

TIME = MetricInfo("time_s", "s", "lower")
RATE = MetricInfo("rate", "MiB/s", "higher")


def make(path: Path, b_slower: bool) -> None:
    """thp (A) at 10 s; shp1g (B) at 12 s or 8 s; rates the other way round."""
    rng = np.random.default_rng(3)
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "k", "w", {}, "concurrent", 30, [TIME, RATE])
        for name, variant, mean in (
            ("lab-thp", "thp", 10.0),
            ("lab-shp1g", "shp1g", 12.0 if b_slower else 8.0),
        ):
            guest = store.ensure_guest(study, name, variant)
            values = rng.normal(mean, 0.1, 30)
            store.record(run, guest, [
                IterationRecord(i + 1, 1, True, started=float(i), ended=i + 0.5,
                                metrics={"time_s": v, "rate": 100.0 / v})
                for i, v in enumerate(values)
            ])  # fmt: skip


def compare(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["compare", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_summary_comes_alone_unless_asked_for_detail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    make(db, b_slower=False)
    code, out, err = compare(capsys, "--db", str(db))
    assert code == 0
    lines = [line for line in out.splitlines() if "│" in line]
    time_row = next(line for line in lines if "time_s" in line)
    rate_row = next(line for line in lines if " rate " in line)
    assert "(n=30)" in time_row and "thp 10.0" in time_row and "shp1g 7.9" in time_row
    assert "B better" in time_row and "B better" in rate_row  # both in the metric's sense
    assert "-20." in time_row and "+25." in rate_row  # B's change in percent
    assert "Margin" not in out and "--detail" in err  # no full tables, and how to get them
    code, out, _ = compare(capsys, "--db", str(db), "--detail")
    assert code == 0 and out.index("Summary") < out.index("Verdict")


def test_fail_on_worse_exits_9_naming_the_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    better, worse = tmp_path / "better.db", tmp_path / "worse.db"
    make(better, b_slower=False)
    make(worse, b_slower=True)
    assert compare(capsys, "--db", str(better), "--fail-on", "worse")[0] == 0
    code, out, err = compare(capsys, "--db", str(worse), "--fail-on", "worse")
    assert code == 9
    assert "B worse" in out
    assert "B is worse than A in 2 verdict(s): w · rate" in err and "w · time_s" in err


def test_a_run_its_rule_stopped_is_summarised_by_the_interval_it_stopped_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lab.stats.stopping import StoppedInterval

    db = tmp_path / "lab.db"
    make(db, b_slower=False)
    # B 20 % faster by Welch; the (made-up, wide) interval the rule stopped on straddles 1 %
    stop = StoppedInterval("time_s", "Lai's t confidence sequence at 99.99 %, tuned for n=15",
                           "30 pairs", 0.9999, True, -2.0, (-4.0, 0.5), -20.0, (-40.0, 5.0),
                           "after 30 pairs: …")  # fmt: skip
    with Store.open(db) as store:
        store.record_stop(store.runs()[0].id, stop.reason, stop.to_json())
    code, out, _ = compare(capsys, "--db", str(db))
    assert code == 0
    time_row = next(line for line in out.splitlines() if "time_s" in line and "│" in line)
    assert "-20.00 % [-40.00, +5.00] *" in time_row and "inconclusive" in time_row
    assert "stopped early" in out and "anytime-valid" in out
    rate_row = next(line for line in out.splitlines() if " rate " in line and "│" in line)
    assert "B better" in rate_row  # the metric the rule did not read keeps its verdict
