"""smallest_holding against a scan of every n: the same answer from every first guess."""

from __future__ import annotations

import pytest

from lab.stats.monotone import smallest_holding


@pytest.mark.parametrize("floor", [1, 2])
@pytest.mark.parametrize("threshold", [1, 2, 3, 7, 8, 9, 64, 99, 100, 101])
def test_the_smallest_n_is_a_scans_from_any_start(floor: int, threshold: int) -> None:
    cap = 100
    calls: list[int] = []

    def holds(n: int) -> bool:
        assert floor <= n <= cap, n  # never asked outside its bounds
        calls.append(n)
        return n >= threshold

    scan = next((n for n in range(floor, cap + 1) if n >= threshold), None)
    for start in (floor, 5, 50, cap, 500):
        calls.clear()
        assert smallest_holding(holds, start=start, floor=floor, cap=cap) == scan
        assert len(calls) <= 20  # galloping and bisecting, not a scan
