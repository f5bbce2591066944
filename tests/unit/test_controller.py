"""The run controller with the real runner, run as a local process instead of in a guest.

This checks the controller's bookkeeping (resume, repeats, failures, idempotent
ingestion) quickly; the proof on real guests is in tests/integration.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from lab.core.clock import Clock
from lab.core.config import Config
from lab.core.context import Context
from lab.core.hostexec import Result
from lab.guests.channel import ProcessChannel
from lab.guests.labstate import GuestRecord, LabState
from lab.guests.ssh import GuestAddress, GuestShell
from lab.inguest.spec import Spec
from lab.run.controller import MAX_TROUBLES, Controller, RunFailed, RunPlan, run_key
from lab.run.ingest import split_journal
from lab.stats.stopping import StoppedInterval
from lab.store import Store


class LocalShell(GuestShell):
    """Runs the guest side on this machine: same argument lists, no SSH."""

    def __init__(self, name: str) -> None:
        self.address = GuestAddress(name, "127.0.0.1", "", "lab", Path("/dev/null"))

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        timeout: float | None = None,
        sudo: bool = False,
    ) -> Result:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
        result = Result(tuple(argv), done.returncode, done.stdout, done.stderr)
        if check and not result.ok:
            from lab.core.errors import GuestCommandError

            raise GuestCommandError(f"{argv} exited {done.returncode}: {done.stderr}")
        return result

    def open_channel(self, argv: Sequence[str]) -> ProcessChannel:
        return ProcessChannel(argv)

    def put(self, local: Path, remote: str) -> None:
        shutil.copy(local, remote)

    def put_bytes(self, data: bytes, remote: str) -> None:
        Path(remote).write_bytes(data)

    def read_bytes(self, remote: str, offset: int, size: int) -> bytes | None:
        try:
            with open(remote, "rb") as stream:
                stream.seek(offset)
                return stream.read(size)
        except FileNotFoundError:
            return None

    def close(self) -> None:
        pass

    def forget(self, remote: str) -> None:
        pass  # no handle is kept: each read opens the file


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    direction: str


@dataclass
class ShellWorkload:
    """A workload whose timed command is given by the test."""

    argv: list[str]
    name: str = "probe"
    metrics: list[Metric] = field(default_factory=lambda: [Metric("wall_s", "s", "lower")])
    params: dict[str, Any] = field(default_factory=dict)

    def spec(self, params: dict[str, Any], guest: Any) -> Spec:
        return Spec(self.name, self.argv, metrics_from={m.name: m.name for m in self.metrics})

    def metrics_for(self, params: dict[str, Any]) -> list[Metric]:
        return self.metrics


@dataclass
class TimesWorkload(ShellWorkload):
    """Its parameter ``times`` says which of the runner's timings it records."""

    def spec(self, params: dict[str, Any], guest: Any) -> Spec:
        return Spec(
            self.name, self.argv, metrics_from={m.name: m.name for m in self.metrics_for(params)}
        )

    def metrics_for(self, params: dict[str, Any]) -> list[Metric]:
        return [Metric(name, "s", "lower") for name in params["times"].split(",")]


class FastClock(Clock):
    def sleep(self, seconds: float) -> None:
        import time

        time.sleep(min(seconds, 0.05))


def make(
    tmp_path: Path,
    argv: list[str],
    n: int,
    max_failures: int = 10,
    guests: tuple[str, ...] = ("lab-thp", "lab-shp1g"),
    workload: Any = None,
    params: dict[str, Any] | None = None,
) -> tuple[Controller, Store]:
    ctx = Context(config=Config(state_dir=str(tmp_path / "state")), clock=FastClock())
    ctx.__dict__["libvirt"] = None  # no hypervisor: domain XML is optional context
    records = [
        GuestRecord(
            g,
            g.removeprefix("lab-"),
            "52:54:00:00:00:0" + str(i),
            str(tmp_path),
            [i],
            0,
            "",
            ip="127.0.0.1",
            facts={"cpus": 1},
        )
        for i, g in enumerate(guests)
    ]
    state = LabState(records, "qemu", "test", "img", "h", "lab", "127.0.0.1", [0], 0.0)
    store = Store.open(tmp_path / "lab.db")
    plan = RunPlan(
        "s",
        workload or ShellWorkload(argv),
        params or {},
        n,
        "concurrent",
        max_failures,
        poll_interval=0.05,
        runner_dir=str(tmp_path / "runner"),
    )
    controller = Controller(ctx, store, state, records, plan, lambda r: LocalShell(r.name))
    return controller, store


