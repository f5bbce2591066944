"""A sweep's runs made by one command (lab.run.sweep), with the real runner run as local
processes instead of in guests, as tests/unit/test_controller.py does for one run: the order
of the iterations (the store's start and end times prove it) and the resume after a kill."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lab.core.config import Config
from lab.core.context import Context
from lab.core.sweeps import Axis, points
from lab.guests.labstate import GuestRecord, LabState
from lab.inguest.spec import Spec
from lab.run.controller import Controller, RunPlan, run_key
from lab.run.sweep import SweepRun, record_sweep, sweep_key
from lab.store import Store
from tests.unit.test_controller import FastClock, Metric, PerGuestShell

GUESTS = ("lab-thp", "lab-shp1g")
AXIS = Axis("pause", ("0.02", "0.04", "0.06"))


@dataclass
class PauseWorkload:
    """Sleeps for its ``pause`` parameter: each value of the sweep a command of its own."""

    name: str = "pause"
    metrics: list[Metric] = field(default_factory=lambda: [Metric("wall_s", "s", "lower")])

    def spec(self, params: dict[str, Any], guest: Any) -> Spec:
        return Spec(self.name, ["sleep", str(params["pause"])], metrics_from={"wall_s": "wall_s"})

    def metrics_for(self, params: dict[str, Any]) -> list[Metric]:
        return self.metrics


@dataclass
class Lab:
    ctx: Context
    state: LabState
    records: list[GuestRecord]
    runner_dir: str


def lab(tmp_path: Path) -> Lab:
    ctx = Context(config=Config(state_dir=str(tmp_path / "state")), clock=FastClock())
    ctx.__dict__["libvirt"] = None  # no hypervisor: domain XML is optional context
    records = [
        GuestRecord(g, g.removeprefix("lab-"), f"52:54:00:00:00:0{i}", str(tmp_path), [i], 0, "",
                    ip="127.0.0.1", facts={"cpus": 1})
        for i, g in enumerate(GUESTS)
    ]  # fmt: skip
    state = LabState(records, "qemu", "test", "img", "h", "lab", "127.0.0.1", [0], 0.0)
    return Lab(ctx, state, records, str(tmp_path / "runner"))


def controllers(
    at: Lab, store: Store, n: int, schedule: str, order: str
) -> tuple[list[Controller], str]:
    """One controller per value, as `lab run --sweep` makes them, and the sweep's key."""
    key = sweep_key("s", "pause", {}, [AXIS], GUESTS, n, schedule, order)
    made = []
    for point in points([AXIS]):
        plan = RunPlan("s", PauseWorkload(), dict(point), n, schedule, 10, poll_interval=0.05,
                       runner_dir=at.runner_dir, counters="none", sweep=key)  # fmt: skip
        made.append(Controller(at.ctx, store, at.state, at.records, plan,
                               lambda r: PerGuestShell(r.name, at.runner_dir)))  # fmt: skip
    runs = [(c.run_id, dict(p)) for c, p in zip(made, points([AXIS]), strict=True)]
    record_sweep(store, made[0].study_id, key, "pause", [AXIS], order, runs)
    return made, key


def timeline(store: Store, made: list[Controller]) -> list[tuple[float, float, int, int]]:
    """(started, ended, iteration, value) of every successful attempt, by start time."""
    rows = []
    for value, c in enumerate(made):
        for started, ended, iteration in store._conn.execute(
            "SELECT started, ended, iteration FROM iteration WHERE run_id=? AND ok=1", (c.run_id,)
        ):
            rows.append((started, ended, iteration, value))
    return sorted(rows)


def done(store: Store, made: list[Controller]) -> list[dict[str, list[int]]]:
    return [
        {g.record.name: sorted(store.completed_iterations(c.run_id, g.guest_id)) for g in c.guests}
        for c in made
    ]


def steps_in_order(rows: list[tuple[float, float, int, int]], key: Any) -> None:
    """Every attempt of a step (by ``key``) starts after every attempt of the step before it
    ended, on both guests: the steps ran one after the other in ``key``'s order."""
    steps = sorted({key(r) for r in rows})
    for earlier, later in itertools.pairwise(steps):
        ended = max(r[1] for r in rows if key(r) == earlier)
        started = min(r[0] for r in rows if key(r) == later)
        assert started >= ended, f"{later} started before {earlier} ended"


