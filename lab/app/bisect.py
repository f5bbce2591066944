"""``lab bisect``'s action: the first commit between GOOD and BAD that made ARGV slower, named
with a bounded chance of being wrong (:mod:`lab.stats.bisection`).

Each measurement is a twin study on the pair that is up: the candidate's checkout on one
twin, GOOD's on the other (the ``revision`` workload: ``git archive`` into the guests' NFS
tree, ``--build`` once per runner start), in sync, so each iteration gives a pair (the
candidate's time, GOOD's). Successive measurements swap which twin runs which, so that the
twins' own difference cancels. Every run is stored in the store like any other, and every
step (its pairs, its verdict) in ``bisect-ID.jsonl`` beside it, so a bisection stopped
anywhere resumes where it stopped and measures no pair twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.app.run import RunRequest, run_workload
from lab.core.context import Context
from lab.core.errors import LabError, UsageError
from lab.guests.labstate import load_state
from lab.run.sources import git_commit
from lab.stats.bisection import BisectResult, BisectSettings, Pairs, Step, bisect
from lab.store import Store

WORKLOAD = "revision"
METRIC = "wall_s"
INTERRUPTED = 130


@dataclass(frozen=True)
class BisectRequest:
    repo: Path
    good: str
    bad: str
    argv: str
    db: Path
    build: str = ""
    study: str = "bisect"
    alpha: float = 0.05
    cap: int = 300
    batch: int = 10  # pairs per measurement: a step's first look, and each further one


@dataclass(frozen=True)
class Bisection:
    """What was bisected (full commit ids, oldest first) and what it found."""

    commits: tuple[str, ...]
    result: BisectResult
    steps_file: Path


def commits_between(ctx: Context, repo: Path, good: str, bad: str) -> tuple[str, ...]:
    """GOOD, then every commit on the ancestry path from GOOD to BAD, oldest first."""

    def rev(text: str) -> str:
        try:
            return git_commit(ctx.host, repo, text)
        except LabError:
            raise UsageError(f"{repo}: no commit {text!r}",
                             hint="Name GOOD and BAD as git does") from None  # fmt: skip

    first, last = rev(good), rev(bad)
    listed = ctx.host.run(["git", "-C", str(repo), "rev-list", "--reverse", "--ancestry-path",
                           f"{first}..{last}"]).stdout.split()  # fmt: skip
    if not listed or listed[-1] != last:
        raise UsageError(
            f"{bad} does not descend from {good} in {repo}",
            hint="Give an older GOOD and a later BAD on one line of history",
        )
    return (first, *listed)


def steps_path(request: BisectRequest, commits: tuple[str, ...]) -> Path:
    """Where this bisection's steps are kept: named by what defines it."""
    ident = json.dumps([str(request.repo.resolve()), commits[0], commits[-1], request.argv,
                        request.build, request.alpha, request.cap])  # fmt: skip
    digest = hashlib.sha256(ident.encode()).hexdigest()[:12]
    return request.db.resolve().parent / f"bisect-{digest}.jsonl"


def stored_steps(path: Path) -> list[Step]:
    """The latest record of each step in ``path`` (none when it does not exist)."""
    latest: dict[int, Step] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                step = Step.from_dict(json.loads(line))
                latest[step.index] = step
    return [latest[i] for i in sorted(latest)]


