"""The soak's leak bound is sensitive: a leak injected on purpose fails it, the controller
as it is passes it (the same fit and bounds as tests/integration/test_soak.py and
bench/soak.py, on the real controller driving simulated guests in a process of its own)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.soak import RSS_SLOPE_MAX, Tick, figures, leaks, slope, watch

N = 3_000


def soak(tmp_path: Path, *extra: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "tests.unit.soakdriver", str(tmp_path), str(N), *extra]
    watched = watch(argv, dict(os.environ), tmp_path / "lab.db", tmp_path / "log", 300,
                    interval=0.02)  # fmt: skip
    assert watched.returncode == 0, watched.output[-2000:]
    return figures(watched.ticks, N)


def test_the_controller_as_it_is_stays_within_the_bounds(tmp_path: Path) -> None:
    found = soak(tmp_path)
    assert leaks(found) == [], found


def test_one_journal_line_kept_per_iteration_breaks_the_slope_bound(tmp_path: Path) -> None:
    found = soak(tmp_path, "--leak")
    broken = leaks(found)
    assert any(line.startswith("RSS grows") for line in broken), found
    # caught by its slope: the total after 10 % of a short run stays under the old bound
    assert not any("MiB after 10 %" in line for line in broken), found


def ticks_of(rss: list[int], fds: list[int] | None = None) -> list[Tick]:
    fds = fds or [10] * len(rss)
    return [
        Tick(float(i), r, f, float(10 * i)) for i, (r, f) in enumerate(zip(rss, fds, strict=True))
    ]


def test_a_one_off_step_is_not_a_trend_but_steady_growth_is() -> None:
    step = [100_000_000] * 50 + [101_000_000] * 50  # a module loaded once, mid-run
    assert slope(ticks_of(step), "rss") == pytest.approx(0.0)
    steady = [100_000_000 + 600 * 10 * i for i in range(100)]  # 600 bytes per iteration
    assert slope(ticks_of(steady), "rss") == pytest.approx(600.0, rel=0.05)
    assert RSS_SLOPE_MAX < 600


def test_a_descriptor_per_poll_breaks_the_descriptor_bound() -> None:
    ticks = ticks_of([100_000_000] * 100, fds=[10 + i // 3 for i in range(100)])
    broken = leaks(figures(ticks, 1000))
    assert any(line.startswith("descriptors grow") for line in broken), broken
