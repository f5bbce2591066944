"""Sample sizes checked against Cohen's tables, the closed form, scipy's noncentral t and
a simulation that runs lab compare's own verdict on simulated samples."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from lab.cli import main
from lab.core.errors import UsageError
from lab.stats.difference import compare
from lab.stats.planning import (
    Goal,
    equivalence_power,
    plan_samples,
    superiority_power,
    t_test_power,
)
from lab.stats.rulepower import Scenario, verdict_shares
from lab.stats.series import Direction
from lab.stats.verdict import Outcome, decide


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
    # compare's rule (Welch, the difference of means at threshold 0) is the t test's here:
    # the planned n is its n to within the simulation's ±0.01 in P, a few samples
    assert t_test_power(plan.n + 30, 1.47 / 14.53, 0.9999) >= 0.9
    assert t_test_power(plan.n - 30, 1.47 / 14.53, 0.9999) < 0.9


def test_autocorrelation_costs_more_than_the_ar1_factor_under_batch_means() -> None:
    # (1+r)/(1−r) = 3 is the AR(1) loss of information; batch means' few degrees of freedom
    # cost more (tests/unit/test_plan_rule.py checks P at the planned n by simulation)
    base = plan_samples(sd=1.0, delta=0.5, confidence=95, power=0.8)
    correlated = plan_samples(sd=1.0, delta=0.5, confidence=95, power=0.8, autocorrelation=0.5)
    assert correlated.inflation > 3.0
    assert correlated.n == round(base.n_independent * correlated.inflation)
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
                 "--iteration-time", "150", "--threshold", "0%"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "lab compare's own rule" in " ".join(out.split())
    assert "64" in out and "2 h 40 min" in out and "5 h 20 min" in out  # 64 × 150 s, twice
    assert 'planned for "faster"' in out
    assert main(["plan", "--sd", "1", "--effect", "1%"]) == 2
    assert "--mean" in capsys.readouterr().err
    # the threshold is a percentage of the mean: an absolute effect needs the mean too
    assert main(["plan", "--sd", "1", "--effect", "0.5"]) == 2
    assert "--mean" in capsys.readouterr().err


def test_plan_from_store(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from tests.unit.test_compare import study_store

    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    db = study_store(tmp_path / "lab.db", n=200)
    assert main(["plan", "--from-store", "--db", str(db), "--workload", "sysbench",
                 "--effect", "3%"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    pooled = math.sqrt((4.38**2 + 4.2**2) / 2)
    expected = plan_samples(pooled, 0.03 * 131.55, 99.99, 0.9, threshold=0.01, mean=131.55)
    assert f"{expected.n:,}" in out and "200" in out  # needed, and already stored
    # 1 % is lab compare's threshold itself: no n makes it "faster", and the row says which
    assert main(["plan", "--from-store", "--db", str(db), "--workload", "sysbench",
                 "--effect", "1%"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "sysbench · total_time_s" in err and "cannot reach" in err and '"faster"' in err


def test_format_duration() -> None:
    from lab.commands.plan import format_duration

    assert format_duration(59) == "59 s"
    assert format_duration(3 * 86400 + 7200 + 60) == "3 d 2 h"
    assert format_duration(None) == "–"


# --- the verdict's question (issue 19, item 2.7) ---


def test_the_issues_example_cannot_reach_faster(capsys: pytest.CaptureFixture[str]) -> None:
    # effect 1 %, threshold 1 %, sd 2 %: the n that tells 1 % from 0 (218) gives P(faster)
    # of the central t's tail, α/2, and no other n does better
    assert abs(plan_samples(2.0, 1.0).n - 218) <= 3  # telling it from 0, threshold 0
    df = 2 * 218 - 2
    at_218 = superiority_power(218, 1.0, 1.0, 2.0, 0.9999)
    assert at_218 == pytest.approx(stats.t.sf(stats.t.ppf(1 - 0.0001 / 2, df), df))
    assert at_218 == pytest.approx(0.0001 / 2)
    for goal in (None, Goal.SUPERIORITY):
        with pytest.raises(UsageError, match=r'cannot reach .*"faster"') as caught:
            plan_samples(2.0, 1.0, threshold=0.01, mean=100.0, goal=goal)
        assert "--goal equivalence" in str(caught.value.hint)
    assert main(["plan", "--sd", "2", "--mean", "100", "--effect", "1%"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach" in err and '"faster"' in err and "1 % of the mean 100" in err


@pytest.mark.parametrize(
    ("delta", "goal"),
    [(0.5, Goal.SUPERIORITY), (1.5, Goal.EQUIVALENCE), (1.0, Goal.EQUIVALENCE),
     (0.0, None)],  # at threshold 0, 0 is "at the threshold"
)  # fmt: skip
def test_refuses_verdicts_no_n_reaches(delta: float, goal: Goal | None) -> None:
    threshold = 0.0 if goal is None else 0.01
    with pytest.raises(UsageError, match="cannot reach"):
        plan_samples(2.0, delta, 95, threshold=threshold, mean=100.0, goal=goal)


def test_the_goal_follows_the_effect_against_the_threshold() -> None:
    beyond = plan_samples(2.0, 3.0, 95, threshold=0.01, mean=100.0)
    assert (beyond.goal, beyond.verdict, beyond.derived) == (Goal.SUPERIORITY, "faster", True)
    assert plan_samples(2.0, -3.0, 95, threshold=0.01, mean=100.0).verdict == "slower"
    within = plan_samples(2.0, 0.5, 95, threshold=0.01, mean=100.0)
    assert (within.goal, within.verdict) == (Goal.EQUIVALENCE, "equivalent")
    asked = plan_samples(2.0, 0.5, 95, threshold=0.01, mean=100.0, goal=Goal.EQUIVALENCE)
    assert not asked.derived and asked.n == within.n


@pytest.mark.parametrize(
    ("delta", "threshold", "confidence", "power"),
    [(3.0, 0.01, 95, 0.9), (1.2, 0.01, 99.99, 0.8), (0.0, 0.01, 95, 0.9), (0.5, 0.01, 99.99, 0.9),
     (0.9, 0.01, 95, 0.5), (8.0, 0.01, 95, 0.8)],
)  # fmt: skip
def test_the_planned_n_is_the_smallest_that_reaches_the_power(
    delta: float, threshold: float, confidence: float, power: float
) -> None:
    plan = plan_samples(2.0, delta, confidence, power, threshold=threshold, mean=100.0)
    scenario = Scenario(100.0, delta, 2.0, 0.0, plan.bound, 0.01, plan.confidence)
    wanted = "equivalent" if plan.goal == Goal.EQUIVALENCE else "faster"
    at = [verdict_shares(k, scenario)[wanted] for k in (plan.n - 1, plan.n)]
    print(f"{plan.verdict}: P at n − 1 = {plan.n - 1}: {at[0]:.4f}, at n: {at[1]:.4f}")
    assert at[1] >= power
    assert at[0] < power or plan.n == 2


@pytest.mark.parametrize(
    ("n", "delta", "bound", "confidence"),
    [(23, 3.0, 1.0, 0.95), (5, 3.0, 1.0, 0.95), (218, 1.0, 0.0, 0.9999), (600, 1.5, 1.0, 0.9999)],
)
def test_superiority_power_is_the_integral_over_the_sample_sd(
    n: int, delta: float, bound: float, confidence: float
) -> None:
    # independent of the noncentral t: P(Δ̂ − c·s·√(2/n) > θ) with Δ̂ normal and
    # s² ~ σ²·χ²(ν)/ν, integrated over the chi² variable
    sd, df = 2.0, 2 * n - 2
    spread = sd * math.sqrt(2 / n)
    crit = stats.t.ppf(0.5 + confidence / 2, df)

    def given(u: float) -> float:
        half = crit * spread * math.sqrt(u / df)
        return float(stats.norm.sf((bound + half - delta) / spread) * stats.chi2.pdf(u, df))

    spread_u = math.sqrt(2 * df)
    reference, _ = integrate.quad(given, max(0, df - 40 * spread_u), df + 40 * spread_u,
                                  points=[df], limit=200)  # fmt: skip
    assert superiority_power(n, delta, bound, sd, confidence) == pytest.approx(reference, rel=1e-6)


@pytest.mark.parametrize(
    ("n", "delta", "confidence"),
    [(105, 0.0, 0.95), (52, 0.5, 0.95), (860, 0.5, 0.9999), (40, -0.3, 0.9)],
)
def test_equivalence_power_is_two_noncentral_t_when_the_interval_fits(
    n: int, delta: float, confidence: float
) -> None:
    # P(T₁ > c) + P(T₂ < −c) − 1 with T₁, T₂ noncentral t about ±θ is the TOST power less
    # P(neither), which is nil once the interval is narrower than ±θ nearly always
    sd, bound, df = 2.0, 1.0, 2 * n - 2
    spread = sd * math.sqrt(2 / n)
    crit = stats.t.ppf(0.5 + confidence / 2, df)
    two_t = (stats.nct.sf(crit, df, (delta + bound) / spread)
             + stats.nct.cdf(-crit, df, (delta - bound) / spread) - 1)  # fmt: skip
    assert equivalence_power(n, delta, bound, sd, confidence) == pytest.approx(two_t, abs=2e-6)


def test_equivalence_power_against_a_simulated_tost() -> None:
    # at n = 4 the interval is often wider than ±θ, where the two-t formula is off: draw the
    # estimated difference and the pooled sd directly (400,000 times) instead
    n, sd, bound, delta, confidence = 4, 2.0, 3.0, 0.0, 0.9
    rng = np.random.default_rng(7)
    draws = 400_000
    df = 2 * n - 2
    estimate = rng.normal(delta, sd * math.sqrt(2 / n), draws)
    s = sd * np.sqrt(rng.chisquare(df, draws) / df)
    half = stats.t.ppf(0.5 + confidence / 2, df) * s * math.sqrt(2 / n)
    rate = float(np.mean((estimate - half > -bound) & (estimate + half < bound)))
    exact = equivalence_power(n, delta, bound, sd, confidence)
    tolerance = 4 * math.sqrt(exact * (1 - exact) / draws)
    print(f"TOST n={n}: simulated {rate:.4f}, exact {exact:.4f} ± {tolerance:.4f}")
    assert rate == pytest.approx(exact, abs=tolerance)
    spread = sd * math.sqrt(2 / n)
    crit = stats.t.ppf(0.5 + confidence / 2, df)
    two_t = (stats.nct.sf(crit, df, (delta + bound) / spread)
             + stats.nct.cdf(-crit, df, (delta - bound) / spread) - 1)  # fmt: skip
    assert exact - two_t > 5 * tolerance  # the case the two-t formula gets wrong


STUDIES = 600  # simulated studies per n: 1–2.5 ms each through compare and decide


def verdict_rate(
    n: int, change: float, direction: Direction, threshold: float, confidence: float, seed: int
) -> tuple[float, dict[Outcome, int]]:
    """The share of simulated studies (A ~ N(100, 2), B ~ N(100·(1 + change), 2), n a side)
    whose verdict by lab compare's own compare() and decide() is each outcome."""
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys(Outcome, 0)
    for _ in range(STUDIES):
        a = rng.normal(100.0, 2.0, n)
        b = rng.normal(100.0 * (1 + change), 2.0, n)
        diff = compare(a, b, confidence, resamples=2)  # the median's bootstrap plays no part
        verdict = decide(diff.percent_ci, direction, threshold, confidence=confidence,
                         diff_ci=diff.diff_ci)  # fmt: skip
        counts[verdict.outcome] += 1
    return STUDIES, counts


