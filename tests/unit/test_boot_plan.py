"""``lab plan`` from a pilot of several boots: boots × iterations per boot (lab.stats.bootplan),
checked against a brute-force search of the cost, a simulation of the planned study read
with Welch's test on boot means (written here), and the pilot's own timestamps."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from lab.cli import main
from lab.stats.bootplan import Cost, plan_boots
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")


def test_iterations_per_boot_are_the_cheapest_for_any_precision() -> None:
    """Brute force: the variance of a boot mean times the cost of a boot, over whole n."""
    for between, within, reboot, iteration in ((1.0, 4.0, 60.0, 1.0), (0.2, 9.0, 30.0, 5.0),
                                               (5.0, 1.0, 10.0, 2.0)):  # fmt: skip
        n = np.arange(1, 5000)
        cost_of_precision = (between + within / n) * (reboot + n * iteration)
        best = int(n[np.argmin(cost_of_precision)])
        plan = plan_boots(between, within, 1.0, Cost(reboot, "x"), Cost(iteration, "x"),
                          0.95, 0.8, mean=100.0)  # fmt: skip
        assert abs(plan.per_boot - best) <= 1
        assert plan.optimal == pytest.approx(math.sqrt(reboot / iteration * within / between))


def test_the_planned_boots_reach_the_verdict_at_the_planned_power() -> None:
    """Simulated studies of the plan's boots × iterations, no true boot effect known to the
    reader: Welch on the boot means tells B from A in about 80 % of them; with half the
    boots, clearly fewer."""
    between, within, delta = 1.0, 4.0, 1.5
    plan = plan_boots(between, within, delta, Cost(60, "x"), Cost(1, "x"), 0.95, 0.8,
                      mean=100.0)  # fmt: skip
    assert 2 <= plan.boots <= 50 and plan.per_boot == 15  # n* = √240 ≈ 15.5

    def power(boots: int) -> float:
        rng = np.random.default_rng(2013)
        reps = 4000
        shape = (reps, boots)
        means = []
        for shift in (0.0, -delta):  # B lower (better) by delta
            effects = rng.normal(0, math.sqrt(between), shape)
            noise = rng.normal(0, math.sqrt(within / plan.per_boot), shape)  # a boot's mean
            means.append(100 + shift + effects + noise)
        a, b = means
        va, vb = a.var(axis=1, ddof=1) / boots, b.var(axis=1, ddof=1) / boots
        df = (va + vb) ** 2 / (va**2 / (boots - 1) + vb**2 / (boots - 1))
        high = b.mean(axis=1) - a.mean(axis=1) + stats.t.ppf(0.975, df) * np.sqrt(va + vb)
        return float(np.mean(high < 0))

    assert power(plan.boots) == pytest.approx(0.8, abs=0.04)
    assert power(max(2, plan.boots // 2)) < 0.65


def pilot(
    path: Path,
    boots: int,
    per_boot: int = 10,
    reboot: float = 45.0,
    stamps: bool = True,
    warmup: str | None = None,
    key: str = "s/w",
    params: dict[str, Any] | None = None,
) -> None:
    """Two twins, ``boots`` boots of ``per_boot`` iterations of 2 s, ``reboot`` s between."""
    rng = np.random.default_rng(11)
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, key, "w", params or {}, "sync", boots * per_boot,
                               [MetricInfo("t", "s", "lower")])  # fmt: skip
        for variant, mean in (("thp", 100.0), ("shp1g", 97.0)):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            records, t, i = [], 1000.0, 0
            for j in range(boots):
                shift = rng.normal(0, 2)
                t += reboot
                for _ in range(per_boot):
                    i += 1
                    records.append(IterationRecord(
                        i, 1, True, started=t if stamps else None,
                        ended=t + 2 if stamps else None, wall=2.0, boot_id=f"{variant}{j}",
                        metrics={"t": float(mean + shift + rng.normal(0, 1))},
                    ))  # fmt: skip
                    t += 2
            store.record(run, guest, records)
        if warmup is not None:
            store.record_warmup(run, warmup)  # as `lab run --warmup` does


def plan_json(capsys: pytest.CaptureFixture[str], db: Path, *extra: str) -> dict[str, Any]:
    assert main(["plan", "--from-store", "--db", str(db), "--json", *extra]) == 0
    (found,) = json.loads(capsys.readouterr().out)["boot_plans"]
    assert isinstance(found, dict)
    return found


def test_lab_plan_prints_what_its_action_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lab plan --from-store`` renders lab.app.plan.make_plans' result and plans nothing
    itself: its JSON holds, row for row, the action's plans and boots plans for the same
    options; and the action refuses a plan without --sd or a pilot."""
    from lab.app.analyse import Selection
    from lab.app.plan import PlanRequest, make_plans
    from lab.core.config import Config
    from lab.core.context import Context
    from lab.core.errors import UsageError

    db = tmp_path / "pilot.db"
    pilot(db, 5)
    ctx = Context(config=Config())
    result = make_plans(ctx, PlanRequest(Selection(db=str(db)), from_store=True, reboot_cost=30.0))
    assert main(["plan", "--from-store", "--db", str(db), "--reboot-cost", "30", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    ((name, stored, plan),) = result.rows
    assert (name, stored) == ("w · t", 5 * 10)  # the pilot's one metric, each arm's samples
    assert [(p["name"], p["stored_fewest"], p["n"], p["sd"]) for p in printed["plans"]] == [
        (name, stored, plan.n, plan.sd)
    ]
    (boots,) = result.boot_plans
    assert boots.plan is not None and boots.plan.reboot.source == "--reboot-cost"
    (shown,) = printed["boot_plans"]
    assert (shown["plan"]["boots"], shown["plan"]["per_boot"]) == (
        boots.plan.boots,
        boots.plan.per_boot,
    )
    with pytest.raises(UsageError, match="needs --sd"):
        make_plans(ctx, PlanRequest(Selection(db=str(db))))


def test_the_reboot_cost_is_the_pilots_gap_between_boots_unless_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    pilot(db, boots=4, reboot=45.0)
    found = plan_json(capsys, db, "--effect", "3%")
    assert found["pilot_boots"] == {"thp": 4, "shp1g": 4}
    plan = found["plan"]
    assert plan["reboot_cost_s"] == pytest.approx(45.0) and plan["iteration_cost_s"] == 2.0
    assert "median of 6 reboots" in plan["reboot_cost_from"]  # 3 per twin
    ratio = plan["within_variance"] / plan["between_variance"]
    assert plan["optimal_per_boot"] == pytest.approx(math.sqrt(45.0 / 2.0 * ratio))
    given = plan_json(capsys, db, "--effect", "3%", "--reboot-cost", "4500")["plan"]
    assert given["reboot_cost_from"] == "--reboot-cost"
    assert given["optimal_per_boot"] == pytest.approx(plan["optimal_per_boot"] * 10)


def test_without_timestamps_the_reboot_costs_60_s_and_the_plan_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    pilot(db, boots=3, stamps=False)
    plan = plan_json(capsys, db, "--effect", "3%")["plan"]
    assert plan["reboot_cost_s"] == 60.0 and plan["reboot_cost_from"].startswith("assumed")
    assert main(["plan", "--from-store", "--db", str(db), "--effect", "3%"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "boots per variant" in out and "reboot cost: assumed" in out


def test_a_pilot_of_one_boot_per_arm_gets_no_boots_plan_and_is_told_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    pilot(db, boots=1, per_boot=20)
    found = plan_json(capsys, db, "--effect", "3%")
    assert found["plan"] is None and "one boot" in found["why"]
    assert main(["plan", "--from-store", "--db", str(db), "--effect", "3%"]) == 0
    assert "--reboot-every" in capsys.readouterr().out


def test_a_boots_warmup_is_part_of_the_cost_of_a_boot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    pilot(db, boots=4, reboot=45.0, warmup="3")
    found = plan_json(capsys, db, "--effect", "3%")
    assert found["pilot_per_boot"] == 7  # 10 a boot, 3 of them warm-up
    plan = found["plan"]
    assert plan["reboot_cost_s"] == pytest.approx(45.0 + 3 * 2.0)
    assert "+ 3 warm-up iterations a boot" in plan["reboot_cost_from"]


def test_the_boots_plan_of_one_run_reads_that_run_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs of the workload that differ (never pooled): with --run, the boots plan is
    that run's, as the plan's rows are; without, there is none, and the warning says why."""
    db = tmp_path / "lab.db"
    pilot(db, boots=4, key="s/w-a", params={"size": "1G"})
    pilot(db, boots=3, key="s/w-b", params={"size": "2G"})
    found = plan_json(capsys, db, "--effect", "3%", "--run", "s/w-a")
    assert found["pilot_boots"] == {"thp": 4, "shp1g": 4}
    assert main(["plan", "--from-store", "--db", str(db), "--effect", "3%", "--run", "s/w-b",
                 "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["boot_plans"][0]["pilot_boots"] == {
        "thp": 3, "shp1g": 3
    }  # fmt: skip


def test_boots_that_do_not_vary_get_the_capped_plan_not_an_overflow() -> None:
    # ICC 0: n* is infinite; before the fix math.floor(inf) raised OverflowError.
    # With no between-boot variance a boot mean of n iterations has sd √(within/n), so the
    # plan's boots x iterations must hold the iid sample size scipy's t test needs.
    within, delta = 4.0, 1.0
    plan = plan_boots(0.0, within, delta, Cost(60.0, "given"), Cost(1.0, "given"),
                      confidence=0.95, power=0.9, max_per_boot=1000)  # fmt: skip
    assert plan.capped and math.isinf(plan.optimal)
    assert plan.per_boot in (999, 1000)
    sd_mean = math.sqrt(within / plan.per_boot)
    assert plan.boots >= 2
    assert sd_mean < delta  # a boot mean this precise needs few boots


@pytest.mark.parametrize("argv", [["plan", "--debug"], ["--debug", "plan"], ["plan"]])
def test_debug_is_taken_after_the_command_as_the_crash_hint_says(argv: list[str]) -> None:
    from lab.cli import build_parser

    args, _ = build_parser(argv[0] if argv[0] != "--debug" else argv[1]).parse_known_args(argv)
    assert args.debug is ("--debug" in argv)
