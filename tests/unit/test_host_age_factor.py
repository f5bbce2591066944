"""The host's age as a factor of a study (issue 42): its level names, the design's blocks run
once per age level in an interleaved order, the study runner aging the host (a stand-in)
before each block's `lab up`, and each run's age in its key and checked at its start."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.app.aging import hold_age
from lab.app.run import RunRequest, check_request
from lab.app.study import parse_study
from lab.app.studyrun import StudyActions, run_argv, run_request
from lab.core.config import Config
from lab.core.context import Context
from lab.core.errors import LabError, UsageError
from lab.host.agelevels import (
    AGE_LEVELS,
    age_index,
    age_level,
    check_host_age,
    host_index,
    level_of_fact,
)
from lab.run.runstate import run_key
from tests.unit.test_host_age import BUDDYINFO, ager, fake, meminfo
from tests.unit.test_study import config  # noqa: F401 (the autouse fixture)
from tests.unit.test_study_run import FakeLab, context, lab_state, start

# -- level names ------------------------------------------------------------------------------


@pytest.mark.parametrize(("level", "index"), [("fresh", None), ("f80", 0.8), ("f5", 0.05),
                                              ("f100", 1.0), ("f1", 0.01)])  # fmt: skip
def test_level_names_spell_the_index_in_percent(level: str, index: float | None) -> None:
    assert age_index(level) == index
    assert age_level(index) == level
    assert level in AGE_LEVELS


@pytest.mark.parametrize("level", ["f0", "f101", "0.8", "f-80", "aged", "F80", "f8.0", ""])
def test_other_level_names_are_refused_with_the_syntax(level: str) -> None:
    with pytest.raises(UsageError, match=re.escape("fresh or f1..f100")):
        age_index(level)


@pytest.mark.parametrize(
    ("fact", "level"),
    [("no", "fresh"), ("0.8", "f80"), ("0.5", "f50"), ("yes", None), (None, None), ("1.5", None)],
)
def test_a_runs_host_aged_fact_reads_back_as_a_level(fact: str | None, level: str | None) -> None:
    assert level_of_fact(fact) == level


def test_a_run_at_another_age_than_the_hosts_is_refused_with_what_to_run() -> None:
    check_host_age("f80", "0.8")
    check_host_age("fresh", "no")
    with pytest.raises(UsageError, match=re.escape("lab host age --level 0.8")):
        check_host_age("f80", "no")
    with pytest.raises(UsageError, match=re.escape("lab host age --undo")):
        check_host_age("fresh", "0.5")


def test_the_age_is_part_of_a_runs_key_only_when_given() -> None:
    asked = ("s", "null", {}, ["lab-a", "lab-b"], 10, "sync")
    plain = run_key(*asked)
    assert run_key(*asked, host_age=None) == plain  # keys of runs without an age unchanged
    assert len({plain, run_key(*asked, host_age="fresh"), run_key(*asked, host_age="f80")}) == 3


def test_a_run_request_with_a_bad_age_or_a_sweep_is_refused() -> None:
    with pytest.raises(UsageError, match=re.escape("f1..f100")):
        check_request(RunRequest("null", 5, host_age="old"))
    from lab.core.sweeps import parse_axis

    with pytest.raises(UsageError, match="not a sweep"):
        check_request(RunRequest("null", 5, host_age="f80", sweep=(parse_axis("seconds=1,2"),)))


# -- the design ---------------------------------------------------------------------------------

HEAD = 'name = "aging"\nvcpus = 1\nmemory = "1G"\n'
RUNS = '[[workload]]\nname = "null"\nn = 5\n'


def test_each_block_runs_once_per_age_level_in_abba_order() -> None:
    """page × prealloc (3 cells, 3 blocks) × age: 6 steps, each block at both ages, the
    order reversed every other block so neither age runs all first."""
    text = HEAD + '[factors]\npage = ["thp", "1g"]\nprealloc = ["off", "on"]\n'
    got = parse_study(text + 'age = ["fresh", "f80"]\n' + RUNS)
    assert got.design is not None and got.design.ages == ("fresh", "f80")
    steps = got.steps
    assert len(steps) == 6
    assert sorted((tuple(sorted(p)), a) for p, a in steps) == sorted(
        (tuple(sorted(p)), a) for p in got.design.blocks for a in ("fresh", "f80")
    )
    ages = [a for _, a in steps]
    assert ages[:2] == ages[2:4][::-1] == ages[4:]  # ABBA: fresh, f80 | f80, fresh | ...
    assert ages[:3] != ["fresh"] * 3 and ages[:3] != ["f80"] * 3
    assert parse_study(text + 'age = ["fresh", "f80"]\n' + RUNS).steps == steps  # resumable
    without = parse_study(text + RUNS)
    assert without.steps == tuple((b, None) for b in without.design.blocks)  # type: ignore[union-attr]
    lines = "\n".join(got.design.lines())
    assert "each block at host age fresh, f80: 6 runs per workload" in lines
    assert re.search(r"block 1: \S+, \S+ at host age (fresh|f80)", lines)


def test_the_order_of_age_levels_is_drawn_from_the_seed() -> None:
    firsts = set()
    for levels in (["fresh", "f80"], ["f80", "fresh"], ["fresh", "f50", "f80"],
                   ["fresh", "f60"], ["fresh", "f70"], ["fresh", "f90"]):  # fmt: skip
        text = HEAD + f'[factors]\npage = ["thp", "1g"]\nage = {levels!r}\n'.replace("'", '"')
        got = parse_study(text + RUNS)
        ages = [a for _, a in got.steps]
        assert sorted(ages) == sorted(levels * 2)  # one block: twice, ABBA
        assert ages[: len(levels)] == ages[len(levels) :][::-1]
        firsts.add(got.steps[0][1])
    assert len(firsts) > 1  # not always the first level listed, nor always fresh


@pytest.mark.parametrize(
    ("factors", "expected"),
    [
        ('age = ["fresh", "f80"]', "with no factor of the guests"),
        ('page = ["thp", "1g"]\nage = ["fresh"]', "age must list two or more distinct"),
        ('page = ["thp", "1g"]\nage = ["fresh", "0.8"]', "not fresh or f1..f100"),
        ('page = ["thp", "1g"]\nage = ["fresh", "f101"]', "not fresh or f1..f100"),
    ],
)
def test_a_bad_age_factor_is_refused(factors: str, expected: str) -> None:
    with pytest.raises(LabError, match=re.escape(expected)):
        parse_study(HEAD + f"[factors]\n{factors}\n" + RUNS)


# -- running it --------------------------------------------------------------------------------


class AgingLab(FakeLab):
    """A fake lab whose host can be aged; `age` refuses while guests are up (the real one's
    keep_free assumes the lab is down)."""

    def age(self, level: str) -> None:
        assert self.state is None or level == "fresh", "the host is aged with the lab down"
        self.log.append(f"age {level}")

    def actions(self) -> StudyActions:
        return StudyActions(lab_state=lambda: self.state, up=self.up, run=self.run,
                            report=self.report, down=self.down, age=self.age)  # fmt: skip


def test_the_runner_ages_the_host_before_each_blocks_up(tmp_path: Path) -> None:
    text = HEAD + '[factors]\npage = ["thp", "1g"]\nprealloc = ["off", "on"]\n'
    got = parse_study(text + 'age = ["fresh", "f80"]\n' + RUNS)
    lab = AgingLab(state=lab_state(["thp", "shp1g"]))
    assert start(context(tmp_path), got, str(tmp_path / "lab.db"), lab) == 0
    expected: list[str] = []
    held = None
    for pair, age in got.steps:  # a lab is up before every step: the last block's, or thp's
        expected.append("down")
        if age != held:
            expected.append(f"age {age}")
            held = age
        expected += [f"up {','.join(pair)}", "run null"]
    if held != "fresh":
        expected.append("age fresh")  # given back at the end (the last pair stays up)
    assert lab.log == expected
    assert [r.host_age for r in lab.runs] == [a for _, a in got.steps]
    changes = lab.log.count("age fresh") + lab.log.count("age f80")
    assert changes == 4 + (held != "fresh")  # ABBA: 4 changes, not 6 (and the give-back)


def test_the_steps_commands_say_the_age(tmp_path: Path) -> None:
    got = parse_study(HEAD + '[factors]\npage = ["thp", "1g"]\nage = ["fresh", "f80"]\n' + RUNS)
    (workload,) = got.workloads
    argv = run_argv(got, workload, "lab.db", "f80")
    assert argv[-2:] == ["--host-age", "f80"]
    assert run_request(got, workload, "lab.db").host_age is None  # the runner sets it
    assert "--host-age" not in run_argv(got, workload, "lab.db")


def test_a_design_with_age_and_nothing_to_age_the_host_stops_before_any_run(
    tmp_path: Path,
) -> None:
    got = parse_study(HEAD + '[factors]\npage = ["thp", "1g"]\nage = ["fresh", "f80"]\n' + RUNS)
    lab = FakeLab()
    with pytest.raises(UsageError, match="nothing can age the host"):
        start(context(tmp_path), got, str(tmp_path / "lab.db"), lab)
    assert lab.runs == []


# -- holding the host at a level (lab host age's stand-ins) -----------------------------------


def test_hold_age_ages_keeps_and_gives_back(tmp_path: Path) -> None:
    a = ager(tmp_path)
    ctx = Context(config=Config(state_dir=str(tmp_path), memory="1G"))
    aged = hold_age(ctx, "f80", a)
    assert aged is not None and fake(a).started and a.state().level == 0.8
    assert hold_age(ctx, "f80", a) is None and len(fake(a).started) == 1  # held there already
    hold_age(ctx, "f50", a)  # another level: given back, then aged again
    assert len(fake(a).started) == 2 and fake(a).signals == [(4243, False)]
    assert a.state().level == 0.5
    hold_age(ctx, "fresh", a)
    assert a.state().pid is None and fake(a).alive == set()


def test_a_level_the_host_is_at_by_itself_holds_nothing_and_says_so(tmp_path: Path) -> None:
    """The fixture's host is at index 0.105 already: f10 starts nothing (as `lab host age`),
    with a warning; a run at f10 is let through on the host's own index."""
    a = ager(tmp_path, meminfo(available_gib=21))
    warned: list[str] = []
    ctx = Context(config=Config(state_dir=str(tmp_path), memory="1G"))
    ctx.warn = warned.append  # type: ignore[method-assign]
    aged = hold_age(ctx, "f10", a)
    assert aged is not None and aged.pid is None and fake(a).started == []
    (text,) = warned
    assert "0.10 already, at or above host age f10: nothing is held" in text
    check_host_age("f10", "no", index_now=0.105)
    with pytest.raises(UsageError, match="held at fresh"):
        check_host_age("f80", "no", index_now=0.105)
    assert host_index({"/proc/buddyinfo": BUDDYINFO}.__getitem__) == pytest.approx(0.105, abs=0.001)

    def unreadable(path: str) -> str:
        raise FileNotFoundError(path)

    assert host_index(unreadable) is None