def check_by_simulation(
    plan_n: int, power: float, wanted: Outcome, rates: dict[int, float]
) -> None:
    tolerance = 3 * math.sqrt(power * (1 - power) / STUDIES)
    print(f"P({wanted}) simulated: " + ", ".join(f"n={k}: {v:.3f}" for k, v in rates.items())
          + f"; planned n={plan_n}, power {power} − tolerance {tolerance:.3f}")  # fmt: skip
    assert rates[plan_n] >= power - tolerance
    assert all(v < power - 2 * tolerance for k, v in rates.items() if k < plan_n)


def test_planned_n_reaches_faster_in_simulated_studies() -> None:
    # B 3 % faster (a time: lower is better), threshold 1 %, sd 2 %, 95 %, power 0.9
    plan = plan_samples(2.0, 3.0, 95, 0.9, threshold=0.01, mean=100.0)
    assert plan.verdict == "faster" and plan.n == 22
    rates = {}
    for k in (plan.n // 2, plan.n):
        total, counts = verdict_rate(k, -0.03, "lower", 0.01, 0.95, seed=k)
        rates[k] = counts[Outcome.FASTER] / total
        assert counts[Outcome.SLOWER] == 0
    check_by_simulation(plan.n, 0.9, Outcome.FASTER, rates)
    predicted = dict(plan.curve)[round(plan.n / 2)]
    assert rates[plan.n // 2] == pytest.approx(predicted, abs=0.05)


def test_planned_n_reaches_equivalent_in_simulated_studies() -> None:
    # no true change (a throughput: higher is better), threshold 1 %, sd 2 %, 95 %, power 0.9
    plan = plan_samples(2.0, 0.0, 95, 0.9, threshold=0.01, mean=100.0)
    assert plan.verdict == "equivalent" and plan.n == 105
    rates = {}
    for k in (plan.n // 2, plan.n):
        total, counts = verdict_rate(k, 0.0, "higher", 0.01, 0.95, seed=k)
        rates[k] = counts[Outcome.EQUIVALENT] / total
    check_by_simulation(plan.n, 0.9, Outcome.EQUIVALENT, rates)


def test_power_curve_rises_through_the_asked_power() -> None:
    plan = plan_samples(2.0, 3.0, 99.99, 0.9, threshold=0.01, mean=100.0, autocorrelation=0.5)
    ns = [k for k, _ in plan.curve]
    assert ns == [round(plan.n * f) for f in (0.25, 0.5, 1, 2)]
    powers = [p for _, p in plan.curve]
    assert powers == sorted(powers) and powers[1] < 0.9 <= powers[2]
    # the curve is in samples collected, under compare's rule with the batch means it uses
    scenario = Scenario(100.0, 3.0, 2.0, 0.5, 1.0, 0.01, 0.9999)
    assert powers[2] == verdict_shares(plan.n, scenario)["faster"]
    assert plan.n_from_zero is not None and plan.n_from_zero < plan.n


def test_a_threshold_in_units_is_the_bound_itself() -> None:
    from lab.stats.verdict import Threshold

    by_percent = plan_samples(2.0, 5.0, 0.95, 0.9, threshold=0.01, mean=100.0)
    by_units = plan_samples(2.0, 5.0, 0.95, 0.9, threshold=Threshold(1.0, False))
    assert by_units.bound == by_percent.bound == pytest.approx(1.0)
    assert by_units.n == by_percent.n
    assert math.isnan(by_units.threshold)  # no mean: no percentage to show
    with pytest.raises(UsageError, match="cannot reach"):
        plan_samples(2.0, 0.5, 0.95, 0.9, threshold=Threshold(1.0, False), goal=Goal.SUPERIORITY)


def test_a_metric_no_plan_can_be_made_for_is_named_and_the_others_planned(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 40 §1: a constant perf counter of a real pilot stopped the whole plan with
    # "null · perf.cpu_migrations: cannot plan with sd 0.0 and effect 0.0"
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    rows = ["variant,workload,metric,iteration,value,direction"]
    for variant, shift in (("thp", 0.0), ("shp1g", 0.5)):
        for i in range(1, 31):
            rows.append(f"{variant},w,wall_s,{i},{10 + shift + (i * 7 % 11) / 10},lower")
            rows.append(f"{variant},w,migrations,{i},0,lower")
    (tmp_path / "pilot.csv").write_text("\n".join(rows) + "\n")
    db = str(tmp_path / "lab.db")
    assert main(["import", str(tmp_path / "pilot.csv"), "--db", db]) == 0
    capsys.readouterr()
    assert main(["plan", "--from-store", "--db", db]) == 0
    out, err = capsys.readouterr()
    table = out.split("boots plan of")[0]  # the samples plan; the boots plans follow it
    assert "w · wall_s" in table and "w · migrations" not in table
    (line,) = [line for line in err.splitlines() if "not planned" in line]
    assert "w · migrations (cannot plan with sd 0" in line
    assert main(["plan", "--from-store", "--db", db, "--metric", "migrations"]) == 2
    assert "no metric can be planned: w · migrations" in capsys.readouterr().err
