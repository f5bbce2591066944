"""``lab plan --sweep``: each value of a pilot sweep planned on its own samples, at the
confidence its verdict needs in the family."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lab.stats.diagnostics import lag1_autocorrelation
from lab.stats.planning import plan_samples
from lab.stats.verdict import Threshold
from lab.store import Store
from tests.unit.test_compare_sweep import SIZES, SWEEP, lab, sweep_store

pytestmark = pytest.mark.usefixtures("no_config")


def test_each_value_is_planned_from_its_own_pilot_at_one_minus_alpha_over_m(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = sweep_store(tmp_path / "lab.db", n=8)
    code, out, err = lab(capsys, "plan", "--db", str(db), "--sweep", "--json")
    assert code == 0, err
    values = json.loads(out)["values"]
    assert [v["value"] for v in values] == [f"total_size={s}" for s in SIZES]
    assert all(v["sweep"] == SWEEP and v["family"] == 4 for v in values)
    assert values[0]["level"] == pytest.approx(1 - 0.0001 / 4)
    with Store.open(db) as store:  # the 64M value, planned by hand from its own samples
        (sweep,) = store.sweeps()
        thp, shp = sorted(store.values(run=sweep.runs[2].run_key), key=lambda s: s.variant != "thp")
    a, b = thp.values, shp.values
    sd = float(np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2))
    r = max(0.0, lag1_autocorrelation(a), lag1_autocorrelation(b))
    expected = plan_samples(sd, float(a.mean() - b.mean()), 1 - 0.0001 / 4, 0.9, r,
                            threshold=Threshold(0.01), mean=float(a.mean()))  # fmt: skip
    got = values[2]["plan"]
    assert (got["n"], got["verdict"]) == (expected.n, "faster")
    assert values[0]["plan"]["verdict"] == "equivalent"  # no difference at 4M
    assert values[2]["effect_from"] == "pilot" and values[2]["stored"] == 8


def test_a_given_effect_is_planned_at_every_value_and_small_pilots_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = sweep_store(tmp_path / "lab.db", n=2)
    code, out, _ = lab(capsys, "plan", "--db", str(db), "--sweep", SWEEP[:25])
    assert code == 0
    assert out.count("none: fewer than 3 samples per variant") == 4
    db = sweep_store(tmp_path / "more.db", n=6)
    code, out, _ = lab(capsys, "plan", "--db", str(db), "--sweep", "--effect", "3%")
    flat = " ".join(out.split())
    assert code == 0 and flat.count("(given)") == 4 and "faster" in flat
    assert "each verdict at 99.9975 % (1 − α/4 for 4 values)" in flat


def test_from_store_never_pools_a_sweep_s_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = sweep_store(tmp_path / "lab.db", n=5)
    code, _, err = lab(capsys, "plan", "--db", str(db), "--from-store")
    flat = " ".join(err.split())
    assert code == 2 and "is a sweep, whose values are never pooled" in flat
    assert "Plan a sweep with lab plan --sweep" in flat
    code, _, err = lab(capsys, "plan", "--db", str(sweep_store(tmp_path / "none.db", n=5)),
                       "--sweep", "nope")  # fmt: skip
    assert code == 2 and "no sweep 'nope'" in err
