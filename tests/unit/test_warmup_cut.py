"""Warm-up left out before the analysis: declared per boot, detected, or none; in every output.

The stores here are synthetic, with known values: the first iterations after each boot (or
at the start of the run) are inflated, so what must be cut, and what the means are once it
is, can be computed with numpy beside the lab.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lab.cli import build_parser, main
from lab.stats.discard import cut_warmup, parse_warmup
from lab.stats.series import series_key
from lab.store import IterationRecord, MetricInfo, Store

TIME = MetricInfo("t", "s", "lower")
N = 40


pytestmark = pytest.mark.usefixtures("no_config")


def values_with_warmup(
    mean: float, boot_of: Callable[[int], str], warm: int, n: int = N, seed: int = 0
) -> tuple[np.ndarray, list[str]]:
    """n values around ``mean`` (sd 1), the first ``warm`` of every boot 20 higher."""
    rng = np.random.default_rng(seed)
    boots = [boot_of(i) for i in range(1, n + 1)]
    rank = [boots[:i].count(b) for i, b in enumerate(boots)]  # place within its boot
    x = mean + rng.normal(0, 1, n) + np.where(np.array(rank) < warm, 20.0, 0.0)
    return x, boots


def warm_store(
    path: Path,
    arms: dict[str, tuple[np.ndarray, list[str]]],
    declared: str | None = None,
    schedule: str = "sync",
) -> Path:
    """One run of workload "w" with the arms' values (iterations 1..n) and boot ids."""
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, schedule, N, [TIME])
        for variant, (x, boots) in arms.items():
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, boot_id=b, metrics={"t": float(v)})
                for i, (v, b) in enumerate(zip(x, boots, strict=True), 1)
            ])  # fmt: skip
        if declared is not None:
            store.record_warmup(run, declared)  # as `lab run --warmup` does
    return path


def compare_json(capsys: pytest.CaptureFixture[str], db: Path, *extra: str) -> dict[str, Any]:
    """The one comparison of ``lab compare --format json`` on the store."""
    assert main(["compare", "--db", str(db), "--format", "json", *extra]) == 0
    (c,) = json.loads(capsys.readouterr().out)
    assert isinstance(c, dict)
    return c


def rebooted_at(*starts: int) -> Callable[[int], str]:
    """Boot ids of a guest that (re)booted before each iteration in ``starts``."""
    return lambda i: f"boot{sum(i >= s for s in starts)}"


