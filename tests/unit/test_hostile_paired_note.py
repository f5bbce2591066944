"""The paired analysis's note in words when pairing removed every bit of the variance of
B − A, or when an arm is constant: no "nan×" and no "r = nan"."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")


def _store(path: Path, b_of: dict[str, float]) -> Path:
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, "sync", 30, [MetricInfo("t", "s", "lower")])
        for variant in ("thp", "shp1g"):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, metrics={"t": 10.0 + (i % 3) * b_of[variant]})
                for i in range(1, 31)
            ])  # fmt: skip
    return path


@pytest.mark.parametrize(
    ("slopes", "said"),
    [
        ({"thp": 1.0, "shp1g": 1.0}, "every pair differs by the same: the paired interval has no"),
        ({"thp": 0.0, "shp1g": 1.0}, "(r undefined: an arm is constant)"),
    ],
)  # fmt: skip
def test_the_paired_note_says_what_no_ratio_can(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], slopes: dict[str, float], said: str
) -> None:
    db = _store(tmp_path / "lab.db", slopes)
    assert main(["compare", "--db", str(db), "--detail", "--warmup", "none"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps the note's lines
    assert "paired shp1g vs thp: 30 iterations in both" in out
    assert said in out
    assert "nan" not in out