def iterations(store: Store, controller: Controller) -> dict[str, list[int]]:
    return {
        g.record.name: sorted(store.completed_iterations(controller.run_id, g.guest_id))
        for g in controller.guests
    }


def test_run_stores_exactly_n_samples_per_guest(tmp_path: Path) -> None:
    controller, store = make(tmp_path, ["true"], n=12)
    controller.run()
    assert iterations(store, controller) == {
        "lab-thp": list(range(1, 13)),
        "lab-shp1g": list(range(1, 13)),
    }
    series = store.values(metric="wall_s")
    assert sorted(s.variant for s in series) == ["shp1g", "thp"]
    assert all(len(s.values) == 12 and (s.values > 0).all() for s in series)


def test_same_command_resumes_and_ingesting_again_adds_nothing(tmp_path: Path) -> None:
    controller, _ = make(tmp_path, ["true"], n=5)
    controller.run()
    again, _ = make(tmp_path, ["true"], n=5)
    assert again.key == controller.key and again.run_id == controller.run_id
    assert all(len(g.completed) == 5 for g in again.guests)
    for guest in again.guests:
        assert again.ingest(guest) == 0  # every journal line is already stored


def test_failures_are_recorded_and_the_run_gives_up_past_max_failures(tmp_path: Path) -> None:
    controller, store = make(
        tmp_path, ["sh", "-c", "exit 3"], n=3, max_failures=4, guests=("lab-thp",)
    )
    with pytest.raises(RunFailed, match="more than --max-failures 4"):
        controller.run()
    (guest,) = controller.guests
    assert guest.failed_attempts > 4
    assert store.values(metric="wall_s") == []  # no sample from a failed attempt
    assert store.completed_iterations(controller.run_id, guest.guest_id) == set()
    assert "3" in guest.last_error


def test_failed_iteration_is_repeated_until_it_succeeds(tmp_path: Path) -> None:
    flag = tmp_path / "fail-once"
    flag.write_text("")
    # fails the first time it runs (and removes the flag), succeeds afterwards
    argv = ["sh", "-c", f"if [ -e {flag} ]; then rm {flag}; exit 1; fi"]
    controller, store = make(tmp_path, argv, n=4, guests=("lab-thp",))
    controller.run()
    (guest,) = controller.guests
    assert sorted(guest.completed) == [1, 2, 3, 4]
    assert guest.failed_attempts == 1
    assert store.next_attempt(controller.run_id, guest.guest_id, 1) == 3  # attempts 1 and 2


def test_the_run_records_the_metrics_its_parameters_declare(tmp_path: Path) -> None:
    workload = TimesWorkload(["true"])
    params = {"times": "user_s,sys_s"}
    controller, store = make(
        tmp_path, [], n=2, guests=("lab-thp",), workload=workload, params=params
    )
    controller.run()
    (run,) = store.runs()
    assert [(m.name, m.unit, m.direction) for m in run.metrics if m.direction] == [
        ("sys_s", "s", "lower"), ("user_s", "s", "lower"),
    ]  # fmt: skip
    evidence = {m.name for m in run.metrics if m.direction is None}  # never given a verdict
    assert {"backing.guest_thp_fault_alloc", "backing.qemu_hugetlb_kib"} <= evidence
    assert [len(s.values) for s in store.values(metric="user_s")] == [2]
    assert store.values(metric="wall_s") == []


@pytest.mark.parametrize("schedule", ["concurrent", "alternate", "sync"])
def test_a_pass_up_to_k_runs_only_the_iterations_up_to_k(tmp_path: Path, schedule: str) -> None:
    controller, store = make_pair(tmp_path, 4, schedule, {"lab-thp": "0", "lab-shp1g": "0"})
    controller.begin()
    controller.advance(2)
    assert iterations(store, controller) == {"lab-thp": [1, 2], "lab-shp1g": [1, 2]}
    assert controller.eta_seconds(controller.guests[0]) is not None  # for the 2 still to run
    controller.advance(3)
    assert iterations(store, controller) == {"lab-thp": [1, 2, 3], "lab-shp1g": [1, 2, 3]}
    controller.begin()  # once per start: the environment is not recorded again
    controller.end()
    controller.end()
    env = store.environment(controller.run_id)
    assert [e.scope for e in env].count("host") == 1  # the start
    assert [e.scope for e in env].count("guest") == 4  # each guest at the start and the end
    controller.advance()  # the rest
    assert iterations(store, controller) == {g: [1, 2, 3, 4] for g in ("lab-thp", "lab-shp1g")}


