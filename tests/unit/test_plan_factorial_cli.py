"""``lab plan`` of a factorial (issue 41): ``--factors`` or ``--study FILE`` with [factors], the
design made as ``lab study run`` makes it, the sd from --cv/--sd or a pilot factorial in the
store (checked against statsmodels' OLS on log values), and the refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from lab.app.design import parse_design
from lab.cli import main
from lab.stats.factorialplan import layout_of, plan_factorial
from tests.unit.test_compare_factorial import blocked_store

pytestmark = pytest.mark.usefixtures("no_config")

PAGE_PREALLOC = "page=thp,1g prealloc=off,on"


def plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["plan", *argv, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert isinstance(found, dict)
    return found


def test_factors_are_planned_as_the_study_runs_them(capsys: pytest.CaptureFixture[str]) -> None:
    """page × prealloc: the 1 GiB-on-demand cell left out, three cells in three pair blocks;
    the JSON's n is lab.stats.factorialplan's for the design parse_design makes, and the
    duration n × blocks × seconds per iteration (the two cells of a block at once)."""
    found = plan_json(capsys, "--factors", PAGE_PREALLOC, "--cv", "2%", "--effect", "2%",
                      "--iteration-time", "30")  # fmt: skip
    design = parse_design("x", {"page": ["thp", "1g"], "prealloc": ["off", "on"]})
    expected = plan_factorial(layout_of(design.factors, design.blocks), 1.02,
                              math.sqrt(math.log1p(0.02**2)), 99.99, 0.9)  # fmt: skip
    assert found["design"]["cells"] == list(design.cells)
    assert list(found["design"]["left_out"]) == ["page-1g.prealloc-off"]
    (plan,) = found["plans"]
    assert plan["n"] == expected.n > 2 and plan["family"] == 2
    assert [t["term"] for t in plan["terms"]] == ["page", "prealloc"]
    assert plan["not_estimable"] == ["page:prealloc"]
    assert plan["total_samples"] == expected.n * 6
    assert plan["duration_s"] == pytest.approx(expected.n * 3 * 30)
    assert main(["plan", "--factors", PAGE_PREALLOC, "--cv", "2%"]) == 0
    out = capsys.readouterr().out
    assert f"the study needs n = {expected.n} per cell per block" in out
    assert "lab study check says why): page-1g.prealloc-off" in out.replace("\n", " ")


def test_a_study_file_with_factors_is_planned_with_its_workloads_schedules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An alternate workload runs a block's cells one after the other: twice the time."""
    study = tmp_path / "pages.toml"
    study.write_text(
        'name = "pages"\nvcpus = 1\nmemory = "1G"\n'
        '[factors]\npage = ["thp", "2m", "1g"]\nprealloc = ["off", "on"]\n'
        '[[workload]]\nname = "sysbench-memory"\nn = 5\nschedule = "alternate"\n'
    )
    found = plan_json(capsys, "--study", str(study), "--cv", "3%", "--effect=-3%",
                      "--iteration-time", "10")  # fmt: skip
    (plan,) = found["plans"]
    cells, blocks = len(found["design"]["cells"]), len(found["design"]["blocks"])
    assert (cells, blocks) == (4, 6)  # huge pages on demand (2m, 1g) left out of 3 × 2
    assert found["timings"][0]["schedule"] == "alternate"
    assert plan["duration_s"] == pytest.approx(plan["n"] * blocks * 10 * 2)
    assert [t["term"] for t in plan["terms"]] == ["page", "prealloc"]
    assert plan["terms"][0]["levels"] == ["thp", "2m", "1g"]
    assert plan["effect"] == pytest.approx(0.97)


