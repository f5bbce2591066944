"""``lab compare`` of a factorial (issue 41): a workload whose variants are cells answers per
factor, with each effect's interval, ratio and share; a design run in blocks (runs) is fitted
with the block as a fixed effect, never pooled pairwise."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store
from tests.unit.test_import_factors import jain_csv

pytestmark = pytest.mark.usefixtures("no_config")


def compare_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["compare", "--format", "json", *argv]) == 0
    found = json.loads(capsys.readouterr().out)
    assert isinstance(found, list)
    return found


def test_jains_example_18_1_imported_gives_the_books_effects_and_90_percent_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Jain, Example 18.1: q_A = 21.5, q_B = 9.5, q_AB = 5, each ± t(0.95; 8)·s_e/√12 with
    SSE = 102 (± 1.92); shares SS/SST with SST = 7032 (12·q² each)."""
    db = str(tmp_path / "lab.db")
    assert main(["import", "--db", db, str(jain_csv(tmp_path / "j.csv"))]) == 0
    capsys.readouterr()
    found = compare_json(capsys, "--db", db, "--confidence", "90", "--effects-correction", "none")
    (factorial,) = [entry for entry in found if "effects" in entry]
    assert factorial["factors"] == ["memory", "cache"] and factorial["df_error"] == 8
    from scipy import stats

    half = stats.t.ppf(0.95, 8) * np.sqrt(102 / 8) / np.sqrt(12)
    assert half == pytest.approx(1.92, abs=0.005)
    expected = {"memory": 21.5, "cache": 9.5, "memory:cache": 5.0}
    for effect in factorial["effects"]:
        q = expected[effect["term"]]
        assert effect["estimate"] == pytest.approx(q)
        assert effect["ci"] == pytest.approx([q - half, q + half])
        assert effect["ratio"] is not None and effect["ratio_ci"] is not None
    shares = {s["term"]: s["share"] for s in factorial["shares"]}
    for term, q in expected.items():
        assert shares[term] == pytest.approx(12 * q * q / 7032)
    assert shares["error"] == pytest.approx(102 / 7032)
    assert {e["level"] for e in factorial["effects"]} == {"16M", "2K", "16M:2K"}  # high levels


def blocked_store(path: Path, rng: np.random.Generator) -> None:
    """page × prealloc's three cells run two at a time, each pair a run (block) with its own
    offset (a boot, the host's state): page 1g adds 10, prealloc on adds 4, no interaction."""
    cells = {"page-thp.prealloc-off": 100.0, "page-thp.prealloc-on": 104.0,
             "page-1g.prealloc-on": 114.0}  # fmt: skip
    blocks = [("page-thp.prealloc-off", "page-thp.prealloc-on", 0.0),
              ("page-thp.prealloc-on", "page-1g.prealloc-on", 30.0),
              ("page-1g.prealloc-on", "page-thp.prealloc-off", -20.0)]  # fmt: skip
    with Store.open(path) as store:
        study = store.ensure_study("pages")
        for number, (a, b, offset) in enumerate(blocks, 1):
            run = store.ensure_run(study, f"pages/b{number}", "w", {"block": number}, "sync", 30,
                                   [MetricInfo("t", "s", "lower")])  # fmt: skip
            for cell in (a, b):
                guest = store.ensure_guest(study, f"lab-{cell}-{number}", cell)
                store.record(run, guest, [
                    IterationRecord(i, 1, True, metrics={
                        "t": float(cells[cell] + offset + rng.normal(0, 0.5))})
                    for i in range(1, 31)
                ])  # fmt: skip


