"""Counterbalanced placement: which iterations swap, and live pins set and read back.

The libvirt side is a fake connection whose domains keep their pins and record every call;
the controller's use of it (a whole synchronised run) is in tests/unit/test_controller.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lab.cli import main
from lab.core.errors import UsageError
from lab.guests.labstate import GuestRecord
from lab.guests.verify import cpus_from_bools
from lab.run.placement import (
    OWN,
    SWAPPED,
    Placement,
    PlacementError,
    SwapSchedule,
    check_swap_plan,
    placement_for,
)

WIDTH = 8  # host CPUs the fake libvirt reports in its pin maps


@pytest.fixture(autouse=True)
def no_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text(f'state_dir = "{tmp_path / "state"}"\n')


@dataclass
class PinCall:
    guest: str
    iteration: int  # the iteration about to run when the call came (FakeLibvirt.when)
    what: str  # "vcpu" or "emulator"
    vcpu: int
    cpus: tuple[int, ...]


@dataclass
class FakeDomain:
    """A running guest's pins as libvirt keeps them; every pin call is logged."""

    name: str
    pins: list[tuple[int, ...]]  # per vCPU
    emulator: tuple[int, ...]
    conn: FakeLibvirt
    ignore_pins: bool = False  # a hypervisor that accepts pins and does not apply them

    def pinVcpuFlags(self, vcpu: int, cpumap: tuple[bool, ...], flags: int) -> int:
        assert isinstance(cpumap, tuple) and flags == 1  # VIR_DOMAIN_AFFECT_LIVE
        self.conn.log(self.name, "vcpu", vcpu, cpus_from_bools(cpumap))
        if not self.ignore_pins:
            self.pins[vcpu] = cpus_from_bools(cpumap)
        return 0

    def pinEmulator(self, cpumap: tuple[bool, ...], flags: int) -> int:
        assert isinstance(cpumap, tuple) and flags == 1
        self.conn.log(self.name, "emulator", -1, cpus_from_bools(cpumap))
        self.emulator = cpus_from_bools(cpumap)
        return 0

    def vcpuPinInfo(self, flags: int) -> list[tuple[bool, ...]]:
        return [tuple(i in cpus for i in range(WIDTH)) for cpus in self.pins]

    def emulatorPinInfo(self, flags: int) -> tuple[bool, ...]:
        return tuple(i in self.emulator for i in range(WIDTH))

    def XMLDesc(self, flags: int) -> str:
        return f"<domain><name>{self.name}</name></domain>"


@dataclass
class FakeLibvirt:
    """A libvirt connection with ``lookupByName`` and nothing else."""

    domains: dict[str, FakeDomain] = field(default_factory=dict)
    calls: list[PinCall] = field(default_factory=list)
    when: Callable[[], int] = lambda: 0

    def add(self, name: str, cpus: list[int], emulator: list[int]) -> FakeDomain:
        dom = FakeDomain(name, [(c,) for c in cpus], tuple(emulator), self)
        self.domains[name] = dom
        return dom

    def lookupByName(self, name: str) -> FakeDomain:
        if name not in self.domains:
            raise RuntimeError(f"Domain not found: no domain with matching name '{name}'")
        return self.domains[name]

    def log(self, guest: str, what: str, vcpu: int, cpus: tuple[int, ...]) -> None:
        self.calls.append(PinCall(guest, self.when(), what, vcpu, cpus))

    def vcpu_pins(self) -> dict[str, list[tuple[int, ...]]]:
        return {name: list(dom.pins) for name, dom in self.domains.items()}


def twins(cpus: tuple[list[int], list[int]] = ([2, 3], [4, 5])) -> list[GuestRecord]:
    return [
        GuestRecord(name, name.removeprefix("lab-"), "52:54:00:00:00:01", "/tmp", list(c), 0, "")
        for name, c in zip(("lab-thp", "lab-shp1g"), cpus, strict=True)
    ]


def fake_for(guests: list[GuestRecord], emulator: list[int]) -> FakeLibvirt:
    conn = FakeLibvirt()
    for g in guests:
        conn.add(g.name, g.vcpu_cpus, emulator)
    return conn


@pytest.mark.parametrize(
    ("swap_every", "labels"),
    [
        (1, "OSOSOS"),
        (2, "OOSSOO"),
        (3, "OOOSSS"),
        (4, "OOOOSS"),
        (10, "OOOOOO"),
    ],
)
def test_iterations_swap_in_blocks_of_k(swap_every: int, labels: str) -> None:
    got = "".join("S" if placement_for(i, swap_every) == SWAPPED else "O" for i in range(1, 7))
    assert got == labels


def test_swapped_means_each_guest_on_the_other_s_cpus() -> None:
    guests = twins()
    placement = Placement(fake_for(guests, [0, 1]), guests, [1, 0])
    assert placement.cpus(OWN) == {"lab-thp": (2, 3), "lab-shp1g": (4, 5)}
    assert placement.cpus(SWAPPED) == {"lab-thp": (4, 5), "lab-shp1g": (2, 3)}


def test_ensure_pins_every_vcpu_live_keeps_the_emulator_and_reads_back() -> None:
    guests = twins()
    conn = fake_for(guests, [0, 1])
    placement = Placement(conn, guests, [0, 1])
    assert placement.ensure(OWN) is False and conn.calls == []  # already there: nothing moves
    assert placement.ensure(SWAPPED) is True
    assert conn.vcpu_pins() == {"lab-thp": [(4,), (5,)], "lab-shp1g": [(2,), (3,)]}
    assert {(c.guest, c.cpus) for c in conn.calls if c.what == "emulator"} == {
        ("lab-thp", (0, 1)),
        ("lab-shp1g", (0, 1)),
    }
    assert placement.read() == SWAPPED
    assert placement.ensure(SWAPPED) is False
    placement.ensure(OWN)
    assert conn.vcpu_pins() == {"lab-thp": [(2,), (3,)], "lab-shp1g": [(4,), (5,)]}


