"""``lab demo``'s action: the main job end to end, a short real study with the embedded
defaults.

Each step is an app action run in this process with the demo's own :class:`Context` (so
``lab --config X demo`` uses X throughout), shown under the ``lab`` command a user would
type for it, so the demo doubles as a walk-through of the tool.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from lab.app.analyse import AnalyseRequest, Analysis, Selection, analyse
from lab.app.down import DownOutcome, DownRequest, down
from lab.app.image import BuildRequest, BuildResult, build
from lab.app.prepare import Prepared, PrepareHostsRequest, prepare
from lab.app.report import ReportRequest, ReportResult, report
from lab.app.run import RunOutcome, RunRequest, run_workload
from lab.app.show import Show
from lab.app.up import UpOutcome, UpRequest, up
from lab.core.context import Context
from lab.core.errors import LabError, UsageError
from lab.core.paths import RESULTS_DIR
from lab.guests.plan import TwinRequest
from lab.run.lock import run_lock

PAIR = ("thp", "shp1g")
INTERRUPTED = 130  # 128 + SIGINT, as the command line answers Ctrl-C

Request = (
    PrepareHostsRequest | BuildRequest | DownRequest | UpRequest | RunRequest | AnalyseRequest
    | ReportRequest
)  # fmt: skip


@dataclass(frozen=True)
class DemoRequest:
    n: int = 5  # iterations per workload
    keep: bool = False  # leave the pair up at the end
    db: str | None = None  # None: results/demo.db
    reserve_host_cpus: int | None = None  # None: 1 when the host has 3 CPUs or more, else 0


@dataclass(frozen=True)
class DemoStep:
    """One step: the ``lab`` command it is the equivalent of, and what it asks for."""

    argv: tuple[str, ...]  # without `lab`
    request: Request

    @property
    def text(self) -> str:
        return f"lab {shlex.join(self.argv)}"


@dataclass(frozen=True)
class DemoResult:
    status: int  # 0, or the exit status of the step that stopped the demo
    db: str
    failed: DemoStep | None = None

    @property
    def report_dir(self) -> Path:
        return Path(self.db).parent / "report"


@dataclass(frozen=True)
class DemoActions:
    """The actions the demo's steps call; tests hand in fakes."""

    prepare: Callable[[PrepareHostsRequest], tuple[Prepared, ...]]
    build: Callable[[BuildRequest], BuildResult]
    down: Callable[[DownRequest], DownOutcome]
    up: Callable[[UpRequest], UpOutcome]
    run: Callable[[RunRequest], RunOutcome]
    analyse: Callable[[AnalyseRequest], Analysis]
    report: Callable[[ReportRequest], ReportResult]


def real_actions(ctx: Context) -> DemoActions:
    return DemoActions(
        prepare=partial(prepare, ctx), build=partial(build, ctx), down=partial(down, ctx),
        up=partial(up, ctx), run=partial(run_workload, ctx), analyse=partial(analyse, ctx),
        report=partial(report, ctx),
    )  # fmt: skip


def study_of(n: int) -> str:
    """The demo's study: one per n, so that demos of another length are other runs in another
    study, never pooled with these (lab compare refuses runs that differ)."""
    return f"demo-n{n}"


def _run(workload: str, n: int, db: str, *params: str) -> DemoStep:
    study = study_of(n)
    argv: tuple[str, ...] = ("run", workload, "--study", study, "--db", db, "--n", str(n))
    for param in params:
        argv += ("-p", param)
    pairs = tuple((k, v) for k, _, v in (p.partition("=") for p in params))
    return DemoStep(argv, RunRequest(workload, n, pairs, study=study, db=db))


def steps(n: int, db: str, reserve: int, keep: bool = False) -> list[DemoStep]:
    """The demo's steps in order: prepare, build, a fresh pair, four runs, compare, report."""
    twins = TwinRequest(list(PAIR), vcpus=1, memory="1G", reserve_host_cpus=reserve)
    sizing = ("--vcpus", "1", "--memory", "1G", "--reserve-host-cpus", str(reserve))
    selection = Selection(db=db, study=study_of(n))
    plan = [
        DemoStep(("host", "prepare", "--hugepages", "1G:1"), PrepareHostsRequest("1G:1")),
        DemoStep(("image", "build"), BuildRequest()),
        DemoStep(("down",), DownRequest()),
        DemoStep(("up", "--pair", ",".join(PAIR), *sizing), UpRequest(twins)),
        _run("sysbench-memory", n, db, "time=5", "total_size=1G", "block_size=1M"),
        _run("iperf3", n, db, "duration=3"),
        _run("demo-build", n, db),
        _run("null", n, db),
        DemoStep(
            ("compare", "--db", db, "--study", study_of(n)),
            AnalyseRequest(selection, paired="synced"),
        ),
        DemoStep(
            ("report", "--db", db, "--study", study_of(n)), ReportRequest(AnalyseRequest(selection))
        ),
    ]
    if not keep:
        plan.append(DemoStep(("down",), DownRequest()))
    return plan


def _do(step: DemoStep, actions: DemoActions, show: Show) -> int:
    """Run one step and show its result; its exit status (a run stopped by Ctrl-C: 130)."""
    r = step.request
    if isinstance(r, PrepareHostsRequest):
        show.prepared(actions.prepare(r))
    elif isinstance(r, BuildRequest):
        show.built(actions.build(r))
    elif isinstance(r, DownRequest):
        show.down(actions.down(r))
    elif isinstance(r, UpRequest):
        show.up(actions.up(r))
    elif isinstance(r, RunRequest):
        outcome = actions.run(r)
        show.run(outcome)
        return INTERRUPTED if outcome.interrupted else 0
    elif isinstance(r, AnalyseRequest):
        show.analysis(actions.analyse(r))
    else:
        show.report(actions.report(r))
    return 0


def demo(
    ctx: Context, request: DemoRequest, show: Show, actions: DemoActions | None = None
) -> DemoResult:
    """Every step in order under the run lock; the first that fails stops the demo and
    leaves the pair as it is."""
    if request.n < 2:  # refused before minutes of work end in a compare that cannot run
        raise UsageError(
            f"--n must be 2 or more, not {request.n}: the demo compares the twins, which"
            " takes two samples each",
            hint="e.g. lab demo --n 5",
        )
    actions = actions or real_actions(ctx)
    db = request.db or str(RESULTS_DIR / "demo.db")
    # Keep one host CPU free when the host has one to spare; a 2-CPU host gives both away.
    reserve = request.reserve_host_cpus
    if reserve is None:
        reserve = 1 if (os.cpu_count() or 1) >= 3 else 0
    # Held for the whole demo (its runs take it again): a second demo or a `lab run`
    # started meanwhile is refused instead of downing or sharing this pair.
    with run_lock(Path(ctx.config.state_dir), ["lab", "demo", "--n", str(request.n)], ctx.warn):
        for step in steps(request.n, db, reserve, request.keep):
            ctx.err.rule(step.text)
            try:
                status = _do(step, actions, show)
            except LabError as err:
                _failed(ctx, step, err.exit_code)
                raise
            except KeyboardInterrupt:
                _failed(ctx, step, INTERRUPTED)
                raise
            if status != 0:
                _failed(ctx, step, status)
                return DemoResult(status, db, step)
    return DemoResult(0, db)


def _failed(ctx: Context, step: DemoStep, status: int) -> None:
    ctx.err.print(
        f"[bold red]lab demo: `{step.text}` failed ({status}); the pair is left as it is:"
        " see `lab status`, then `lab down`."
    )
