"""Sample sizes checked against Cohen's tables and the closed form."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scipy import stats

from lab.cli import main
from lab.core.errors import UsageError
from lab.stats.planning import plan_samples, t_test_power


@pytest.mark.parametrize(("d", "n"), [(0.2, 394), (0.5, 64), (0.8, 26)])
def test_cohens_table_alpha_05_power_80(d: float, n: int) -> None:
    # two-sided two-sample t test, α = 0.05, power 0.8: Cohen (1988) table 2.4.1 / G*Power
    plan = plan_samples(sd=1.0, delta=d, confidence=95, power=0.8)
    assert plan.n_independent == n
    assert plan.n == n


def test_normal_approximation_closed_form() -> None:
    plan = plan_samples(sd=14.53, delta=1.47, confidence=99.99, power=0.9)
    z = stats.norm.ppf(1 - 0.0001 / 2) + stats.norm.ppf(0.9)
    assert plan.n_normal == pytest.approx(2 * z**2 * 14.53**2 / 1.47**2)
    # the study's GDB build: ~1 % of 147 s at 99.99 % needs thousands ("at least 6,000")
    assert 5000 < plan.n < 6000
    assert t_test_power(plan.n, 1.47 / 14.53, 0.9999) >= 0.9
    assert t_test_power(plan.n - 1, 1.47 / 14.53, 0.9999) < 0.9


def test_autocorrelation_inflates_by_ar1_factor() -> None:
    base = plan_samples(sd=1.0, delta=0.5, confidence=95, power=0.8)
    correlated = plan_samples(sd=1.0, delta=0.5, confidence=95, power=0.8, autocorrelation=0.5)
    assert correlated.inflation == pytest.approx(3.0)
    assert correlated.n == math.ceil(base.n_independent * 3)
    negative = plan_samples(sd=1.0, delta=0.5, confidence=95, power=0.8, autocorrelation=-0.5)
    assert negative.n == base.n  # negative correlation is not credited


def test_durations() -> None:
    plan = plan_samples(sd=1.0, delta=0.5, confidence=95, power=0.8, iteration_time=150)
    assert plan.duration_concurrent == 64 * 150
    assert plan.duration_sequential == 2 * 64 * 150


@pytest.mark.parametrize(
    "kwargs",
    [{"sd": 0, "delta": 1}, {"sd": 1, "delta": 0}, {"sd": 1, "delta": 1, "power": 1.5},
     {"sd": 1, "delta": 1, "autocorrelation": 1.0}],
)  # fmt: skip
def test_refuses_impossible_plans(kwargs: dict[str, float]) -> None:
    with pytest.raises(UsageError):
        plan_samples(**kwargs)


def test_plan_command_states_formula(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    assert main(["plan", "--sd", "1", "--effect", "0.5", "--confidence", "95", "--power", "0.8",
                 "--iteration-time", "150"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "n = 2·(z(1−α/2) + z(1−β))²·σ²/Δ²" in out.replace("\n", "")
    assert "64" in out and "2 h 40 min" in out and "5 h 20 min" in out  # 64 × 150 s, twice
    assert main(["plan", "--sd", "1", "--effect", "1%"]) == 2
    assert "--mean" in capsys.readouterr().err


def test_plan_from_store(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from tests.unit.test_compare import study_store

    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    db = study_store(tmp_path / "lab.db", n=200)
    assert main(["plan", "--from-store", "--db", str(db), "--workload", "sysbench",
                 "--effect", "1%"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    pooled = math.sqrt((4.38**2 + 4.2**2) / 2)
    expected = plan_samples(pooled, 0.01 * 131.55, 99.99, 0.9)
    assert f"{expected.n:,}" in out and "200" in out  # needed, and already stored


def test_format_duration() -> None:
    from lab.commands.plan import format_duration

    assert format_duration(59) == "59 s"
    assert format_duration(3 * 86400 + 7200 + 60) == "3 d 2 h"
    assert format_duration(None) == "–"
