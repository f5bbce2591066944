"""``lab import`` of a design run elsewhere: ``factor.NAME`` columns (JSON keys) give each
row's factor levels, and the levels name its variant, a cell (issue 41)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.cli import main
from lab.store import Store

pytestmark = pytest.mark.usefixtures("no_config")

# Jain, The Art of Computer Systems Performance Analysis, Example 18.1: memory and cache size
JAIN = {("4M", "1K"): (15, 18, 12), ("16M", "1K"): (45, 48, 51),
        ("4M", "2K"): (25, 28, 19), ("16M", "2K"): (75, 75, 81)}  # fmt: skip


def jain_csv(path: Path) -> Path:
    lines = ["workload,metric,unit,direction,iteration,factor.memory,factor.cache,value"]
    for (memory, cache), values in JAIN.items():
        lines += [f"cachesim,time,s,lower,{i},{memory},{cache},{v}"
                  for i, v in enumerate(values, 1)]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def stored(db: Path) -> dict[str, list[float]]:
    with Store.open(db) as store:
        return {s.variant: s.values.tolist() for s in store.values()}


def test_factor_columns_name_each_rows_cell(tmp_path: Path) -> None:
    path = jain_csv(tmp_path / "j.csv")
    assert main(["import", "--db", str(tmp_path / "lab.db"), str(path)]) == 0
    assert stored(tmp_path / "lab.db") == {
        f"memory-{m}.cache-{c}": [float(v) for v in values] for (m, c), values in JAIN.items()
    }


def test_factor_keys_of_json_lines_name_the_cell_too(tmp_path: Path) -> None:
    rows = [{"workload": "w", "metric": "t", "direction": "lower", "factor.page": page,
             "factor.prealloc": "on", "value": v}
            for page, v in (("1g", 1.0), ("thp", 2.0))]  # fmt: skip
    path = tmp_path / "f.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["import", "--db", str(tmp_path / "lab.db"), str(path)]) == 0
    assert stored(tmp_path / "lab.db") == {
        "page-1g.prealloc-on": [1.0], "page-thp.prealloc-on": [2.0],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("header", "row", "expected"),
    [
        ("factor.a,factor.b", "x,", "f.csv:2: no level of factor 'b'"),  # which cell?
        ("factor.a,factor.b", "x,1.5", "has a '.'"),
        ("factor.a,factor.b", "x,1-5", "has a '-'"),
        ("factor.a,variant", "x,v", "a variant column and factor.NAME columns"),
        ("factor.a.b,factor.c", "x,y", "has a dot"),
    ],
)
def test_a_level_or_a_column_that_cannot_name_a_cell_is_refused_and_nothing_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str, row: str, expected: str
) -> None:
    path = tmp_path / "f.csv"
    path.write_text(f"workload,metric,direction,{header},value\nw,t,lower,{row},1\n")
    assert main(["import", "--db", str(tmp_path / "lab.db"), str(path)]) == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "lab.db").exists()


def test_variant_option_with_factor_columns_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = jain_csv(tmp_path / "j.csv")
    assert main(["import", "--db", str(tmp_path / "lab.db"), "--variant", "v", str(path)]) == 2
    assert "--variant and factor.NAME columns" in capsys.readouterr().err