def test_study_check_shows_each_blocks_age_and_its_command() -> None:
    import json

    from lab.commands.study import describe_plan, plan_json

    got = parse_study(HEAD + '[factors]\npage = ["thp", "1g"]\nage = ["fresh", "f80"]\n' + RUNS)
    doc = json.loads(plan_json(got, "lab.db", {}, "debian12"))
    assert doc["design"]["ages"] == ["fresh", "f80"]
    steps = doc["design"]["steps"]
    assert sorted(s["host_age"] for s in steps) == ["f80", "f80", "fresh", "fresh"]
    text = "\n".join(describe_plan(got, "lab.db", {}))
    assert "at host age fresh" in text and "at host age f80" in text
    assert "4 blocks" in text  # the estimate: per block, 4 of them
    assert "--host-age LEVEL" in text  # each block's level, listed above


def test_the_stored_design_keeps_its_ages_and_their_order() -> None:
    from lab.app.design import design_from_json, design_json

    got = parse_study(HEAD + '[factors]\npage = ["thp", "1g"]\nage = ["fresh", "f80"]\n' + RUNS)
    assert got.design is not None
    doc = design_json(got.design)
    assert doc["ages"] == ["fresh", "f80"] and len(doc["steps"]) == 4
    again = design_from_json(doc)
    assert again.ages == got.design.ages and again.steps == got.design.steps
    old = {k: v for k, v in doc.items() if k not in ("ages", "steps")}  # stored before ages
    assert design_from_json(old).ages == ()