def test_run_key_depends_on_what_was_asked() -> None:
    base = run_key("s", "null", {"a": 1}, ["b", "a"], 10, "concurrent")
    assert base == run_key("s", "null", {"a": 1}, ["a", "b"], 10, "concurrent")
    assert base != run_key("s", "null", {"a": 2}, ["a", "b"], 10, "concurrent")
    assert base != run_key("s", "null", {"a": 1}, ["a", "b"], 11, "concurrent")


def test_partial_journal_line_waits_for_its_newline() -> None:
    done, synced = b'{"v":1,"event":"done","time":1.0}\n', b'{"v":1,"event":"synced"}\n'
    records, used = split_journal(done + synced + b'{"v":1,"iter', "lab-thp")
    assert len(records) == 1 and used == len(done)


class PerGuestShell(LocalShell):
    """Like LocalShell, but each guest gets its own runner folder and its own @SLEEP@."""

    def __init__(self, name: str, runner_dir: str, sleep: str = "0") -> None:
        super().__init__(name)
        self.runner_dir, self.own, self.sleep = runner_dir, f"{runner_dir}-{name}", sleep

    def _map(self, text: str) -> str:
        return text.replace(self.runner_dir, self.own).replace("@SLEEP@", self.sleep)

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        timeout: float | None = None,
        sudo: bool = False,
    ) -> Result:
        return super().run([self._map(a) for a in argv], check=check, timeout=timeout)

    def open_channel(self, argv: Sequence[str]) -> ProcessChannel:
        return super().open_channel([self._map(a) for a in argv])

    def put(self, local: Path, remote: str) -> None:
        super().put(local, self._map(remote))

    def put_bytes(self, data: bytes, remote: str) -> None:
        super().put_bytes(data, self._map(remote))

    def read_bytes(self, remote: str, offset: int, size: int) -> bytes | None:
        return super().read_bytes(self._map(remote), offset, size)


def make_pair(
    tmp_path: Path,
    n: int,
    schedule: str,
    sleeps: dict[str, str],
    until: str | None = None,
    swap_every: int | None = None,
    libvirt: Any = None,
) -> tuple[Controller, Store]:
    controller, store = make(tmp_path, ["sh", "-c", "sleep @SLEEP@"], n=n)
    store.close()
    controller.ctx.__dict__["libvirt"] = libvirt
    plan = controller.plan
    plan = RunPlan(
        plan.study,
        plan.workload,
        {},
        n,
        schedule,
        10,
        poll_interval=0.05,
        runner_dir=plan.runner_dir,
        until=until,
        confidence=95.0,
        threshold=0.01,
        swap_every=swap_every,
        counters="none",  # no QEMU here; counting is proven on the real pair
    )
    store = Store.open(tmp_path / "lab.db")
    records = [g.record for g in controller.guests]
    controller = Controller(
        controller.ctx,
        store,
        controller.state,
        records,
        plan,
        lambda r: PerGuestShell(r.name, plan.runner_dir, sleeps[r.name]),
    )
    return controller, store


def journal_times(
    tmp_path: Path, controller: Controller
) -> dict[str, dict[int, tuple[float, float]]]:
    import json

    times: dict[str, dict[int, tuple[float, float]]] = {}
    for guest in controller.guests:
        path = Path(f"{controller.plan.runner_dir}-{guest.record.name}/{controller.key}.journal")
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if "iteration" in entry and "ended" in entry:
                times.setdefault(guest.record.name, {})[entry["iteration"]] = (
                    entry["started"],
                    entry["ended"],
                )
    return times


def test_sync_starts_each_iteration_on_both_guests_only_after_both_finished_the_last(
    tmp_path: Path,
) -> None:
    sleeps = {"lab-thp": "0.05", "lab-shp1g": "0.3"}
    controller, store = make_pair(tmp_path, 4, "sync", sleeps)
    controller.run()
    assert iterations(store, controller) == {"lab-thp": [1, 2, 3, 4], "lab-shp1g": [1, 2, 3, 4]}
    times = journal_times(tmp_path, controller)
    for i in range(1, 4):
        slowest_end = max(times[g][i][1] for g in times)
        next_start = min(times[g][i + 1][0] for g in times)
        assert next_start >= slowest_end  # the barrier: nobody runs ahead
        starts = [times[g][i][0] for g in times]
        assert max(starts) - min(starts) < 1.0  # started together (loaded CI hosts are slow)


