"""`lab demo` as app actions: its steps, the command each is shown as, and what a failing
step leaves. Every action is a fake: nothing here touches the host, libvirt or a guest."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rich.console import Console

from lab.app.analyse import AnalyseRequest, Analysis, Samples
from lab.app.demo import DemoActions, DemoRequest, DemoStep, demo, steps
from lab.app.down import DownOutcome, DownRequest
from lab.app.image import BuildRequest, BuildResult
from lab.app.prepare import Prepared, PrepareHostsRequest
from lab.app.report import ReportRequest, ReportResult
from lab.app.run import RunOutcome, RunRequest
from lab.app.up import HostOutcome, UpOutcome, UpRequest
from lab.cli import build_parser
from lab.commands import compare, down, host, image, report, run, up
from lab.core.config import Config
from lab.core.context import Context
from lab.core.errors import PlanError, UsageError
from lab.run.lock import LOCK_FILE

OLD_STEPS = [  # the demo's steps as `lab` command lines, as they were when it built argv
    ["host", "prepare", "--hugepages", "1G:1"],
    ["image", "build"],
    ["down"],
    ["up", "--pair", "thp,shp1g", "--vcpus", "1", "--memory", "1G", "--reserve-host-cpus", "1"],
    ["run", "sysbench-memory", "--study", "demo-n3", "--db", "d.db", "--n", "3",
     "-p", "time=5", "-p", "total_size=1G", "-p", "block_size=1M"],
    ["run", "iperf3", "--study", "demo-n3", "--db", "d.db", "--n", "3", "-p", "duration=3"],
    ["run", "demo-build", "--study", "demo-n3", "--db", "d.db", "--n", "3"],
    ["run", "null", "--study", "demo-n3", "--db", "d.db", "--n", "3"],
    ["compare", "--db", "d.db", "--study", "demo-n3"],
    ["report", "--db", "d.db", "--study", "demo-n3"],
]  # fmt: skip


@dataclass
class FakeActions:
    """Records every request; ``fail`` names the request type that raises, ``lock`` the
    state folder whose run lock is read while each step runs."""

    fail: type | None = None
    interrupt: bool = False  # runs stopped by Ctrl-C
    lock: Path | None = None
    requests: list[object] = field(default_factory=list)
    locked: list[str] = field(default_factory=list)

    def _got(self, request: object) -> None:
        self.requests.append(request)
        if self.lock is not None:
            self.locked.append((self.lock / LOCK_FILE).read_text())
        if isinstance(request, self.fail or ()):
            raise PlanError("shp1g needs 1 free 1 GiB page on node 0; 0 free")

    def actions(self) -> DemoActions:
        def prepare(r: PrepareHostsRequest) -> tuple[Prepared, ...]:
            self._got(r)
            return (Prepared("local", False, 0),)

        def build(r: BuildRequest) -> BuildResult:
            self._got(r)
            return BuildResult(Path("/images/debian12"))

        def down_(r: DownRequest) -> DownOutcome:
            self._got(r)
            return DownOutcome(())

        def up_(r: UpRequest) -> UpOutcome:
            self._got(r)
            return UpOutcome((HostOutcome("local"),))

        def run_(r: RunRequest) -> RunOutcome:
            self._got(r)
            return RunOutcome(r.workload, "k", r.n, 2, r.db or "", interrupted=self.interrupt)

        def analyse(r: AnalyseRequest) -> Analysis:
            self._got(r)
            return Analysis(Samples([], [], {}, {}, frozenset()), [])

        def report_(r: ReportRequest) -> ReportResult:
            self._got(r)
            return ReportResult(Path("r/index.html"))

        return DemoActions(prepare, build, down_, up_, run_, analyse, report_)


class Recorded:
    def __init__(self) -> None:
        self.kinds: list[str] = []

    def __getattr__(self, kind: str) -> object:
        return lambda result: self.kinds.append(kind)


def context(tmp_path: Path) -> tuple[Context, io.StringIO]:
    err = io.StringIO()
    config = Config(state_dir=str(tmp_path / "state"), store=str(tmp_path / "lab.db"))
    return Context(config=config, out=Console(file=io.StringIO()), err=Console(file=err)), err


def test_the_steps_are_the_demo_s_commands_as_before() -> None:
    assert [list(s.argv) for s in steps(3, "d.db", 1)] == [*OLD_STEPS, ["down"]]
    assert [list(s.argv) for s in steps(3, "d.db", 1, keep=True)] == OLD_STEPS


def request_of(argv: tuple[str, ...], ctx: Context) -> object:
    """The request the real command line makes of ``argv``."""
    args = build_parser().parse_args(list(argv))
    builders = {
        "host": lambda: host.prepare_request(args), "image": lambda: image.build_request(args),
        "down": lambda: down.request(args), "up": lambda: up.request(args, ctx),
        "run": lambda: run.request(args), "compare": lambda: compare.request(args),
        "report": lambda: report.request(args),
    }  # fmt: skip
    return builders[argv[0]]()


@pytest.mark.parametrize("step", steps(3, "d.db", 1), ids=lambda s: " ".join(s.argv[:2]))
def test_each_step_asks_for_what_its_command_would(step: DemoStep, tmp_path: Path) -> None:
    assert request_of(step.argv, context(tmp_path)[0]) == step.request


def test_the_demo_runs_every_step_in_order_under_its_run_lock(tmp_path: Path) -> None:
    ctx, err = context(tmp_path)
    fake = FakeActions(lock=tmp_path / "state")
    shown = Recorded()
    result = demo(ctx, DemoRequest(n=3, db="d.db", reserve_host_cpus=1), shown, fake.actions())
    assert (result.status, result.db, result.failed) == (0, "d.db", None)
    assert fake.requests == [s.request for s in steps(3, "d.db", 1)]
    assert shown.kinds == ["prepared", "built", "down", "up", "run", "run", "run", "run",
                           "analysis", "report", "down"]  # fmt: skip
    assert all('"lab", "demo", "--n", "3"' in body for body in fake.locked)
    headers = [line for line in err.getvalue().splitlines() if " lab " in line]
    assert "lab host prepare --hugepages 1G:1" in headers[0]
    assert "lab up --pair thp,shp1g --vcpus 1 --memory 1G --reserve-host-cpus 1" in headers[3]


def test_a_failing_step_stops_the_demo_and_leaves_the_pair_as_it_is(tmp_path: Path) -> None:
    ctx, err = context(tmp_path)
    fake = FakeActions(fail=UpRequest)
    with pytest.raises(PlanError, match="free 1 GiB page"):
        demo(ctx, DemoRequest(n=2, db="d.db"), Recorded(), fake.actions())
    assert [type(r) for r in fake.requests] == [PrepareHostsRequest, BuildRequest, DownRequest,
                                                UpRequest]  # fmt: skip
    said = " ".join(err.getvalue().split())
    assert "lab demo: `lab up --pair thp,shp1g" in said
    assert "failed (3); the pair is left as it is: see `lab status`, then `lab down`." in said


def test_a_run_stopped_by_ctrl_c_stops_the_demo_with_130(tmp_path: Path) -> None:
    ctx, err = context(tmp_path)
    fake = FakeActions(interrupt=True)
    result = demo(ctx, DemoRequest(n=2, db="d.db"), Recorded(), fake.actions())
    assert result.status == 130 and result.failed is not None
    assert result.failed.argv[:2] == ("run", "sysbench-memory")
    assert not any(isinstance(r, AnalyseRequest | ReportRequest) for r in fake.requests)
    assert "failed (130); the pair is left as it is" in " ".join(err.getvalue().split())


@pytest.mark.parametrize("n", [0, 1])
def test_n_below_two_is_refused_before_any_step(tmp_path: Path, n: int) -> None:
    """One sample per twin runs every step for minutes, then cannot be compared."""
    fake = FakeActions()
    with pytest.raises(UsageError, match=f"--n must be 2 or more, not {n}: the demo compares"):
        demo(context(tmp_path)[0], DemoRequest(n=n), Recorded(), fake.actions())
    assert fake.requests == []
