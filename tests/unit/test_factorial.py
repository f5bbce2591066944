import pytest

from lab.stats.factorial import effects_2k

# Jain, Art of Computer Systems Performance Analysis, Example 18.1-18.3 (2^2, r = 3).
JAIN = {
    (-1, -1): [15, 18, 12],
    (1, -1): [45, 48, 51],
    (-1, 1): [25, 28, 19],
    (1, 1): [75, 75, 81],
}


def test_jain_example_18_effects_intervals_and_shares() -> None:
    got = {e.term: e for e in effects_2k(["A", "B"], JAIN, confidence=0.90)}
    assert [got[t].estimate for t in ("I", "A", "B", "AB")] == pytest.approx([41, 21.5, 9.5, 5])
    # Published: SST 7032 = SSA 5547 + SSB 1083 + SSAB 300 + SSE 102.
    assert got["A"].share == pytest.approx(5547 / 7032)
    assert got["B"].share == pytest.approx(1083 / 7032)
    assert got["AB"].share == pytest.approx(300 / 7032)
    # Published 90 % intervals: q0 (39.08, 42.91), qA (19.58, 23.41),
    # qB (7.58, 11.41), qAB (3.08, 6.91).
    assert got["I"].ci == pytest.approx((39.08, 42.91), abs=0.01)
    assert got["A"].ci == pytest.approx((19.58, 23.41), abs=0.01)
    assert got["B"].ci == pytest.approx((7.58, 11.41), abs=0.01)
    assert got["AB"].ci == pytest.approx((3.08, 6.91), abs=0.01)