def test_a_pilot_factorial_gives_the_residual_sd_on_the_log_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pilot's σ is the residual sd of block + page + prealloc on log values, as
    statsmodels fits it independently of lab.stats.effects."""
    db = tmp_path / "lab.db"
    blocked_store(db, np.random.default_rng(3))
    found = plan_json(capsys, "--factors", PAGE_PREALLOC, "--from-store", "--db", str(db),
                      "--effect", "1%")  # fmt: skip
    (plan,) = found["plans"]
    assert plan["name"] == "w · t"
    from lab.store import Store

    rows = []
    with Store.open(db, create=False) as store:
        for run in store.runs("pages"):
            for s in store.values("w", "t", "pages", run.key):
                page, prealloc = (p.split("-")[1] for p in s.variant.split("."))
                rows += [(run.key, page, prealloc, math.log(v)) for v in s.values]
    frame = pd.DataFrame(rows, columns=["blk", "page", "prealloc", "y"])
    fit = smf.ols("y ~ C(blk) + C(page) + C(prealloc)", frame).fit()
    assert plan["sd_log"] == pytest.approx(math.sqrt(fit.scale), rel=1e-9)
    assert plan["sd_source"] == f"pilot, {round(fit.df_resid)} residual df"
    design = parse_design("x", {"page": ["thp", "1g"], "prealloc": ["off", "on"]})
    again = plan_factorial(layout_of(design.factors, design.blocks), 1.01, plan["sd_log"],
                           99.99, 0.9, autocorrelation=plan["autocorrelation"])  # fmt: skip
    assert plan["n"] == again.n


def test_a_study_file_takes_its_pilot_from_its_own_study_in_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--study FILE --from-store reads the pilot of the study the file names, no other."""
    db = tmp_path / "lab.db"
    blocked_store(db, np.random.default_rng(5))  # study "pages"
    text = (
        'vcpus = 1\nmemory = "1G"\n[factors]\npage = ["thp", "1g"]\n'
        'prealloc = ["off", "on"]\n[[workload]]\nname = "sysbench-memory"\nn = 5\n'
    )
    (tmp_path / "pages.toml").write_text('name = "pages"\n' + text)
    (tmp_path / "other.toml").write_text('name = "other"\n' + text)
    found = plan_json(capsys, "--study", str(tmp_path / "pages.toml"), "--from-store",
                      "--db", str(db), "--effect", "1%")  # fmt: skip
    assert [p["name"] for p in found["plans"]] == ["w · t"]
    assert main(["plan", "--study", str(tmp_path / "other.toml"), "--from-store", "--db",
                 str(db)]) == 2  # fmt: skip
    assert "no factorial of study 'other' in the store" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--factors", "pages=thp,1g prealloc=off,on", "--cv", "2%"], "unknown factor 'pages'"),
        (["--factors", "page=thp prealloc=off,on", "--cv", "2%"], "two or more distinct levels"),
        (["--factors", "page prealloc=off,on", "--cv", "2%"], "give FACTOR=LEVEL,LEVEL"),
        (["--factors", PAGE_PREALLOC, "--cv", "2%", "--effect", "0%"], "no effect to plan for"),
        (["--factors", PAGE_PREALLOC, "--cv", "2%", "--effect", "1"], "no effect to plan for"),
        (["--factors", PAGE_PREALLOC], "needs the residual sd"),
        (["--factors", PAGE_PREALLOC, "--cv", "2%", "--interaction", "page:prealloc"],
         "page:prealloc is not estimable in these cells"),
        (["--factors", PAGE_PREALLOC, "--cv", "2%", "--interaction", "page:memory"],
         "no term of the design"),
        (["--sd", "1", "--cv", "2%"], "plan a factorial"),
        (["--study", "missing.toml", "--cv", "2%"], "missing.toml"),
    ],
)  # fmt: skip
def test_a_factorial_plan_that_cannot_be_is_refused_saying_why(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", *argv]) == 2
    assert message in capsys.readouterr().err.replace("\n", " ")


def test_a_pair_study_file_is_not_a_factorial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = tmp_path / "pair.toml"
    study.write_text('name = "pair"\nvariants = ["thp", "shp1g"]\nvcpus = 1\nmemory = "1G"\n'
                     '[[workload]]\nname = "sysbench-memory"\nn = 5\n')  # fmt: skip
    assert main(["plan", "--study", str(study), "--cv", "2%"]) == 2
    assert "not a factorial" in capsys.readouterr().err
