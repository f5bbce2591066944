"""The boots plan with AR(1) iterations within a boot (issue 40): the variance inflation of a
boot mean against numpy's covariance of AR(1) means, r and the components read from a pilot
against simulated pilots, n* against a brute-force search, the metric's direction kept, and
the planned study's power against a simulation of whole AR(1) series judged with Welch on
the boot means (written here)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import signal, stats

from lab.stats.bootplan import Cost, optimal_per_boot, plan_boots
from lab.stats.boots import components
from lab.stats.planning import plan_samples
from lab.stats.withinboot import boot_pilot, corrected, expected_ratio, inflation, lag1_sums
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")


def ar1(rng: np.random.Generator, shape: tuple[int, int], r: float, sd: float) -> np.ndarray:
    """Rows of a stationary AR(1) series of variance sd² and lag-1 correlation r."""
    noise = rng.standard_normal(shape)
    start = noise[:, :1] * sd
    rest = signal.lfilter([sd * math.sqrt(1 - r * r)], [1.0, -r], noise[:, 1:], axis=1,
                          zi=r * start)[0]  # fmt: skip
    return np.concatenate([start, rest], axis=1)


def boots_of(
    rng: np.random.Generator, boots: int, per_boot: int, between: float, within: float, r: float
) -> tuple[np.ndarray, np.ndarray]:
    """One arm: boot effects of variance ``between``, AR(1) iterations of ``within``."""
    x = rng.normal(0, math.sqrt(between), (boots, 1)) + ar1(rng, (boots, per_boot), r,
                                                           math.sqrt(within))  # fmt: skip
    return (100 + x).ravel(), np.repeat(np.arange(boots), per_boot)


@pytest.mark.parametrize("r", [0.0, 0.3, 0.5, 0.9])
@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_the_inflation_is_the_variance_of_an_ar1_mean(n: int, r: float) -> None:
    """Against 1ᵀΣ1/n² with Σ = r^|i−j| built by numpy, and the sum the issue writes out."""
    lags = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    cov = r**lags
    reference = n * cov.sum() / n**2
    written = 1 + 2 * sum((1 - k / n) * r**k for k in range(1, n))
    assert float(inflation(n, r)) == pytest.approx(reference, rel=1e-12)
    assert float(inflation(n, r)) == pytest.approx(written, rel=1e-12)


def test_the_inflation_matches_simulated_boot_means() -> None:
    rng = np.random.default_rng(40)
    means = ar1(rng, (40_000, 20), 0.5, 2.0).mean(axis=1)
    assert means.var() == pytest.approx(4.0 / 20 * float(inflation(20, 0.5)), rel=0.03)
    assert means.var() > 4.0 / 20 * 2.4  # r left out would say 0.2, not about 0.52


@pytest.mark.parametrize(("r", "m"), [(0.0, 5), (0.5, 10), (0.8, 30)])
def test_the_expected_lag1_ratio_is_that_of_simulated_boots(r: float, m: int) -> None:
    rng = np.random.default_rng(int(r * 10) + m)
    x = ar1(rng, (20_000, m), r, 1.0)
    d = x - x.mean(axis=1, keepdims=True)
    simulated = float(np.sum(d[:, :-1] * d[:, 1:]) / np.sum(d * d))
    assert expected_ratio(r, np.array([m])) == pytest.approx(simulated, abs=0.005)


def test_r_is_read_within_boots_not_across_their_edges() -> None:
    """A large boot effect, no correlation within boots: the lag-1 of the whole series sees
    the boots, the pooled one within them does not; and r = 0.5 in boots of 10 (whose raw
    ratio is about 0.27) is read as 0.5."""
    rng = np.random.default_rng(3)
    values, boots = boots_of(rng, 200, 10, 9.0, 1.0, 0.0)
    d = values - values.mean()
    across = float(np.dot(d[:-1], d[1:]) / np.dot(d, d))
    assert across > 0.7
    assert boot_pilot([(values, boots)]).r < 0.05
    found = [boot_pilot([boots_of(rng, 30, 10, 1.0, 4.0, 0.5)]) for _ in range(40)]
    assert np.mean([f.r for f in found]) == pytest.approx(0.5, abs=0.04)
    assert np.mean([f.observed for f in found]) == pytest.approx(0.2756, abs=0.04)
    # labels as text (as lab compare's store gives them) group the same
    text = lag1_sums(values, np.array([f"boot{b}" for b in boots]))
    assert text.products == pytest.approx(lag1_sums(values, boots).products)


def test_the_components_under_ar1_are_the_true_ones_where_the_anovas_are_not() -> None:
    rng = np.random.default_rng(5)
    arms = [boots_of(rng, 400, 10, 1.0, 4.0, 0.5) for _ in range(2)]
    found = boot_pilot(arms)
    assert found.between == pytest.approx(1.0, abs=0.2)
    assert found.within == pytest.approx(4.0, rel=0.05)
    anova = [components(*a) for a in arms]
    # E[MSW] = σ²·(m − f(m))/(m − 1) = 4·0.822, and the between part takes the rest
    assert np.mean([c.within for c in anova]) == pytest.approx(4 * (10 - 2.6004) / 9, rel=0.05)
    assert np.mean([c.between for c in anova]) > 1.45
    # at r = 0 the correction is none: the ANOVA's own components, boots of unequal sizes too
    values, boots = boots_of(rng, 8, 12, 1.0, 4.0, 0.0)
    keep = np.ones(values.size, dtype=bool)
    keep[[0, 1, 2, 30, 50]] = False
    c = components(values[keep], boots[keep])
    assert corrected(c, 0.0)[:2] == pytest.approx((c.between, c.within))


@pytest.mark.parametrize(("between", "within", "r"), [(1.0, 4.0, 0.5), (0.2, 9.0, 0.8),
                                                      (5.0, 1.0, 0.3)])  # fmt: skip
def test_iterations_per_boot_are_the_cheapest_with_ar1(between: float, within: float,
                                                       r: float) -> None:  # fmt: skip
    """Brute force over whole n of the variance of a boot mean (numpy's AR(1) covariance)
    times a boot's cost; and the plan's n is within one of it."""
    reboot, iteration = 60.0, 2.0
    n = np.arange(1, 400)
    variance = [between + within * (r ** np.abs(np.subtract.outer(np.arange(k), np.arange(k))))
                .sum() / k**2 for k in n]  # fmt: skip
    best = int(n[np.argmin(np.array(variance) * (reboot + n * iteration))])
    optimal = optimal_per_boot(between, within, reboot, iteration, r)
    assert abs(optimal - best) <= 1
    plan = plan_boots(between, within, 1.0, Cost(reboot, "x"), Cost(iteration, "x"), 0.95, 0.8,
                      mean=100.0, autocorrelation=r)  # fmt: skip
    assert abs(plan.per_boot - best) <= 1


def test_the_plan_keeps_the_metrics_direction() -> None:
    """A 30 % change against a 10 % threshold: a ratio of 0.7 (lower is better) is told from
    1 sooner than one of 1.3 (higher is better), and each boots plan is the iteration plan of
    its direction for the sd of its boot mean."""
    found = {}
    for direction in ("lower", "higher"):
        plan = plan_boots(50.0, 200.0, 30.0, Cost(60, "x"), Cost(2, "x"), 0.95, 0.9,
                          threshold=0.1, mean=100.0, direction=direction)  # fmt: skip
        reference = plan_samples(plan.boot_sd, 30.0, 0.95, 0.9, threshold=0.1, mean=100.0,
                                 direction=direction)  # fmt: skip
        assert plan.direction == direction and plan.boots == max(2, reference.n)
        found[direction] = plan.boots
    assert found["lower"] != found["higher"]


def welch_power(
    boots: int, per_boot: int, between: float, within: float, r: float, delta: float
) -> float:
    """Share of 3,000 simulated studies (whole AR(1) series, boot effects) whose 95 % Welch
    interval on boot means lies below 0: B lower, so better, by ``delta``."""
    rng = np.random.default_rng(2026)
    studies = 3000
    means = []
    for shift in (0.0, -delta):
        x = ar1(rng, (studies * boots, per_boot), r, math.sqrt(within)).mean(axis=1)
        effect = rng.normal(0, math.sqrt(between), studies * boots)
        means.append((100 + shift + effect + x).reshape(studies, boots))
    a, b = means
    va, vb = a.var(axis=1, ddof=1) / boots, b.var(axis=1, ddof=1) / boots
    df = (va + vb) ** 2 / (va**2 / (boots - 1) + vb**2 / (boots - 1))
    high = b.mean(axis=1) - a.mean(axis=1) + stats.t.ppf(0.975, df) * np.sqrt(va + vb)
    return float(np.mean(high < 0))


def test_the_planned_boots_deliver_the_power_with_ar1_where_the_old_plan_did_not() -> None:
    between, within, r, delta = 0.8, 3.2, 0.7, 2.0  # ICC 0.2
    new = plan_boots(between, within, delta, Cost(60, "x"), Cost(2, "x"), 0.95, 0.8,
                     mean=100.0, autocorrelation=r)  # fmt: skip
    old = plan_boots(between, within, delta, Cost(60, "x"), Cost(2, "x"), 0.95, 0.8,
                     mean=100.0)  # what the plan was before issue 40: r left out  # fmt: skip
    assert welch_power(new.boots, new.per_boot, between, within, r, delta) >= 0.8 - 0.03
    assert welch_power(old.boots, old.per_boot, between, within, r, delta) < 0.8 - 0.1


def ar1_pilot(path: Path, direction: str, r: float) -> None:
    """Two twins of 12 boots × 30 iterations, AR(1) r within each boot, a boot effect."""
    rng = np.random.default_rng(12)
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, "sync", 12 * 30,
                               [MetricInfo("t", "s", direction)])  # fmt: skip
        for variant, mean in (("thp", 100.0), ("shp1g", 97.0)):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            values, boots = boots_of(rng, 12, 30, 1.0, 4.0, r)
            store.record(run, guest, [
                IterationRecord(i, 1, True, started=1000.0 + 50 * i, ended=1002.0 + 50 * i,
                                wall=2.0, boot_id=f"{variant}{b}",
                                metrics={"t": float(v - 100 + mean)})
                for i, (v, b) in enumerate(zip(values, boots, strict=True), 1)
            ])  # fmt: skip


def test_lab_plan_reads_r_within_the_pilots_boots_and_its_direction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """lab plan's boots action on the pilot, and the command's JSON and table of it (the
    whole command also plans the iterations, seconds of simulation for this pilot)."""
    from lab.app.analyse import Selection
    from lab.app.plan import BootPlanRequest, plan_boots_from_store
    from lab.commands.plan import _print_boot_plans, plans_json
    from lab.core.config import Config
    from lab.core.context import Context
    from lab.stats.verdict import Threshold

    db = tmp_path / "lab.db"
    ar1_pilot(db, "higher", 0.6)
    ctx = Context(config=Config())
    request = BootPlanRequest(Selection(db=str(db)), Threshold(0.01), "3%", reboot_cost=60.0,
                              iteration_cost=2.0)  # fmt: skip
    found = plan_boots_from_store(ctx, request)
    (plan,) = json.loads(plans_json([], "", found))["boot_plans"]
    plan = plan["plan"]
    assert plan["direction"] == "higher"
    assert plan["autocorrelation"] == pytest.approx(0.6, abs=0.12)
    assert plan["boot_mean_sd"] == pytest.approx(math.sqrt(
        plan["between_variance"] + plan["within_variance"] / plan["per_boot"]
        * float(inflation(plan["per_boot"], plan["autocorrelation"]))
    ))  # fmt: skip
    _print_boot_plans(ctx, found)
    assert "lag-1 r within boots" in capsys.readouterr().out