@pytest.mark.parametrize("schedule", ["concurrent", "sync"])
def test_interleaved_runs_iteration_i_of_every_value_before_i_plus_1_of_any(
    tmp_path: Path, schedule: str
) -> None:
    at = lab(tmp_path)
    with Store.open(tmp_path / "lab.db") as store:
        made, key = controllers(at, store, 3, schedule, "interleaved")
        SweepRun(made, "interleaved", 3).run()
        assert done(store, made) == [{g: [1, 2, 3] for g in GUESTS}] * 3
        rows = timeline(store, made)
        steps_in_order(rows, key=lambda r: (r[2], r[3]))  # iteration, then value
        assert [r[3] for r in rows[:6]] == [0, 0, 1, 1, 2, 2]  # round 1: every value
        # one run per value, each with its own key and parameters, found again as one sweep
        assert len({c.key for c in made}) == 3 and all(c.plan.sweep == key for c in made)
        (sweep,) = store.sweeps()
        assert [r.run_key for r in sweep.runs] == [c.key for c in made]
        assert [r.point for r in sweep.runs] == [{"pause": v} for v in AXIS.values]
        assert {tuple(r.params.items()) for r in store.runs()} == {
            (("pause", v),) for v in AXIS.values
        }


def test_blocked_finishes_one_value_before_the_next(tmp_path: Path) -> None:
    at = lab(tmp_path)
    with Store.open(tmp_path / "lab.db") as store:
        made, _ = controllers(at, store, 2, "alternate", "blocked")
        SweepRun(made, "blocked", 2).run()
        assert done(store, made) == [{g: [1, 2] for g in GUESTS}] * 3
        steps_in_order(timeline(store, made), key=lambda r: (r[3], r[2]))  # value, then iteration


def test_a_killed_sweep_resumes_to_exactly_n_per_value_per_guest(tmp_path: Path) -> None:
    at = lab(tmp_path)
    with Store.open(tmp_path / "lab.db") as store:
        made, key = controllers(at, store, 3, "concurrent", "interleaved")

        def killed_in_round_2(c: Controller) -> None:
            if c is made[1] and min(len(g.completed) for g in c.guests) >= 2:
                raise KeyboardInterrupt  # as SIGKILL: nothing stops the runners

        for c in made:
            c.on_update = killed_in_round_2
        sweep = SweepRun(made, "interleaved", 3)
        with pytest.raises(KeyboardInterrupt):
            sweep.run()
        partial = done(store, made)
        assert partial[0] == {g: [1, 2] for g in GUESTS} and partial[2] == {g: [1] for g in GUESTS}
        environment_rows = len(store.environment(made[0].run_id))
    with Store.open(tmp_path / "lab.db") as store:  # the same command again
        again, same = controllers(at, store, 3, "concurrent", "interleaved")
        assert same == key and [c.key for c in again] == [c.key for c in made]
        SweepRun(again, "interleaved", 3).run()
        assert done(store, again) == [{g: [1, 2, 3] for g in GUESTS}] * 3
        for c in again:  # each iteration ran once: nothing repeated, nothing lost
            counts = store._conn.execute(
                "SELECT COUNT(*) FROM iteration WHERE run_id=? AND ok=1", (c.run_id,)
            ).fetchone()[0]
            assert counts == 3 * len(GUESTS)
        assert len(store.sweeps()) == 1 and len(store.runs()) == 3
        assert len(store.environment(again[0].run_id)) > environment_rows  # it started again
        rows = timeline(store, again)
        steps_in_order([r for r in rows if r[2] == 3], key=lambda r: r[3])  # round 3 in order
        finished = len(store.environment(again[0].run_id))
    with Store.open(tmp_path / "lab.db") as store:  # once more: all stored, nothing is asked
        third, _ = controllers(at, store, 3, "concurrent", "interleaved")
        SweepRun(third, "interleaved", 3).run()
        assert len(store.environment(third[0].run_id)) == finished


def test_a_run_of_a_sweep_never_shares_its_key_with_the_same_run_made_alone() -> None:
    alone = run_key("s", "pause", {"pause": "0.02"}, list(GUESTS), 3, "concurrent")
    key = sweep_key("s", "pause", {}, [AXIS], GUESTS, 3, "concurrent", "interleaved")
    assert alone != run_key("s", "pause", {"pause": "0.02"}, list(GUESTS), 3, "concurrent",
                            sweep=key)  # fmt: skip
    # the order, the values and the fixed parameters are each part of the sweep's identity
    assert key != sweep_key("s", "pause", {}, [AXIS], GUESTS, 3, "concurrent", "blocked")
    assert key != sweep_key("s", "pause", {}, [Axis("pause", ("0.02",))], GUESTS, 3,
                            "concurrent", "interleaved")  # fmt: skip
    assert key != sweep_key("s", "pause", {"x": 1}, [AXIS], GUESTS, 3, "concurrent", "interleaved")
    assert key == sweep_key("s", "pause", {}, [AXIS], GUESTS[::-1], 3, "concurrent", "interleaved")
