"""`lab study run` run again skips the blocks the store holds done: found by the keys their
runs get, done when every guest has every iteration (or the run's rule stopped it). That the
keys are the controller's own is checked on the real pair (tests/integration/test_study.py,
whose second `lab study run` brings nothing up)."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from lab.app.run import RunRequest
from lab.app.study import Study
from lab.app.studydone import block_done, request_key
from lab.app.studyrun import run_request, run_study
from lab.run.workload import get_workload
from lab.store import Store
from lab.store.records import IterationRecord, MetricInfo
from tests.unit.test_study import (  # noqa: F401 (config: the autouse fixture)
    HEAD,
    ONE,
    config,
    study,
)
from tests.unit.test_study_run import FakeLab, Shown, context

PAIR = ("thp", "shp1g")


def asked(s: Study, db: str, age: str | None = None, replicate: int = 1) -> list[RunRequest]:
    return [replace(run_request(s, w, db), host_age=age, replicate=replicate) for w in s.workloads]


def store_run(db: Path, request: RunRequest, pair: tuple[str, str], done: dict[str, int],
              stop: str | None = None) -> None:  # fmt: skip
    """The run ``request`` makes on ``pair``, with ``done[variant]`` iterations of each."""
    workload = get_workload(request.workload)
    key = request_key(request, workload, pair)
    with Store.open(db) as store:
        study_id = store.ensure_study(request.study)
        run = store.ensure_run(study_id, key, workload.name, {}, request.schedule, request.n,
                               [MetricInfo("wall_s", "s", "lower")])  # fmt: skip
        for variant in pair:
            guest = store.ensure_guest(study_id, f"lab-{variant}", variant)
            store.record(run, guest, [IterationRecord(i, 1, True, metrics={"wall_s": 1.0})
                                      for i in range(1, done[variant] + 1)])  # fmt: skip
        if stop is not None:
            store.record_stop(run, stop)


def check(s: Study, db: Path, requests: list[RunRequest]) -> bool:
    return block_done(str(db), PAIR, [(r, get_workload(r.workload)) for r in requests])


def test_a_block_whose_runs_are_complete_is_done_and_one_short_is_not(tmp_path: Path) -> None:
    s = study(HEAD + ONE)
    db = tmp_path / "lab.db"
    assert not check(s, db, asked(s, str(db)))  # no store yet
    (request,) = asked(s, str(db))
    store_run(db, request, PAIR, {"thp": 3, "shp1g": 2})
    assert not check(s, db, asked(s, str(db)))  # shp1g has 2 of its 3
    store_run(db, request, PAIR, {"thp": 3, "shp1g": 3})
    assert check(s, db, asked(s, str(db)))


def test_the_age_and_the_replicate_are_part_of_what_is_done(tmp_path: Path) -> None:
    s = study(HEAD + ONE)
    db = tmp_path / "lab.db"
    (aged,) = asked(s, str(db), "f100")
    store_run(db, aged, PAIR, {"thp": 3, "shp1g": 3})
    assert check(s, db, asked(s, str(db), "f100"))
    assert not check(s, db, asked(s, str(db), "fresh"))  # the block at the other age
    assert not check(s, db, asked(s, str(db), "f100", replicate=2))  # its repeat


def test_a_run_its_rule_stopped_early_is_done(tmp_path: Path) -> None:
    s = study(HEAD + ONE.replace("n = 3", "n = 40") + 'until = "verdict"\n')
    db = tmp_path / "lab.db"
    (request,) = asked(s, str(db))
    store_run(db, request, PAIR, {"thp": 12, "shp1g": 12}, stop="verdict: B is faster")
    assert check(s, db, asked(s, str(db)))


def test_a_study_run_again_skips_the_blocks_done_and_runs_the_rest(tmp_path: Path) -> None:
    text = HEAD.replace('variants = ["thp", "shp1g"]\n', "") + ONE
    text = text.replace("memory = \"1G\"\n", 'memory = "1G"\n[factors]\npage = ["thp", "1g"]\n'
                        'age = ["fresh", "f80"]\n')  # fmt: skip
    s = study(text)
    db = str(tmp_path / "lab.db")
    steps = list(s.steps)
    assert len(steps) == 4  # one block at each age, in ABBA order
    asked_done: list[tuple[tuple[str, str], str | None]] = []
    lab = FakeLab()
    actions = lab.actions()
    ages: list[str] = []
    done_blocks = {1, 2}  # the study was stopped in its third block

    def done(pair: tuple[str, str], requests: list[RunRequest]) -> bool:
        asked_done.append((pair, requests[0].host_age))
        return len(asked_done) in done_blocks

    actions = replace(actions, done=done, age=ages.append)
    ctx = context(tmp_path)
    err = io.StringIO()
    ctx = replace(ctx, err=Console(file=err, width=200))
    assert run_study(ctx, s, db, Shown(lab), actions).status == 0
    assert asked_done == [(pair, age) for pair, age in steps]
    assert len(lab.runs) == 2 and [r.host_age for r in lab.runs] == [a for _, a in steps[2:]]
    assert len(lab.ups) == 2  # blocks 3 and 4 only
    assert "block 1 of 4" in err.getvalue() and "not brought up again" in err.getvalue()
    # the host is aged for the blocks that run only: block 3 repeats block 2's age, on a
    # host given back and aged anew (a replicate), then block 4's
    assert [a for _, a in steps] == [steps[0][1], steps[1][1], steps[1][1], steps[0][1]]
    assert ages == ["fresh", steps[2][1], steps[3][1]]
