"""Issue 33 §1, numbers people read: a ratio or a percentage from a million on is written
compact (``1.2e+56``), not digit by digit; below it, as before."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lab.core.units import COMPACT_FROM, fixed_or_compact, format_percent, format_ratio
from lab.store import IterationRecord, MetricInfo, Store

CHECKOUT = Path(__file__).parents[2]
NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(
    ("ratio", "low", "high", "shown"),
    [
        (1.0512, 1.031, 1.0702, ("1.05×", "[1.03, 1.07]")),  # as before
        (999_999.0, 999_998.0, 999_999.5, ("999999.00×", "[999998.00, 999999.50]")),
        (3.4e7, 3.3e7, 3.5e7, ("3.4e+07×", "[3.3e+07, 3.5e+07]")),  # the example
        (4.99e50, 4.94e50, 5.05e50, ("4.99e+50×", "[4.94e+50, 5.05e+50]")),  # 3 digits: width
        (1e56, 1e52, 1e60, ("1.0e+56×", "[1.0e+52, 1.0e+60]")),
        (1_234_567.0, 1_234_000.0, 1_235_000.0, ("1.2346e+06×", "[1.2340e+06, 1.2350e+06]")),
        (1e-9, 5e-10, 2e-9, ("1.0e-09×", "[5.0e-10, 2.0e-09]")),  # tiny: no "0.00000×"
        (5.0, 1e-9, 1e9, ("5.00×", "[1.0e-09, 1.0e+09]")),  # each end as it needs
        (-2e7, -3e7, -1e7, ("-2.0e+07×", "[-3.0e+07, -1.0e+07]")),
        (-1.5, -1.6, -1.4, ("-1.50×", "[-1.60, -1.40]")),
        (1e56, 1e52, INF, ("1e+56×", "")),  # no finite interval: three digits, as before
        (INF, 1.0, INF, ("n/a", "")),
        (NAN, NAN, NAN, ("n/a", "")),
    ],
)
def test_a_ratio_is_compact_when_huge_or_tiny(
    ratio: float, low: float, high: float, shown: tuple[str, str]
) -> None:
    assert format_ratio(ratio, low, high) == shown


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (4.823, "+4.82"),
        (-4.823, "-4.82"),
        (0.0, "+0.00"),
        (999_999.994, "+999999.99"),
        (999_999.996, "+1.0e+06"),  # rounds to a million: compact, not seven digits
        (4.9945997e52, "+5.0e+52"),
        (-1e56, "-1.0e+56"),
        (1e-9, "+0.00"),  # a tiny change is no change at two decimals
        (-1e-9, "-0.00"),
        (INF, "n/a"),
        (-INF, "n/a"),
        (NAN, "n/a"),
    ],
)
def test_a_percentage_is_compact_from_a_million(value: float, shown: str) -> None:
    assert format_percent(value) == shown


def test_the_bound_is_where_the_fixed_form_would_take_a_seventh_digit() -> None:
    below = fixed_or_compact(COMPACT_FROM - 0.01, 2)
    assert below == "999999.99" and len(below.partition(".")[0]) == 6
    assert fixed_or_compact(COMPACT_FROM, 2) == "1.0e+06"
    assert fixed_or_compact(-COMPACT_FROM, 2) == "-1.0e+06"
    assert fixed_or_compact(1e-3, 2, tiny=False) == "0.00"
    assert fixed_or_compact(1e-3, 2) == "1.0e-03"


def test_compare_writes_a_count_from_near_zero_compact(tmp_path: Path) -> None:
    """A retransmit count from ~0 to 5: its change is ~5e52 % and its ratio ~5e50×, which
    the summary's ratio and --detail's difference table printed as 51- and 53-digit numbers;
    one line a row, within its columns."""
    db = tmp_path / "lab.db"
    metric = MetricInfo("retransmits", "", "lower")
    rng = np.random.default_rng(3)
    with Store.open(db) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "k", "w", {}, "concurrent", 40, [metric])
        for variant, mean in {"thp": 1e-50, "shp1g": 5.0}.items():
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i + 1, 1, True, started=float(i), ended=i + 0.5,
                                metrics={metric.name: float(v)})
                for i, v in enumerate(mean * (1 + rng.normal(0, 0.01, 40)))
            ])  # fmt: skip
    env = {**os.environ, "LAB_CONFIG": "/dev/null", "PYTHONPATH": str(CHECKOUT), "COLUMNS": "200"}
    out = subprocess.run([sys.executable, "-m", "lab", "compare", "--db", str(db), "--detail"],
                         capture_output=True, text=True, env=env, check=True).stdout  # fmt: skip
    assert not re.search(r"(?<![0-9.])[0-9]{10}", out), out  # no integer part of 10 digits
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 200, out
    joined = " ".join(out.split())
    ratio = re.search(r"shp1g ([0-9.]+e\+50)× worse than thp \[([0-9.e+]+), ([0-9.e+]+)\]", joined)
    assert ratio, out
    assert float(ratio[2]) <= float(ratio[1]) <= float(ratio[3])
    assert re.search(r"Change relative to A \(%\) +│ +\+[0-9.]+e\+52 │", out), out


def test_a_measure_past_a_dozen_digits_or_below_six_decimals_is_compact() -> None:
    from lab.core.units import format_measure

    # a unit that takes no prefix keeps its commas while they can still be read...
    assert format_measure(4_299_993, 2_000, "KiB") == "4,299,993 ± 2,000 KiB"
    # ...not past them, nor when six decimals would show none of the value's digits
    assert format_measure(1.234e56, 3.4e55, "%") == "1.2e+56 ± 3.4e+55 %"
    assert format_measure(1.0e-50, 1.0e-51, "KiB") == "1.0e-50 ± 1.0e-51 KiB"
    assert format_measure(-2.5e-9, math.inf, "%") == "-2.5e-09 %"
    assert format_measure(0.0, 0.0, "%") == "0 ± 0 %"