def test_a_repeated_block_is_a_run_of_its_own_on_a_new_boot_and_a_host_aged_anew(
    tmp_path: Path,
) -> None:
    # seen on the real pair: one block at two ages runs fresh, f70, f70, fresh, and the
    # repeats resumed the runs before them (one key), so the study had two runs, not four
    got = parse_study(HEAD + '[factors]\npage = ["thp", "1g"]\nage = ["fresh", "f80"]\n' + RUNS)
    lab = AgingLab(state=None)
    assert start(context(tmp_path), got, str(tmp_path / "lab.db"), lab) == 0
    ages = [a for _, a in got.steps]
    assert ages[1] == ages[2] and ages[0] == ages[3]  # ABBA of one block
    assert [(r.host_age, r.replicate) for r in lab.runs] == [
        (ages[0], 1), (ages[1], 1), (ages[1], 2), (ages[0], 2)
    ]  # fmt: skip
    runs = [i for i, line in enumerate(lab.log) if line == "run null"]
    between = lab.log[runs[1] + 1 : runs[2]]  # the repeat right after its first
    assert between[-1].startswith("up ") and "down" in between  # a new boot
    if ages[1] == "f80":
        assert between.index("age fresh") < between.index("age f80")  # aged anew
    keys = {run_key("s", "null", {}, ["a", "b"], 5, "sync", host_age=r.host_age,
                    replicate=r.replicate) for r in lab.runs}  # fmt: skip
    assert len(keys) == 4


def test_a_replicate_below_1_is_refused_and_the_command_line_says_the_replicate() -> None:
    with pytest.raises(UsageError, match="replicates count from 1"):
        check_request(RunRequest(workload="null", n=3, replicate=0))
    got = parse_study(HEAD + '[factors]\npage = ["thp", "1g"]\nage = ["fresh", "f80"]\n' + RUNS)
    (workload,) = got.workloads
    assert run_argv(got, workload, "lab.db", "f80", 2)[-4:] == [
        "--host-age", "f80", "--replicate", "2"
    ]  # fmt: skip