class Measurements:
    """Each measurement's twins and label. The twins swap at each measurement of a commit
    (every ``batch`` pairs: each commit's pairs balanced between them). The label is the
    bisection's ``ident`` and the pairs measured before it, of every commit (``stored`` steps'
    included): a measurement is a run, and a run's checkouts are named by revision and label,
    so GOOD's checkout, measured beside every commit, is never made under a name an earlier
    measurement's removal left stale in the guests (a label counting one commit's pairs
    reused GOOD's first name for each new commit, and the guests' NFS client saw the removed
    folder: empty). A resumed bisection counts the same, so it resumes an interrupted run,
    never a finished one."""

    def __init__(self, stored: Sequence[Step] = (), ident: str = "b", batch: int = 10) -> None:
        self.ident, self.batch = ident, batch
        self.of_commit: dict[str, int] = {}
        for step in stored:
            self.of_commit[step.commit] = self.of_commit.get(step.commit, 0) + step.n
        self.total = sum(self.of_commit.values())

    def next(self, commit: str, n: int, guests: tuple[str, str]) -> tuple[str, str, str, int]:
        """(the twin that runs ``commit``, the one that runs GOOD, the label, pairs of the
        commit measured before)."""
        done = self.of_commit.get(commit, 0)
        label = f"{self.ident}-{self.total}"
        self.of_commit[commit] = done + n
        self.total += n
        first, second = guests if (done // self.batch) % 2 == 0 else guests[::-1]
        return first, second, label, done


def measurer(
    ctx: Context, request: BisectRequest, good: str, guests: tuple[str, str],
    said: Callable[[str], None], stored: Sequence[Step] = (), ident: str = "b",
) -> Callable[[str, int], Pairs]:  # fmt: skip
    """``measure(commit, n)``: n pairs (commit's wall time, GOOD's) from a synchronised run,
    twins and label from :class:`Measurements`."""
    plan = Measurements(stored, ident, request.batch)

    def measure(commit: str, n: int) -> Pairs:
        first, second, label, done = plan.next(commit, n, guests)
        said(f"{commit[:12]}: {n} pairs after {done}, {first} runs it and {second} GOOD")
        run = RunRequest(
            workload=WORKLOAD, n=n, schedule="sync", study=request.study, db=str(request.db),
            params=(("repo", str(request.repo)), ("revs", f"{first}={commit},{second}={good}"),
                    ("argv", request.argv), ("build", request.build), ("label", label)),
        )  # fmt: skip
        outcome = run_workload(ctx, run)
        if outcome.interrupted:
            raise UsageError("lab bisect stopped (Ctrl-C); every pair measured is kept",
                             hint="Run the same lab bisect again to resume")  # fmt: skip
        with Store.open(request.db, create=False) as store:
            found = store.values(WORKLOAD, METRIC, request.study, outcome.key)
        series = {s.guest: s for s in found}
        a, b = series[first], series[second]
        at_b = dict(zip(b.iterations.tolist(), b.values.tolist(), strict=True))
        return [(float(v), at_b[i]) for i, v in zip(a.iterations.tolist(), a.values.tolist(),
                                                     strict=True) if i in at_b][-n:]  # fmt: skip

    return measure


def lab_bisect(ctx: Context, request: BisectRequest, said: Callable[[str], None]) -> Bisection:
    """Bisect GOOD..BAD on the pair that is up, resuming from the stored steps."""
    state = load_state(Path(ctx.config.state_dir))
    if state is None or len(state.guests) != 2:
        raise UsageError(
            "lab bisect times on the twins: no pair is up",
            hint="Bring one up: lab up --pair thp,thp-prealloc (any pair)",
        )
    commits = commits_between(ctx, request.repo, request.good, request.bad)
    path = steps_path(request, commits)
    steps = stored_steps(path)
    if steps:
        said(f"resuming from {path}: {len(steps)} step(s), {sum(s.n for s in steps)} pairs")
    guests = (state.guests[0].name, state.guests[1].name)

    def keep(step: Step) -> None:
        with path.open("a") as out:
            out.write(json.dumps(step.to_dict()) + "\n")

    settings = BisectSettings(alpha=request.alpha, cap=request.cap, first=request.batch,
                              batch=request.batch)  # fmt: skip
    ident = path.stem.removeprefix("bisect-")
    measure = measurer(ctx, request, commits[0], guests, said, steps, ident)
    result = bisect(commits, measure, settings,
                    steps=steps, on_step=keep)  # fmt: skip
    return Bisection(commits, result, path)
