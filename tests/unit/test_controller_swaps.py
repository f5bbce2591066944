"""--swap-every on the controller: the twins trade CPU sets between iterations of a sync run,
every placement is stored, and a resumed or stopped run puts the pins where they belong
(the controller with the real runner as a local process, on a fake libvirt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.run.controller import Controller, RunPlan, run_key
from lab.stats.stopping import StoppedInterval
from lab.store import Store
from tests.unit.test_controller import LocalShell, iterations, journal_times, make, make_pair
from tests.unit.test_placement_swap import FakeLibvirt


def swap_lab(tmp_path: Path, n: int, k: int) -> tuple[Controller, Store, FakeLibvirt]:
    """A sync pair on a fake libvirt whose domains log each pin with the coming iteration."""
    conn = FakeLibvirt()
    conn.add("lab-thp", [0], [0])  # make() pins lab-thp to CPU 0, lab-shp1g to CPU 1
    conn.add("lab-shp1g", [1], [0])
    controller, store = make_pair(tmp_path, n, "sync", SLEEPLESS, swap_every=k, libvirt=conn)
    attach(conn, controller)
    return controller, store, conn


SLEEPLESS = {"lab-thp": "0", "lab-shp1g": "0"}


def attach(conn: FakeLibvirt, controller: Controller) -> None:
    conn.when = lambda: min(len(g.completed) for g in controller.guests) + 1


def stored_placements(store: Store, controller: Controller) -> dict[str, list[tuple[str, str]]]:
    rows = store._conn.execute(
        "SELECT g.name, p.label, p.cpus FROM placement p JOIN guest g ON g.id=p.guest_id"
        " WHERE p.run_id=? ORDER BY g.name, p.iteration",
        (controller.run_id,),
    )
    got: dict[str, list[tuple[str, str]]] = {}
    for name, label, cpus in rows:
        got.setdefault(name, []).append((label, cpus))
    return got


def vcpu_pins(conn: FakeLibvirt) -> list[tuple[int, str, tuple[int, ...]]]:
    return [(c.iteration, c.guest, c.cpus) for c in conn.calls if c.what == "vcpu"]


OWN_PINS = {"lab-thp": [(0,)], "lab-shp1g": [(1,)]}


def test_swap_every_2_swaps_at_3_and_back_at_5_and_records_every_placement(
    tmp_path: Path,
) -> None:
    controller, store, conn = swap_lab(tmp_path, n=6, k=2)
    controller.run()
    assert iterations(store, controller) == {
        g: [1, 2, 3, 4, 5, 6] for g in ("lab-thp", "lab-shp1g")
    }
    labels = ["own", "own", "swapped", "swapped", "own", "own"]
    placed = stored_placements(store, controller)
    assert [label for label, _ in placed["lab-thp"]] == labels
    assert [label for label, _ in placed["lab-shp1g"]] == labels
    assert [cpus for _, cpus in placed["lab-thp"]] == ["0", "0", "1", "1", "0", "0"]
    # The guests started on their own CPUs: nothing moved before iteration 3.
    assert vcpu_pins(conn) == [
        (3, "lab-thp", (1,)), (3, "lab-shp1g", (0,)),
        (5, "lab-thp", (0,)), (5, "lab-shp1g", (1,)),
    ]  # fmt: skip
    assert {c.cpus for c in conn.calls if c.what == "emulator"} == {(0,)}  # kept
    assert conn.vcpu_pins() == OWN_PINS
    (series,) = [s for s in store.values() if s.variant == "thp"]
    got = store.placement_labels()
    assert got[("s", "probe", "wall_s", "thp", "local", "lab-thp")].tolist() == labels
    assert series.iterations.tolist() == [1, 2, 3, 4, 5, 6]


def test_the_pins_move_only_between_iterations(tmp_path: Path) -> None:
    import time

    conn = FakeLibvirt()
    conn.add("lab-thp", [0], [0])
    conn.add("lab-shp1g", [1], [0])
    sleeps = {"lab-thp": "0.05", "lab-shp1g": "0.1"}
    controller, _ = make_pair(tmp_path, 4, "sync", sleeps, swap_every=2, libvirt=conn)
    moments: list[float] = []
    conn.when = lambda: int(bool(moments.append(time.time())))
    controller.run()
    times = journal_times(tmp_path, controller)
    (moment, *_) = moments
    assert max(times[g][2][1] for g in times) <= moment <= min(times[g][3][0] for g in times)


def test_a_run_that_ends_swapped_puts_the_guests_back_on_their_own_cpus(tmp_path: Path) -> None:
    controller, store, conn = swap_lab(tmp_path, n=3, k=2)
    controller.run()
    assert [label for label, _ in stored_placements(store, controller)["lab-thp"]] == [
        "own", "own", "swapped",
    ]  # fmt: skip
    assert vcpu_pins(conn)[-2:] == [(4, "lab-thp", (0,)), (4, "lab-shp1g", (1,))]
    assert conn.vcpu_pins() == OWN_PINS


@pytest.mark.parametrize("guests_restarted", [False, True])
def test_a_resumed_run_continues_in_the_placement_of_its_next_iteration(
    tmp_path: Path, guests_restarted: bool
) -> None:
    controller, store, conn = swap_lab(tmp_path, n=6, k=2)

    def killed_after_3(c: Controller) -> None:
        if min(len(g.completed) for g in c.guests) >= 3:
            raise KeyboardInterrupt  # as SIGKILL: nothing puts the pins back

    controller.on_update = killed_after_3
    with pytest.raises(KeyboardInterrupt):
        controller.run()
    assert conn.vcpu_pins() == {"lab-thp": [(1,)], "lab-shp1g": [(0,)]}  # left swapped
    if guests_restarted:  # live pins are lost: the guests come back on their own CPUs
        conn.domains["lab-thp"].pins, conn.domains["lab-shp1g"].pins = [(0,)], [(1,)]
    store.close()
    conn.calls.clear()
    again, store = make_pair(tmp_path, 6, "sync", SLEEPLESS, swap_every=2, libvirt=conn)
    attach(conn, again)
    assert again.key == controller.key
    again.run()
    labels = ["own", "own", "swapped", "swapped", "own", "own"]
    assert [label for label, _ in stored_placements(store, again)["lab-shp1g"]] == labels
    swapped_again = [(4, "lab-thp", (1,)), (4, "lab-shp1g", (0,))] if guests_restarted else []
    assert vcpu_pins(conn) == [*swapped_again, (5, "lab-thp", (0,)), (5, "lab-shp1g", (1,))]
    assert conn.vcpu_pins() == OWN_PINS


def test_until_with_swaps_stops_only_at_a_balanced_point_on_block_means(tmp_path: Path) -> None:
    conn = FakeLibvirt()
    conn.add("lab-thp", [0], [0])
    conn.add("lab-shp1g", [1], [0])
    sleeps = {"lab-thp": "0.02", "lab-shp1g": "0.2"}
    controller, store = make_pair(tmp_path, 30, "sync", sleeps, "verdict", 1, libvirt=conn)
    attach(conn, controller)
    controller.run()
    decision = controller.decision
    assert decision is not None and decision.stop
    done = len(iterations(store, controller)["lab-thp"])
    print(f"stopped after {done} iterations: {decision.reason}")
    # never before two whole blocks of 1 own + 1 swapped iteration, and only after whole ones
    assert 4 <= done < 30 and done % 2 == 0
    assert decision.interval.n == done // 2
    assert decision.reason.startswith(f"after {done // 2} balanced blocks")
    stored = StoppedInterval.from_json(store.stop_interval(controller.run_id) or "")
    assert stored.observations.startswith(f"{done // 2} balanced blocks of 2 iterations")


def test_stopping_the_runners_puts_the_pins_back(tmp_path: Path) -> None:
    controller, _, conn = swap_lab(tmp_path, n=4, k=1)
    controller.swaps.before(2, [])
    assert conn.vcpu_pins() == {"lab-thp": [(1,)], "lab-shp1g": [(0,)]}
    controller.stop_runners()
    assert conn.vcpu_pins() == OWN_PINS


def test_swap_every_needs_the_sync_schedule_and_two_guests(tmp_path: Path) -> None:
    from lab.core.errors import UsageError

    with pytest.raises(UsageError, match="needs --schedule sync, not concurrent"):
        make_pair(tmp_path, 4, "concurrent", SLEEPLESS, swap_every=2)
    controller, store = make(tmp_path, ["true"], n=5, guests=("lab-thp",))
    plan = RunPlan("s", controller.plan.workload, {}, 5, "sync", 10, swap_every=2)
    with pytest.raises(UsageError, match="two guests, not 1"):
        Controller(controller.ctx, store, controller.state, [g.record for g in controller.guests],
                   plan, lambda r: LocalShell(r.name))  # fmt: skip


def test_run_key_includes_swap_every_only_when_set() -> None:
    base = run_key("s", "null", {}, ["a", "b"], 10, "sync")
    assert base == run_key("s", "null", {}, ["a", "b"], 10, "sync", None, None)
    assert base != run_key("s", "null", {}, ["a", "b"], 10, "sync", None, 2)
    assert run_key("s", "null", {}, ["a", "b"], 10, "sync", None, 2) != run_key(
        "s", "null", {}, ["a", "b"], 10, "sync", None, 3
    )
    assert run_key("s", "null", {}, ["a", "b"], 10, "sync", "verdict", 2) != run_key(
        "s", "null", {}, ["a", "b"], 10, "sync", "verdict"
    )
