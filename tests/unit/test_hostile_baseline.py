"""``--baseline`` that names a variant twice: A is still the variant it names first (with
thp,thp the unnamed shp1g tied with thp's second place and came first by name: A was shp1g,
the opposite of what was asked, and nothing said so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.cli import main
from tests.unit.helpers import TWINS, twins_store

pytestmark = pytest.mark.usefixtures("no_config")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return twins_store(tmp_path / "st" / "lab.db", 30, (*TWINS, ("x4k", 11.0)))


@pytest.mark.parametrize(
    ("baseline", "pairs"),
    [
        ("thp,thp", [("thp", "shp1g"), ("thp", "x4k"), ("shp1g", "x4k")]),
        ("x4k,thp,x4k", [("x4k", "thp"), ("x4k", "shp1g"), ("thp", "shp1g")]),
        ("thp", [("thp", "shp1g"), ("thp", "x4k"), ("shp1g", "x4k")]),
    ],
)
def test_a_variant_named_twice_keeps_its_first_place(
    db: Path, capsys: pytest.CaptureFixture[str], baseline: str, pairs: list[tuple[str, str]]
) -> None:
    argv = ["compare", "--db", str(db), "--baseline", baseline, "--format", "csv"]
    assert main([*argv, "--warmup", "none"]) == 0
    rows = [line.split(",") for line in capsys.readouterr().out.splitlines()[1:]]
    found = []
    for row in rows:  # the pairs' subjects, "B vs A", in the order written
        pair = tuple(reversed(row[7].split(" vs "))) if " vs " in row[7] else None
        if pair and pair not in found:
            found.append(pair)
    assert found == pairs
