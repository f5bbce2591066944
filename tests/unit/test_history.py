"""``lab history`` (issue 43): a metric across runs in the order they were made, with the
versions each recorded, and the change point where QEMU changed, with its ratio interval."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")


def history_store(path: Path) -> None:
    """12 runs of one variant, 20 samples each (CV 1 %): the 7th and later on QEMU 8.2.0,
    10 % slower; the host's other versions never change."""
    rng = np.random.default_rng(43)
    with Store.open(path) as store:
        study = store.ensure_study("s")
        guest = store.ensure_guest(study, "lab-thp", "thp")
        for k in range(12):
            run = store.ensure_run(study, f"w-{k:02d}", "w", {"k": k}, None, 20,
                                   [MetricInfo("t", "s", "lower")])  # fmt: skip
            qemu = "8.2.0" if k >= 6 else "7.2.11"
            store.record_environment(run, "host", "local", {
                "qemu_version": qemu, "libvirt_version": "9.0.0", "kernel": "6.1",
                "image_hash": "a" * 64, "lab_commit": "b" * 40})  # fmt: skip
            mean = 110.0 if k >= 6 else 100.0
            store.record(run, guest, [
                IterationRecord(i, 1, True, metrics={"t": float(mean * (1 + rng.normal(0, 0.01)))})
                for i in range(1, 21)
            ])  # fmt: skip


def test_history_names_the_run_where_qemu_changed_and_its_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    history_store(db)
    assert main(["history", "--db", str(db), "w", "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    thp = found["variants"]["thp"]
    assert [p["run"] for p in thp["points"]] == [f"w-{k:02d}" for k in range(12)]
    assert thp["points"][0]["versions"]["qemu"] == "7.2.11"
    assert thp["points"][0]["versions"]["image"] == "a" * 12  # hashes cut
    (change,) = thp["changes"]
    assert change["run"] == "w-06" and change["versions"] == {"qemu": ["7.2.11", "8.2.0"]}
    low, high = change["ratio_ci"]
    assert low < 1.10 < high and high - low < 0.02 and not change["selective"]
    assert main(["history", "--db", str(db), "w"]) == 0
    out = capsys.readouterr().out
    assert "change at w-06: ×1.1" in out and "qemu 7.2.11 → 8.2.0" in out


def test_history_of_a_workload_the_store_lacks_says_what_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    history_store(db)
    assert main(["history", "--db", str(db), "nope"]) == 2
    assert "no run of 'nope'" in capsys.readouterr().err