def test_a_new_placement_finds_the_pins_a_killed_run_left() -> None:
    guests = twins()
    conn = fake_for(guests, [0, 1])
    Placement(conn, guests, [0, 1]).apply(SWAPPED)
    conn.calls.clear()
    again = Placement(conn, guests, [0, 1])
    assert again.current is None and again.read() == SWAPPED
    assert again.ensure(SWAPPED) is False and conn.calls == []
    conn.domains["lab-thp"].pins = [(2, 3), (2, 3)]  # neither placement
    assert Placement(conn, guests, [0, 1]).read() is None


def test_a_guest_that_restarted_on_its_own_cpus_is_pinned_again() -> None:
    guests = twins()
    conn = fake_for(guests, [0, 1])
    placement = Placement(conn, guests, [0, 1])
    placement.ensure(SWAPPED)
    conn.domains["lab-thp"].pins = [(2,), (3,)]  # restarted: live pins gone
    assert placement.ensure(SWAPPED) is True
    assert conn.vcpu_pins()["lab-thp"] == [(4,), (5,)]


def test_pins_that_do_not_take_are_an_error() -> None:
    guests = twins()
    conn = fake_for(guests, [0, 1])
    conn.domains["lab-shp1g"].ignore_pins = True
    placement = Placement(conn, guests, [0, 1])
    with pytest.raises(PlacementError, match="swapped placement did not take") as err:
        placement.ensure(SWAPPED)
    assert any("lab-shp1g: vCPU 0 may run on host CPUs 4, planned 2" in p
               for p in err.value.problems)  # fmt: skip
    assert placement.current is None  # unknown: read again next time


def test_a_libvirt_error_is_a_placement_error() -> None:
    guests = twins()
    conn = fake_for(guests, [0, 1])
    del conn.domains["lab-shp1g"]
    with pytest.raises(PlacementError, match="cannot find guest lab-shp1g"):
        Placement(conn, guests, [0, 1]).apply(SWAPPED)


@pytest.mark.parametrize(
    ("schedule", "guests", "k", "message"),
    [
        ("concurrent", twins(), 2, "--swap-every needs --schedule sync, not concurrent"),
        ("alternate", twins(), 2, "needs --schedule sync"),
        ("sync", twins(), 0, "--swap-every must be 1 or more, not 0"),
        ("sync", twins()[:1], 2, "swaps the CPU sets of two guests, not 1"),
        ("sync", twins(([2, 3], [4])), 2, "lab-thp has 2 vCPUs, lab-shp1g 1"),
    ],
)
def test_swaps_that_cannot_be_made_are_refused(
    schedule: str, guests: list[GuestRecord], k: int, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        check_swap_plan(schedule, guests, k)


@dataclass
class PlacementLog:
    rows: list[tuple[Any, ...]] = field(default_factory=list)

    def record_placement(self, *row: Any) -> None:
        self.rows.append(row)


def test_swap_schedule_places_and_records_each_iteration_and_finishes_on_own_cpus() -> None:
    guests = twins()
    conn = fake_for(guests, [0, 1])
    store = PlacementLog()
    swaps = SwapSchedule(Placement(conn, guests, [0, 1]), 2, store, run_id=7)
    labels = [swaps.before(i, [("lab-thp", 1), ("lab-shp1g", 2)]) for i in (1, 2, 3)]
    assert labels == [OWN, OWN, SWAPPED]
    assert store.rows[-2:] == [(7, 1, 3, SWAPPED, (4, 5)), (7, 2, 3, SWAPPED, (2, 3))]
    with swaps.in_force(warn=lambda m: None):
        pass
    assert conn.vcpu_pins() == {"lab-thp": [(2,), (3,)], "lab-shp1g": [(4,), (5,)]}


def test_without_a_placement_the_swap_schedule_does_nothing() -> None:
    swaps = SwapSchedule(None, 0, None, run_id=1)
    assert swaps.before(1, [("lab-thp", 1)]) is None
    swaps.finish()


def test_a_failure_to_put_the_pins_back_does_not_hide_the_run_s_own_error() -> None:
    guests = twins()
    conn = fake_for(guests, [0, 1])
    swaps = SwapSchedule(Placement(conn, guests, [0, 1]), 1, PlacementLog(), run_id=1)
    swaps.before(2, [])
    del conn.domains["lab-thp"]
    said: list[str] = []
    with pytest.raises(ValueError, match="the run's own"), swaps.in_force(said.append):
        raise ValueError("the run's own")
    assert said and "could not put the guests back on their own CPUs" in said[0]


def test_lab_run_refuses_swap_every_without_sync_before_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "null", "--n", "4", "--schedule", "concurrent", "--swap-every", "2"]) == 2
    err = capsys.readouterr().err
    assert "--swap-every needs --schedule sync, not concurrent" in err
    assert main(["run", "null", "--n", "4", "--swap-every", "0"]) == 2  # sync by default
    assert "--swap-every must be 1 or more" in capsys.readouterr().err


def test_lab_run_help_documents_swap_every(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--swap-every K" in out and "each other's CPUs" in out
