"""Samples whose powers overflow or vanish are refused with what to do, not compared into a
wrong verdict (near 1e100: an interval a hundred times the means; near 1e-100 and below:
intervals of no width) or into "n/a" and NaN (near 1e300): all could be stored
(Store.record takes any finite number)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.cli import main
from tests.unit.helpers import twins_store

pytestmark = pytest.mark.usefixtures("no_config")


def _store(path: Path, scale: float) -> Path:
    """thp at 10, shp1g at 10.5 (both spread by 0-0.6), times ``scale``."""
    return twins_store(path, 30, scale=scale)


@pytest.mark.parametrize(
    ("scale", "said"),
    [
        (1e100, "shp1g's samples reach 1.11e+101 s, beyond 1e+75: their powers overflow"),
        (1e300, "shp1g's samples reach 1.11e+301 s, beyond 1e+75: their powers overflow"),
        (1e-100, "shp1g's samples lie 6e-101 s apart, below 1e-75: their powers vanish"),
        (1e-310, "shp1g's samples lie 6e-311 s apart, below 1e-75: their powers vanish"),
    ],
)
@pytest.mark.parametrize(
    "command",
    [["compare", "--warmup", "none"], ["compare", "--by", "host"], ["plan", "--from-store"]],
)
def test_samples_beyond_what_squares_hold_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scale: float, said: str,
    command: list[str],
) -> None:  # fmt: skip
    db = _store(tmp_path / "lab.db", scale)
    assert main([*command, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"lab: error: w · t: {said}, and no statistic of them would be right.")
    assert "lab export, scale the value column" in err
    assert err.count("\n") == 1  # refused before any statistic warned of an overflow


def test_samples_near_1e70_are_compared_as_near_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Inside the limits nothing changes: the verdict is the one at scale 1."""
    verdicts = []
    for scale in (1.0, 1e70, 1e-70):
        db = _store(tmp_path / f"{scale}.db", scale)
        assert main(["compare", "--db", str(db), "--warmup", "none", "--format", "csv"]) == 0
        rows = [r for r in capsys.readouterr().out.splitlines() if ",verdict," in r]
        verdicts.append([r.rsplit(",", 1)[1] for r in rows])
    assert verdicts[0] == verdicts[1] == verdicts[2] and verdicts[0]
