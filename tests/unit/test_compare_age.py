"""``lab compare`` with the host's age as a factor (issue 42): each run's recorded age
(``host_aged``) added to its samples' cells, fitted with the guests' factors; the interaction
page × age checked against statsmodels' OLS with an explicit formula on the same samples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")

N = 20
STUDY_FILE = 'name = "aging"\n[factors]\npage = ["thp", "1g"]\nage = ["fresh", "f80"]\n'
# mean time per (page, age): the aged host costs THP 30 %, 1 GiB pages 2 %
MEANS = {("thp", "fresh"): 100.0, ("thp", "f80"): 130.0, ("1g", "fresh"): 90.0,
         ("1g", "f80"): 91.8}  # fmt: skip
FACT = {"fresh": "no", "f80": "0.8"}


def age_store(
    path: Path, rng: np.random.Generator, variants: dict[str, str], study_file: str | None
) -> pd.DataFrame:
    """Four runs of one pair, at fresh, f80, f80, fresh (ABBA), each run with an offset of
    its own (a boot); ``variants`` maps each variant's name to its page level. Returns every
    sample as a frame (y, page, age, run)."""
    rows = []
    with Store.open(path) as store:
        study = store.ensure_study("aging", study_file=study_file,
                                   study_hash="h" if study_file else None)  # fmt: skip
        for number, age in enumerate(["fresh", "f80", "f80", "fresh"], 1):
            run = store.ensure_run(study, f"w-{number}", "w", {}, "sync", N,
                                   [MetricInfo("t", "s", "lower")])  # fmt: skip
            facts = {"host_aged": FACT[age]}
            if study_file:  # as lab study run's runs: the level asked (--host-age); the host
                facts = {"host_aged": "no", "host_age": age}  # at 0.8 by itself (held: none)
            store.record_environment(run, "host", "local", facts)
            offset = rng.normal(0, 2.0)
            for variant, page in variants.items():
                guest = store.ensure_guest(study, f"lab-{variant}", variant)
                values = MEANS[(page, age)] + offset + rng.normal(0, 1.0, N)
                store.record(run, guest, [IterationRecord(i, 1, True, metrics={"t": float(v)})
                                          for i, v in enumerate(values, 1)])  # fmt: skip
                rows += [{"y": v, "page": page, "age": age, "run": number} for v in values]
    return pd.DataFrame(rows)


def compare_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["compare", "--format", "json", *argv]) == 0
    found = json.loads(capsys.readouterr().out)
    assert isinstance(found, list)
    return found


def reference(
    frame: pd.DataFrame, log: bool, factor: str = "page"
) -> tuple[float, tuple[float, float]]:
    """statsmodels: the runs as a fixed effect, ``factor`` and its interaction with age as
    ±1 columns (1g or shp1g +1, f80 +1); age itself lies in the runs' span. The interaction's
    coefficient is q at 1g:f80 (sum-to-zero coding)."""
    data = frame.assign(y=np.log(frame.y)) if log else frame
    data = data.assign(x=np.where(data.page == "1g", 1.0, -1.0),
                       a=np.where(data.age == "f80", 1.0, -1.0))  # fmt: skip
    fit = smf.ols("y ~ C(run) + x + x:a", data).fit()
    low, high = fit.conf_int(0.05).loc["x:a"]
    return float(fit.params["x:a"]), (float(low), float(high))


def age_reference(frame: pd.DataFrame) -> tuple[float, tuple[float, float], int]:
    """Age's main effect from the runs' means (each run holds both pages, equally many
    samples: page and page × age average out of a run's mean): OLS of the 4 means on age."""
    runs = frame.groupby("run").agg(m=("y", "mean"), age=("age", "first"))
    fit = smf.ols("m ~ C(age, Sum)", runs).fit()  # patsy: f80 before fresh, fresh omitted
    low, high = fit.conf_int(0.05).loc["C(age, Sum)[S.f80]"]
    return float(fit.params["C(age, Sum)[S.f80]"]), (float(low), float(high)), int(fit.df_resid)


def test_a_study_with_an_age_factor_fits_page_by_age_as_statsmodels_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    frame = age_store(db, np.random.default_rng(42), {"page-thp": "thp", "page-1g": "1g"},
                      STUDY_FILE)  # fmt: skip
    found = compare_json(capsys, "--db", str(db), "--confidence", "95",
                         "--effects-correction", "none")  # fmt: skip
    assert not [entry for entry in found if "effects" not in entry]  # no pairwise pooling
    (factorial,) = found
    assert factorial["factors"] == ["page", "age"] and factorial["samples"] == 4 * 2 * N
    assert factorial["blocks"] == 4 and factorial["confounded"] == ["age"]
    effects = {e["term"]: e for e in factorial["effects"]}
    q_age, ci_age, df_age = age_reference(frame)
    assert factorial["df_between"] == df_age == 2
    assert effects["age"]["level"] == "f80"
    assert effects["age"]["estimate"] == pytest.approx(q_age, rel=1e-9)
    assert effects["age"]["ci"] == pytest.approx(list(ci_age), rel=1e-9)
    both = effects["page:age"]
    assert both["level"] == "1g:f80"
    q, ci = reference(frame, log=False)
    assert both["estimate"] == pytest.approx(q, rel=1e-9)
    assert both["ci"] == pytest.approx(list(ci), rel=1e-9)
    q_log, ci_log = reference(frame, log=True)
    assert both["ratio"] == pytest.approx(np.exp(2 * q_log), rel=1e-9)
    assert both["ratio_ci"] == pytest.approx(list(np.exp(2 * np.array(ci_log))), rel=1e-9)
    # the answer in words: 1g/thp is 0.9 fresh and 0.706 aged, a change of ×0.785
    (lead,) = factorial["age_leads"]
    assert (lead["factor"], lead["low"], lead["high"]) == ("page", "thp", "1g")
    assert lead["change"] == pytest.approx(np.exp(4 * q_log), rel=1e-9)
    assert lead["change"] == pytest.approx((91.8 / 130) / (90 / 100), rel=0.03)
    assert lead["change_ci"][1] < 1  # more of 1g's lead shows on the aged host
    assert main(["compare", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "1g/thp is 0.9" in out and "the host's age multiplies it by 0.78" in out
    assert "comes from the host's age" in out
    assert "age holds one level per run (block): its interactions are fitted within runs" in out
    assert "from the runs' means (2 degrees of freedom)" in out
    report = tmp_path / "report"
    assert main(["report", "--db", str(db), "--out", str(report), "--no-embed"]) == 0
    page = (report / "index.html").read_text()
    assert "1g/thp is 0.9" in page and "comes from the host&#x27;s age" in page


def test_a_plain_pairs_runs_at_two_ages_are_fitted_with_factor_from_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """thp and shp1g (no [factors]) run at fresh and f80: refused as runs that differ, then
    answered as variant × age with --factor-from-runs age, shp1g high (A, thp, low)."""
    db = tmp_path / "lab.db"
    frame = age_store(db, np.random.default_rng(7), {"thp": "thp", "shp1g": "1g"}, None)
    assert main(["compare", "--db", str(db)]) != 0
    assert "never pooled" in capsys.readouterr().err
    found = compare_json(capsys, "--db", str(db), "--factor-from-runs", "age",
                         "--confidence", "95", "--effects-correction", "none")  # fmt: skip
    (factorial,) = found
    assert factorial["factors"] == ["variant", "age"]
    assert set(factorial["cells"]) == {f"variant-{v}.age-{a}" for v in ("thp", "shp1g")
                                       for a in ("fresh", "f80")}  # fmt: skip
    both = {e["term"]: e for e in factorial["effects"]}["variant:age"]
    assert both["level"] == "shp1g:f80"
    q, ci = reference(frame, log=False)
    assert both["estimate"] == pytest.approx(q, rel=1e-9)
    assert both["ci"] == pytest.approx(list(ci), rel=1e-9)
    assert {e["term"] for e in factorial["effects"]} == {"variant", "age", "variant:age"}
    report = tmp_path / "report"
    argv = ["report", "--db", str(db), "--out", str(report), "--no-embed"]
    assert main(argv) != 0  # runs that differ: never pooled
    capsys.readouterr()
    assert main([*argv, "--factor-from-runs", "age"]) == 0
    assert "shp1g/thp is" in (report / "index.html").read_text()


def test_factor_from_runs_takes_only_what_runs_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--db", str(tmp_path / "x.db"), "--factor-from-runs", "boot"])
    assert "invalid choice" in capsys.readouterr().err
    from lab.app.analyse import Selection
    from lab.core.errors import UsageError

    with pytest.raises(UsageError, match="runs record no such factor"):
        Selection(from_runs=("boot",))


def blocked_age_store(path: Path, rng: np.random.Generator) -> pd.DataFrame:
    """memory × cache's four cells, every pair a block, each pair run at fresh and at f80
    (12 runs, each with an offset of its own); aging costs the 4M cells 10 more."""
    cells = {("4M", "1K"): 50.0, ("4M", "2K"): 45.0, ("16M", "1K"): 40.0, ("16M", "2K"): 38.0}
    names = {c: f"memory-{c[0]}.cache-{c[1]}" for c in cells}
    rows = []
    with Store.open(path) as store:
        study = store.ensure_study("aging")
        pairs = [(a, b) for i, a in enumerate(cells) for b in list(cells)[i + 1 :]]
        for number, ((a, b), age) in enumerate(
            [(pair, age) for pair in pairs for age in ("fresh", "f80")], 1
        ):
            run = store.ensure_run(study, f"w-{number}", "w", {}, "sync", N,
                                   [MetricInfo("t", "s", "lower")])  # fmt: skip
            store.record_environment(run, "host", "local", {"host_aged": FACT[age]})
            offset = rng.normal(0, 5.0)
            for c in (a, b):
                guest = store.ensure_guest(study, f"lab-{names[c]}", names[c])
                extra = 10.0 if (age == "f80" and c[0] == "4M") else 0.0
                values = cells[c] + extra + offset + rng.normal(0, 1.0, N)
                store.record(run, guest, [IterationRecord(i, 1, True, metrics={"t": float(v)})
                                          for i, v in enumerate(values, 1)])  # fmt: skip
                rows += [{"y": v, "memory": c[0], "cache": c[1], "age": age, "run": number}
                         for v in values]  # fmt: skip
    return pd.DataFrame(rows)


def test_pair_blocks_at_two_ages_are_fitted_with_the_pair_as_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    frame = blocked_age_store(db, np.random.default_rng(3))
    (factorial,) = compare_json(capsys, "--db", str(db), "--factor-from-runs", "age",
                                "--confidence", "95", "--effects-correction", "none")  # fmt: skip
    """Runs differ by N(0, 5), five times the iterations' noise: fitted within runs (the run
    the block), memory × age still comes back near its true −2.5, as statsmodels fits it."""
    assert factorial["factors"] == ["memory", "cache", "age"] and factorial["blocks"] == 12
    codes = {"memory": "16M", "cache": "2K", "age": "f80"}  # the +1 levels
    frame = frame.assign(**{f[0]: np.where(frame[f] == high, 1.0, -1.0)
                            for f, high in codes.items()})  # fmt: skip
    fit = smf.ols("y ~ C(run) + m * c + m:a + c:a + m:c:a", frame).fit()
    got = {e["term"]: e for e in factorial["effects"]}
    for term, column in (("memory:age", "m:a"), ("memory:cache:age", "m:c:a"),
                         ("memory", "m"), ("memory:cache", "m:c")):  # fmt: skip
        assert got[term]["estimate"] == pytest.approx(float(fit.params[column]), rel=1e-7)
        assert got[term]["ci"] == pytest.approx(list(fit.conf_int(0.05).loc[column]), rel=1e-7)
    assert got["memory:age"]["level"] == "16M:f80"
    assert got["memory:age"]["estimate"] == pytest.approx(-2.5, abs=0.4)  # (0 − 10) / 4
    assert factorial["not_estimable"] == [] and factorial["confounded"] == ["age"]
    assert factorial["df_between"] == 12 - 2 and "age" in got


def test_one_run_per_age_gives_the_interaction_and_says_why_not_the_age(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs, fresh and f80: age is the runs' difference and nothing is left to tell it
    from how runs differ, so only variant and variant × age are given."""
    db = tmp_path / "lab.db"
    rng = np.random.default_rng(5)
    with Store.open(db) as store:
        study = store.ensure_study("aging")
        for number, age in enumerate(["fresh", "f80"], 1):
            run = store.ensure_run(study, f"w-{number}", "w", {}, "sync", N,
                                   [MetricInfo("t", "s", "lower")])  # fmt: skip
            store.record_environment(run, "host", "local", {"host_aged": FACT[age]})
            for variant, page in {"thp": "thp", "shp1g": "1g"}.items():
                guest = store.ensure_guest(study, f"lab-{variant}", variant)
                values = MEANS[(page, age)] + rng.normal(0, 1.0, N)
                store.record(run, guest, [IterationRecord(i, 1, True, metrics={"t": float(v)})
                                          for i, v in enumerate(values, 1)])  # fmt: skip
    (factorial,) = compare_json(capsys, "--db", str(db), "--factor-from-runs", "age")
    assert {e["term"] for e in factorial["effects"]} == {"variant", "variant:age"}
    assert factorial["confounded"] == ["age"] and factorial["df_between"] is None
    assert main(["compare", "--db", str(db), "--factor-from-runs", "age"]) == 0
    assert "not estimated: no run to spare beside one per level" in capsys.readouterr().out