@pytest.fixture
def declared_db(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """Both twins rebooted before iteration 21; the run declared a warm-up of 2 per boot."""
    thp = values_with_warmup(100, rebooted_at(1, 21), 2, seed=1)
    shp = values_with_warmup(97, rebooted_at(1, 21), 2, seed=2)
    db = warm_store(tmp_path / "lab.db", {"thp": thp, "shp1g": shp}, declared="2")
    return db, {"thp": thp[0], "shp1g": shp[0]}


def test_the_declared_count_drops_the_first_k_of_every_boot_and_compare_uses_it_by_default(
    declared_db: tuple[Path, dict[str, np.ndarray]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, values = declared_db
    c = compare_json(capsys, db)  # no --warmup: the run's own declaration
    kept = np.setdiff1d(np.arange(1, N + 1), [1, 2, 21, 22])
    for arm, cut in zip(c["arms"], c["warmup"], strict=True):
        assert cut["rule"] == "2" and cut["source"] == "recorded with the run"
        assert cut["discarded"] == [1, 2, 21, 22] and cut["boots"] == 2
        assert arm["summary"]["n"] == kept.size
        assert arm["summary"]["mean"] == pytest.approx(np.mean(values[arm["label"]][kept - 1]))
        assert arm["summary"]["mean"] < np.mean(values[arm["label"]]) - 1  # the warm-up is gone
    (pair,) = c["pairs"]
    expected = np.mean(values["shp1g"][kept - 1]) - np.mean(values["thp"][kept - 1])
    assert pair["difference"]["diff"] == pytest.approx(expected)


def test_none_keeps_every_sample_even_when_the_run_declared_a_warmup(
    declared_db: tuple[Path, dict[str, np.ndarray]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, values = declared_db
    c = compare_json(capsys, db, "--warmup", "none")
    for arm, cut in zip(c["arms"], c["warmup"], strict=True):
        assert (cut["rule"], cut["source"], cut["discarded"]) == ("none", "--warmup", [])
        assert arm["summary"]["n"] == N
        assert arm["summary"]["mean"] == pytest.approx(np.mean(values[arm["label"]]))
    assert main(["compare", "--db", str(db), "--warmup", "none"]) == 0
    assert "warm-up discarded" not in capsys.readouterr().out


def test_a_run_that_declared_nothing_keeps_every_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arms = {v: values_with_warmup(100, rebooted_at(1), 0, seed=s)
            for s, v in enumerate(("thp", "shp1g"))}  # fmt: skip
    c = compare_json(capsys, warm_store(tmp_path / "lab.db", arms))
    assert [(w["rule"], w["source"], w["discarded"]) for w in c["warmup"]] == [
        ("none", "none declared", [])] * 2  # fmt: skip
    assert [a["summary"]["n"] for a in c["arms"]] == [N, N]


def test_compare_says_in_one_line_what_it_discarded(
    declared_db: tuple[Path, dict[str, np.ndarray]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = declared_db
    assert main(["compare", "--detail", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    note = "warm-up discarded (2 per boot, recorded with the run): thp 4 of 40 samples"
    assert note in out and "(iterations 1–2, 21–22); shp1g 4 of 40" in out
    assert "Warm-up" in out  # the table
    assert main(["compare", "--db", str(db), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| Discarded | 4 | 4 |" in md and "| iterations | 1–2, 21–22 | 1–2, 21–22 |" in md


def test_auto_finds_the_injected_warmup_and_cuts_both_arms_by_the_longer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thp = values_with_warmup(100, rebooted_at(1), 8, n=60, seed=3)  # 8 slow iterations
    shp = values_with_warmup(97, rebooted_at(1), 5, n=60, seed=4)  # 5
    db = warm_store(tmp_path / "lab.db", {"thp": thp, "shp1g": shp})
    c = compare_json(capsys, db, "--warmup", "auto")
    by_arm = {w["arm"]: w for w in c["warmup"]}
    assert by_arm["thp"]["cusum"]["n"] == 8 and by_arm["shp1g"]["cusum"]["n"] == 5
    assert by_arm["thp"]["own"] == list(range(1, 9)) and by_arm["shp1g"]["own"] == [1, 2, 3, 4, 5]
    assert by_arm["thp"]["discarded"] == by_arm["shp1g"]["discarded"] == list(range(1, 9))
    assert "warm-up of 8 iterations" in by_arm["thp"]["cusum"]["text"]
    means = {a["label"]: a["summary"]["mean"] for a in c["arms"]}
    assert means["thp"] == pytest.approx(np.mean(thp[0][8:]))
    assert means["shp1g"] == pytest.approx(np.mean(shp[0][8:]))
    assert (
        main(["compare", "--detail", "--db", str(db)]) == 0
    )  # nothing declared: a hint, nothing cut
    out = capsys.readouterr().out
    assert "none declared, but the CUSUM test finds one (thp 8, shp1g 5 iterations)" in out


def test_pairs_stay_aligned_when_only_one_twin_rebooted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thp = values_with_warmup(100, rebooted_at(1, 11, 31), 2, seed=5)  # rebooted twice
    shp = values_with_warmup(97, rebooted_at(1), 2, seed=6)  # never
    db = warm_store(tmp_path / "lab.db", {"thp": thp, "shp1g": shp})
    c = compare_json(capsys, db, "--warmup", "2", "--paired")
    by_arm = {w["arm"]: w for w in c["warmup"]}
    assert by_arm["thp"]["own"] == [1, 2, 11, 12, 31, 32] and by_arm["shp1g"]["own"] == [1, 2]
    assert by_arm["shp1g"]["discarded"] == [1, 2, 11, 12, 31, 32]  # the same iterations
    (paired,) = c["paired"]
    kept = np.setdiff1d(np.arange(1, N + 1), [1, 2, 11, 12, 31, 32]) - 1
    assert (paired["pairs"], paired["unpaired_a"], paired["unpaired_b"]) == (34, 0, 0)
    assert paired["paired_diff"] == pytest.approx(np.mean(shp[0][kept] - thp[0][kept]))


def test_pooled_runs_are_cut_by_their_own_declarations_and_stay_paired(tmp_path: Path) -> None:
    with Store.open(tmp_path / "lab.db") as store:
        study = store.ensure_study("s")
        runs = [store.ensure_run(study, f"s/w{k}", "w", {"k": k}, "sync", 20, [TIME])
                for k in (1, 2)]  # fmt: skip
        for variant in ("thp", "shp1g"):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            for run in runs:
                store.record(run, guest, [
                    IterationRecord(i, 1, True, boot_id=f"{variant}{run}",
                                    metrics={"t": 100.0 + i + (10 if variant == "thp" else 0)})
                    for i in range(1, 21)
                ])  # fmt: skip
        store.record_warmup(runs[0], "3")  # the second run declared nothing
        series = store.values()
        got = cut_warmup(series, store.sample_boots(), store.warmup_declarations(),
                         {r.id: r.key for r in store.runs()})  # fmt: skip
    expected = [*range(4, 21), *range(1, 21)]
    for s in got.series:
        assert s.iterations.tolist() == expected
        assert s.values.mean() == pytest.approx(
            np.mean([100 + i + (10 if s.variant == "thp" else 0) for i in expected])
        )
    # arrays aligned with the stored series (placement labels) are cut the same way
    positions = got.aligned({series_key(s): np.arange(s.values.size) for s in series})
    assert all(p.tolist() == [*range(3, 40)] for p in positions.values())
    cut = got.cuts[("s", "w", "t")]
    assert [(a.run, a.rule, len(a.discarded)) for a in cut.arms] == [
        ("s/w1", "3", 3), ("s/w2", "none", 0), ("s/w1", "3", 3), ("s/w2", "none", 0),
    ]  # fmt: skip


def test_a_cut_that_leaves_too_few_samples_is_refused_with_the_way_out(
    declared_db: tuple[Path, dict[str, np.ndarray]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = declared_db
    assert main(["compare", "--db", str(db), "--warmup", "20"]) == 2  # each boot ran 20
    err = capsys.readouterr().err
    assert "discarding the warm-up (20 per boot) leaves shp1g 0 of its 40 samples" in err
    assert "--warmup none or a smaller count" in err


def test_the_report_has_a_warmup_table_with_what_was_discarded(
    declared_db: tuple[Path, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    db, _ = declared_db
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r"), "--embed"]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    table = re.search(r"<caption>[^<]*: Warm-up</caption>.*?</table>", page)
    assert table is not None
    rows = dict(re.findall(r"<tr><td[^>]*>([^<]+)</td>(.*?)</tr>", table.group(0)))
    assert re.findall(r">([^<]+)</td>", rows["Declared warm-up"]) == ["2 per boot"] * 2
    assert re.findall(r">([^<]+)</td>", rows["Discarded"]) == ["4", "4"]
    assert re.findall(r">([^<]+)</td>", rows["iterations"]) == ["1–2, 21–22"] * 2
    assert "no significant change in the mean" in rows["CUSUM test (every sample, in order)"]
    assert "MSER-5 truncates" in rows["MSER-5 (a second opinion)"]
    assert "warm-up discarded (2 per boot, recorded with the run)" in page
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "n"), "--embed",
                 "--warmup", "none"]) == 0  # fmt: skip
    assert "warm-up discarded" not in (tmp_path / "n" / "index.html").read_text()


def test_lab_run_takes_a_declaration_and_refuses_a_bad_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parse = build_parser().parse_args
    assert parse(["run", "null", "--n", "5", "--warmup", "auto"]).warmup == "auto"
    assert parse(["run", "null", "--n", "5", "--warmup", "02"]).warmup == "2"
    assert parse(["run", "null", "--n", "5"]).warmup is None
    for bad in ("-1", "soon", "none"):  # none is for compare: lab run declares 0 instead
        with pytest.raises(SystemExit):
            parse(["run", "null", "--n", "5", "--warmup", bad])
        assert "argument --warmup" in capsys.readouterr().err
    assert main(["run", "null", "--n", "3", "--warmup", "3"]) == 2  # before any lab is needed
    assert "--warmup 3 discards every one of the --n = 3 iterations" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "rule"), [("2", "2"), ("007", "7"), (" Auto ", "auto"),
                                            ("none", "none"), (0, "0")])  # fmt: skip
def test_parse_warmup(text: object, rule: str) -> None:
    assert parse_warmup(text) == rule


def test_parse_warmup_refusals() -> None:
    with pytest.raises(ValueError, match="0 or more"):
        parse_warmup(-2)
    with pytest.raises(ValueError, match=r"or 'auto'$"):
        parse_warmup("none", allow_none=False)
    with pytest.raises(TypeError):
        parse_warmup(2.5)
    with pytest.raises(TypeError):
        parse_warmup(True)


def test_a_series_with_nothing_to_cut_is_kept_as_it_is_not_copied(tmp_path: Path) -> None:
    """Nothing declared and nothing cut: the series and the aligned arrays come back as the
    same objects (copies of 2 × 3.1M samples took 99 MB at compare's peak)."""
    db = warm_store(tmp_path / "lab.db", {"thp": values_with_warmup(100, rebooted_at(1), 0)})
    with Store.open(db) as store:
        series = store.values()
        got = cut_warmup(series, store.sample_boots(), store.warmup_declarations(), {})
    (s,) = series
    assert got.series[0] is s and got.keep[series_key(s)].all()
    labels = np.arange(s.values.size)
    assert got.aligned({series_key(s): labels})[series_key(s)] is labels