def test_a_design_run_in_blocks_is_fitted_with_the_block_not_pooled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pooled, the block offsets (+30, −20) would bias each cell's mean; fitted with the block
    as a fixed effect, the effects come back: page (1g − thp)/2 = 5, prealloc (on − off)/2 = 2,
    and the interaction is not estimable in three cells."""
    db = tmp_path / "lab.db"
    blocked_store(db, np.random.default_rng(41))
    found = compare_json(capsys, "--db", str(db))
    assert not [entry for entry in found if "effects" not in entry]  # no pairwise pooling
    (factorial,) = found
    assert factorial["blocks"] == 3 and factorial["samples"] == 180
    effects = {e["term"]: e for e in factorial["effects"]}
    assert effects["page"]["estimate"] == pytest.approx(5.0, abs=0.3)
    assert effects["prealloc"]["estimate"] == pytest.approx(2.0, abs=0.3)
    assert effects["page"]["level"] == "1g" and effects["prealloc"]["level"] == "on"
    for term in ("page", "prealloc"):
        low, high = effects[term]["ci"]
        assert low < effects[term]["estimate"] < high
    assert factorial["not_estimable"] == ["page:prealloc"]
    assert main(["compare", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "Factorial effects: w: page × prealloc, 3 cells in 3 blocks (runs)" in out
    assert "worse" in out  # 1 GiB pages' +5 s of 100: its ratio interval is above 1


def test_the_report_of_a_design_run_in_blocks_has_its_effects_and_their_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report refused the study ("runs are never pooled"); now a section gives each
    metric's effects, an effects plot and an interaction plot."""
    db = tmp_path / "lab.db"
    blocked_store(db, np.random.default_rng(7))
    out = tmp_path / "report"
    assert main(["report", "--db", str(db), "--out", str(out), "--no-embed"]) == 0
    page = (out / "index.html").read_text()
    assert "Factorial effects: which factor moves the metric?" in page
    assert sorted(p.name for p in (out / "figures").glob("factorial-*")) == [
        "factorial-00-effects-t.png", "factorial-00-interaction-t.png",
    ]  # fmt: skip
    assert re.search(r"<td>page</td><td>1g</td><td>\+(4\.[89]|5\.[01])\d*</td>", page)


def test_each_boot_of_a_rebooted_block_is_a_block_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs of page × prealloc's diagonal cells, each power-cycled half way
    (--reboot-every 15): the second boot of each moves both twins by +40 (where their memory
    landed). Fitted with each run one block, that offset is error and widens every interval;
    with each boot a block it drops out, and the effects come back as tightly as without."""
    db = tmp_path / "lab.db"
    rng = np.random.default_rng(5)
    cells = {"page-thp.prealloc-off": 100.0, "page-1g.prealloc-on": 114.0,
             "page-thp.prealloc-on": 104.0}  # fmt: skip
    blocks = [("page-thp.prealloc-off", "page-1g.prealloc-on"),
              ("page-thp.prealloc-on", "page-1g.prealloc-on"),
              ("page-thp.prealloc-off", "page-thp.prealloc-on")]  # fmt: skip
    with Store.open(db) as store:
        study = store.ensure_study("boots")
        for number, pair in enumerate(blocks, 1):
            run = store.ensure_run(study, f"boots/b{number}", "w", {"block": number}, "sync",
                                   30, [MetricInfo("t", "s", "lower")])  # fmt: skip
            for cell in pair:
                guest = store.ensure_guest(study, f"lab-{cell}-{number}", cell)
                store.record(run, guest, [
                    IterationRecord(i, 1, True, boot_id=f"{cell}-{number}-{1 + (i > 15)}",
                                    metrics={"t": cells[cell] + 40.0 * (i > 15)
                                             + float(rng.normal(0, 0.5))})
                    for i in range(1, 31)
                ])  # fmt: skip
    (factorial,) = compare_json(capsys, "--db", str(db))
    assert factorial["blocks"] == 6 and factorial["samples"] == 180  # 3 runs × 2 boots
    effects = {e["term"]: e for e in factorial["effects"]}
    assert effects["page"]["estimate"] == pytest.approx(5.0, abs=0.3)
    assert effects["prealloc"]["estimate"] == pytest.approx(2.0, abs=0.3)
    low, high = effects["page"]["ci"]
    assert high - low < 1.0  # the boots' +40 is not in the error
