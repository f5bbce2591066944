"""``lab run --reboot-every K``: the guests are power-cycled between passes of K iterations,
at balanced points, and a resumed run does not cycle a boot that ran nothing of it yet.
The guests are tests/unit/fakeguest.py's, their domains fakes whose start makes a new boot;
the proof on real guests is tests/integration/test_run.py."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from lab.core.clock import ManualClock
from lab.core.errors import UsageError
from lab.core.hostexec import Result
from lab.guests.labstate import GuestRecord
from lab.run.controller import Controller
from lab.run.reboot import BOOT_ID
from lab.store import Store
from tests.unit.fakeguest import NAMES, FakeRunnerGuest, make_controller


class BootingGuest(FakeRunnerGuest):
    """Says its boot id; its domain (below) starts it in a new boot."""

    def __init__(self, name: str, log: list[str]) -> None:
        super().__init__(name)
        self.log, self.boots = log, 1

    def run(self, argv: Sequence[str], *, check: bool = True, timeout: float | None = None,
            sudo: bool = False) -> Result:  # fmt: skip
        if list(argv) == ["cat", BOOT_ID]:
            return Result(tuple(argv), 0, self.boot + "\n", "")
        return super().run(argv, check=check, timeout=timeout, sudo=sudo)


class Domain:
    def __init__(self, guest: BootingGuest) -> None:
        self.guest, self.active = guest, True

    def shutdown(self) -> None:
        self.guest.log.append(f"shutdown {self.guest.name} after {self.done()}")
        self.active = False
        self.guest.running = False  # the stepped runner went with the boot

    def isActive(self) -> bool:
        return self.active

    def create(self) -> None:
        self.active = True
        self.guest.boots += 1
        self.guest.boot = f"boot-{self.guest.boots}"

    def destroy(self) -> None:
        self.active = False

    def done(self) -> list[int]:
        return sorted({json.loads(r)["iteration"] for r in self.guest._results()})


def rebooting(tmp_path: Path, n: int, every: int, log: list[str]) -> tuple[Controller, Store]:
    guests = {name: BootingGuest(name, log) for name in NAMES}
    controller, store = make_controller(tmp_path, guests, n, schedule="sync", clock=ManualClock(),
                                        poll_interval=1.0, reboot_every=every)  # fmt: skip
    domains = {name: Domain(guest) for name, guest in guests.items()}
    controller._domain = lambda record: domains[record.name]  # type: ignore[method-assign]
    return controller, store


def test_the_guests_are_cycled_between_passes_of_k_iterations(tmp_path: Path) -> None:
    log: list[str] = []
    controller, store = rebooting(tmp_path, 5, 2, log)
    controller.run()
    # after 1-2 and after 3-4, both twins; never after the last pass
    assert log == [f"shutdown {g} after {d}" for d in ([1, 2], [1, 2, 3, 4]) for g in NAMES]
    with sqlite3.connect(tmp_path / "lab.db") as conn:
        boots = conn.execute(
            "SELECT g.name, i.iteration, i.boot_id FROM iteration i"
            " JOIN guest g ON g.id = i.guest_id ORDER BY g.name, i.iteration"
        ).fetchall()
    for name in NAMES:
        assert [b for g, _, b in boots if g == name] == ["boot-1"] * 2 + ["boot-2"] * 2 + ["boot-3"]
    cycles = [e for e in store.environment(controller.run_id) if "reboot_s" in e.facts]
    # each guest's facts in each new boot (the run's end records the last boot's again)
    assert {(e.name, e.facts["reboot_before_iteration"]) for e in cycles} == {
        (g, i) for g in NAMES for i in ("3", "5")
    }
    assert {e.facts["reboot_boot_id"] for e in cycles} == {"boot-2", "boot-3"}
    store.close()


def test_a_resumed_run_in_a_boot_that_ran_nothing_of_it_is_not_cycled_again(
    tmp_path: Path,
) -> None:
    log: list[str] = []
    controller, store = rebooting(tmp_path, 4, 2, log)
    controller.begin()
    controller.advance(2)  # the first pass, then the controller is gone
    controller.close_channels()
    store.close()
    for guest in controller.guests:  # the guests were restarted meanwhile (a host reboot)
        assert isinstance(guest.shell, BootingGuest)
        guest.shell.boot = "boot-new"
    again, store = rebooting(tmp_path, 4, 2, log)
    for guest, before in zip(again.guests, controller.guests, strict=True):
        guest.shell = before.shell  # the same guests, in their new boot
        guest.runner.shell = before.shell
    again.run()
    assert log == []  # the new boot had run nothing: no cycle
    assert store.completed_iterations(again.run_id, again.guests[0].guest_id) == {1, 2, 3, 4}
    store.close()


def test_reboot_every_is_refused_with_a_sweep_or_below_one(tmp_path: Path) -> None:
    log: list[str] = []
    controller, store = rebooting(tmp_path, 4, 2, log)
    store.close()
    from dataclasses import replace

    for plan in (replace(controller.plan, reboot_every=0),
                 replace(controller.plan, reboot_every=2, sweep="abc")):  # fmt: skip
        with pytest.raises(UsageError, match="--reboot-every"):
            Controller(controller.ctx, Store.open(tmp_path / "lab.db"), controller.state,
                       [g.record for g in controller.guests], plan, lambda r: None)  # type: ignore[arg-type,return-value]  # fmt: skip


class OwnBootDomain(Domain):
    """A boot id of each guest's own, as the kernel's random ones are."""

    def create(self) -> None:
        super().create()
        self.guest.boot = f"{self.guest.name}-boot-{self.guest.boots}"


def test_a_rebooted_run_raises_no_false_alarm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 40: after a reboot the twins "differed beyond their variant" in reboot_boot_id
    and reboot_s, and each domain "changed between its starts": the live XML of a new boot
    has a new id (and labels, paths). What the user defined is compared instead."""
    from lab.cli import main

    log: list[str] = []
    guests = {name: BootingGuest(name, log) for name in NAMES}
    controller, store = make_controller(tmp_path, guests, 5, schedule="sync", clock=ManualClock(),
                                        poll_interval=1.0, reboot_every=2)  # fmt: skip
    domains = {name: OwnBootDomain(guest) for name, guest in guests.items()}
    controller._domain = lambda record: domains[record.name]  # type: ignore[method-assign]

    def live(record: GuestRecord) -> str:  # a new id in every boot, and a new pty
        name = record.name
        boot = guests[name].boots
        return f"<domain id='{boot}'><name>{name}</name><console tty='/dev/pts/{boot}'/></domain>"

    controller.evidence.domain_xml = live
    controller.evidence.defined_xml = lambda record: f"<domain><name>{record.name}</name></domain>"
    controller.run()
    reboots = {e.facts["reboot_boot_id"] for e in store.environment(controller.run_id)
               if "reboot_boot_id" in e.facts}  # fmt: skip
    assert reboots == {f"{g}-boot-{k}" for g in NAMES for k in (2, 3)}
    store.close()
    db = str(tmp_path / "lab.db")
    assert main(["compare", "--db", db]) == 0
    err = capsys.readouterr().err
    assert "differ beyond" not in err and "changed between" not in err
    assert main(["runs", "--db", db, "show", controller.key, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["twins_differ"] == [] and shown["environment_changes"] == []


def _until_verdict(tmp_path: Path, boots: list[tuple[float, float]]) -> Controller:
    """A run of 4 boots of 10 iterations with --until verdict at 95 %, its twins' samples so
    far one value per boot (A's, B's), the same in every iteration of that boot."""
    from lab.stats.sequential import parse_until

    controller, _ = rebooting(tmp_path, 40, 10, [])
    controller.rule = parse_until("verdict", 40)
    controller.plan.confidence, controller.plan.threshold = 95.0, 0.01
    first, second = controller.guests
    for boot, (a, b) in enumerate(boots):
        for i in range(boot * 10 + 1, boot * 10 + 11):
            first.by_iteration[i], second.by_iteration[i] = a, b + (i % 3) * 1e-3
    return controller


def test_until_verdict_on_a_run_with_boots_reads_the_boot_means(tmp_path: Path) -> None:
    # issue 40 §2: A/A twins whose boots differ (the iterations of a boot alike) stopped on
    # blocks of iterations as "faster" where the boot means lab compare reads say nothing
    aa = _until_verdict(tmp_path / "aa", [(100.0, 90.0), (90.0, 100.0), (105.0, 95.0)])
    assert aa.stopped_by_rule() is False
    assert aa.decision is not None and aa.decision.verdict.outcome == "inconclusive"
    assert aa.decision.reason.startswith("after 3 boot(s) per twin: ")
    # a real difference in every boot: a verdict from the boot means, stored for lab compare
    better = _until_verdict(tmp_path / "b", [(100.0, 70.0), (104.0, 72.0), (98.0, 69.0)])
    assert better.stopped_by_rule() is True
    assert better.decision.verdict.outcome == "faster"
    assert "boot means" in better.decision.method
    stopped = better.store.stop_interval(better.run_id)
    assert stopped is not None and '"observations": "3 boot means per twin"' in stopped


def test_the_boot_rule_looks_once_per_completed_boot(tmp_path: Path) -> None:
    controller = _until_verdict(tmp_path, [(100.0, 70.0)])
    assert controller.stopped_by_rule() is False  # one boot: no interval yet
    assert controller.boots_read == 1
    assert controller.stopped_by_rule() is False and controller.boots_read == 1