def test_until_verdict_stops_a_clear_difference_long_before_the_maximum(tmp_path: Path) -> None:
    sleeps = {"lab-thp": "0.02", "lab-shp1g": "0.2"}
    controller, store = make_pair(tmp_path, 60, "sync", sleeps, until="verdict")
    controller.run()
    decision = controller.decision
    assert decision is not None and decision.stop
    assert "confidence sequence" in decision.method
    done = iterations(store, controller)
    assert 2 <= len(done["lab-thp"]) < 60
    assert store.stop_reason(controller.run_id) == decision.reason  # for `lab runs`
    stored = StoppedInterval.from_json(store.stop_interval(controller.run_id) or "")
    assert (stored.diff_ci, stored.percent_ci) == (decision.interval.diff_ci,
                                                   decision.interval.percent_ci)  # fmt: skip
    assert stored.early and stored.observations == f"{decision.interval.n} pairs"
    # the environment of this start: the host's and each guest's (local shells here)
    env = {(e.scope, e.name): e.facts for e in store.environment(controller.run_id)}
    kernel = Path("/proc/sys/kernel/osrelease").read_text().strip()
    assert set(env) == {("host", "local"), ("guest", "lab-thp"), ("guest", "lab-shp1g")}
    assert env[("host", "local")]["kernel"] == env[("guest", "lab-thp")]["kernel"] == kernel
    assert env[("guest", "lab-shp1g")]["variant"] == "shp1g"
    # Re-running the same command finds the rule met and runs nothing more.
    store.close()
    again, store = make_pair(tmp_path, 60, "sync", sleeps, until="verdict")
    assert again.key == controller.key
    again.run()
    assert iterations(store, again) == done


def test_until_needs_two_guests_of_different_variants(tmp_path: Path) -> None:
    from lab.core.errors import UsageError

    controller, store = make(tmp_path, ["true"], n=5, guests=("lab-thp",))
    plan = RunPlan("s", controller.plan.workload, {}, 5, "concurrent", 10, until="verdict")
    with pytest.raises(UsageError, match="exactly two guests"):
        Controller(
            controller.ctx,
            store,
            controller.state,
            [g.record for g in controller.guests],
            plan,
            lambda r: LocalShell(r.name),
        )


def test_run_key_includes_a_stopping_rule_only_when_there_is_one() -> None:
    base = run_key("s", "null", {}, ["a", "b"], 10, "sync")
    assert base == run_key("s", "null", {}, ["a", "b"], 10, "sync", None)
    assert base != run_key("s", "null", {}, ["a", "b"], 10, "sync", "verdict")


# -- counterbalanced placement (--swap-every) -------------------------------------------------


@dataclass
class SetupWorkload(ShellWorkload):
    """Its untimed setup command is given by the test too."""

    setup: list[str] = field(default_factory=lambda: ["true"])

    def spec(self, params: dict[str, Any], guest: Any) -> Spec:
        return replace(super().spec(params, guest), setup_argv=self.setup)


@pytest.mark.parametrize("schedule", ["concurrent", "sync"])
def test_a_setup_that_always_fails_stops_the_run_with_its_output(
    tmp_path: Path, schedule: str
) -> None:
    # seen on the real pair: a build step the guest's user may not run (chmod of a file it
    # does not own) made every runner start give up, and the controller started another
    # for ten minutes, saying only "setup command failed"
    tries = tmp_path / "tries"
    setup = ["sh", "-c", f"echo x >> {tries}; echo 'chmod: changing permissions' >&2; exit 1"]
    made, store = make(tmp_path, ["true"], n=3, workload=SetupWorkload(["true"], setup=setup))
    store.close()
    plan = replace(made.plan, schedule=schedule, counters="none")
    store = Store.open(tmp_path / "lab.db")
    controller = Controller(made.ctx, store, made.state, [g.record for g in made.guests], plan,
                            lambda r: PerGuestShell(r.name, plan.runner_dir))  # fmt: skip
    with pytest.raises(RunFailed) as raised:
        controller.run()
    assert "setup command failed" in raised.value.message
    assert "chmod: changing permissions" in raised.value.message  # what it said, to fix it
    assert 1 <= len(tries.read_text().split()) <= 2 * MAX_TROUBLES  # a few starts, not forever
    store.close()

    # fixed, the same command resumes: the give-ups its journals hold are not held against it
    fixed = replace(plan, workload=SetupWorkload(["true"], setup=["true"]))
    store = Store.open(tmp_path / "lab.db")
    again = Controller(made.ctx, store, made.state, [g.record for g in made.guests], fixed,
                       lambda r: PerGuestShell(r.name, plan.runner_dir))  # fmt: skip
    assert again.run_id == controller.run_id
    again.run()
    assert iterations(store, again) == {"lab-thp": [1, 2, 3], "lab-shp1g": [1, 2, 3]}
