"""Issue 33 §1: numbers people read (a prefix, the digits the interval's width gives), a
verdict as hyperfine's and pyperf's, and a summary that fits $COLUMNS with no number cut."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lab.core.units import decimals_for_width, format_measure, format_ratio, scale_for
from lab.store import IterationRecord, MetricInfo, Store

CHECKOUT = Path(__file__).parents[2]


def test_the_issues_numbers_read_as_it_asks() -> None:
    assert format_measure(2_657_290_189, 401_020_012, "bit/s") == "2.66 ± 0.40 Gbit/s"
    assert format_measure(0.0300, 0.0012, "s") == "30.0 ± 1.2 ms"
    assert format_measure(12_648_735_312, 1.2e8, "") == "12.65 ± 0.12 G"
    assert format_ratio(1.0512, 1.031, 1.0702) == ("1.05×", "[1.03, 1.07]")


@pytest.mark.parametrize("margin", [3e-5, 4e-4, 2e-3, 0.01, 0.3, 7.0, 40.0, 900.0, 5e4])
def test_digits_follow_the_margins_width(margin: float) -> None:
    value = 1234.5678
    text = format_measure(value, margin, "s")
    factor, unit = scale_for(value, "s")
    shown_value, shown_margin = re.fullmatch(rf"([0-9.,]+) ± ([0-9.,]+) {unit}", text).groups()  # type: ignore[union-attr]
    decimals = decimals_for_width(margin / factor)
    # the value has the margin's decimals, and the margin two significant digits
    assert len(shown_value.partition(".")[2]) == len(shown_margin.partition(".")[2]) == decimals
    digits = shown_margin.replace(",", "").replace(".", "").lstrip("0")
    assert len(digits) == 2 or float(shown_margin.replace(",", "")) >= 10 ** (2 - 1)
    assert abs(float(shown_value.replace(",", "")) * factor - value) <= 0.5 * 10**-decimals * factor


def _store(path: Path, workload: str, metric: MetricInfo, means: dict[str, float]) -> Path:
    rng = np.random.default_rng(3)
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "k", workload, {}, "concurrent", 40, [metric])
        for variant, mean in means.items():
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            values = mean * (1 + rng.normal(0, 0.01, 40))
            store.record(run, guest, [
                IterationRecord(i + 1, 1, True, started=float(i), ended=i + 0.5,
                                metrics={metric.name: float(v)})
                for i, v in enumerate(values)
            ])  # fmt: skip
    return path


def _compare(db: Path, columns: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update({"LAB_CONFIG": "/dev/null", "PYTHONPATH": str(CHECKOUT)})
    if columns:
        env["COLUMNS"] = columns
    done = subprocess.run([sys.executable, "-m", "lab", "compare", "--db", str(db)],
                          capture_output=True, text=True, env=env, check=True)  # fmt: skip
    return done.stdout  # piped: what a pager or a CI log shows


@pytest.mark.parametrize(
    ("metric", "means", "word"),
    [
        (MetricInfo("wall_s", "s", "lower"), {"thp": 0.0300, "shp1g": 0.0285}, "faster"),
        (MetricInfo("sender_bits_per_s", "bit/s", "higher"), {"thp": 2.6e9, "shp1g": 2.4e9},
         "slower"),
        (MetricInfo("max_rss_kib", "KiB", "lower"), {"thp": 1000.0, "shp1g": 950.0}, "better"),
    ],
)  # fmt: skip
def test_the_verdict_reads_as_a_ratio_of_the_means_beside_the_percent(
    tmp_path: Path, metric: MetricInfo, means: dict[str, float], word: str
) -> None:
    db = _store(tmp_path / "lab.db", "w", metric, means)
    out = " ".join(_compare(db, "400").split())
    found = re.search(rf"shp1g ([0-9.]+)× {word} than thp \[([0-9.]+), ([0-9.]+)\]", out)
    assert found, out
    with Store.open(db, create=False) as store:
        mean = {s.variant: float(s.values.mean()) for s in store.values()}
    a, b = mean["thp"], mean["shp1g"]
    better_ratio = a / b if metric.direction == "lower" else b / a
    expected = better_ratio if better_ratio >= 1 else 1 / better_ratio
    ratio, low, high = map(float, found.groups())
    assert ratio == pytest.approx(expected, abs=0.006) and low <= ratio <= high
    assert re.search(r"[+-][0-9.]+ % \[", out)  # the percent stays, beside it


def test_the_summary_fits_columns_and_cuts_no_number(tmp_path: Path) -> None:
    metric = MetricInfo("sender_bits_per_second_of_every_stream", "bit/s", "higher")
    db = _store(tmp_path / "lab.db", "iperf3-parallel-streams-long-name", metric,
                {"thp-prealloc": 12_648_735_312.0, "shp1g": 12_900_000_000.0})  # fmt: skip
    numbers = re.compile(r"[-+]?[0-9][0-9.,]*[0-9]")
    whole = set(numbers.findall(_compare(db, "400")))  # every number, on one line a row
    assert {"12.881", "12.644"} & whole
    for columns in ("100", "80"):
        out = _compare(db, columns)
        assert max(len(line.rstrip()) for line in out.splitlines()) <= int(columns), out
        assert "…" not in out
        assert set(numbers.findall(out)) == whole, out  # none cut, none folded in two
    wide = _compare(db, None)  # piped without $COLUMNS: 160 wide, one line a row
    assert max(len(line.rstrip()) for line in wide.splitlines()) > 100


def test_the_detail_tables_show_microseconds_in_the_summarys_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 40: the summary said µs where --detail printed raw seconds ("0.00000174")."""
    from lab.cli import main

    db = tmp_path / "lab.db"
    rng = np.random.default_rng(5)
    with Store.open(db) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, "sync", 30,
                               [MetricInfo("lat", "s", "lower")])  # fmt: skip
        for variant, mean in (("thp", 1.74e-6), ("shp1g", 1.70e-6)):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, metrics={"lat": float(mean + rng.normal(0, 2e-8))})
                for i in range(1, 31)
            ])  # fmt: skip
    assert main(["compare", "--db", str(db), "--detail"]) == 0
    out = capsys.readouterr().out
    assert "µs" in out.split("\n\n")[0]  # the summary
    assert "w · lat (µs), lower is better: the study's table" in " ".join(out.split())
    mean_row = next(line for line in out.splitlines() if line.startswith("│ Mean "))
    shown = [float(cell) for cell in re.findall(r"\d+\.\d+", mean_row)]
    assert shown == pytest.approx([1.74, 1.70], abs=0.02)
    assert "0.0000" not in out
