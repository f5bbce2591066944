"""Property tests: on any text a parser returns finite floats or raises ParseError, only that."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.parsers.tools import PARSERS, ParseError

CAPTURES = Path(__file__).parent.parent / "fixtures" / "captures"
REAL = {
    "sysbench-memory": (CAPTURES / "sysbench-1.0.20-memory-guest-tcg.txt").read_text(),
    "iperf3": (CAPTURES / "iperf3-3.12-client-J-guest-tcg.json").read_text(),
    "time": (CAPTURES / "bash-time-make-nfs-guest.txt").read_text(),
    "none": "",
}


def check(name: str, text: str) -> None:
    try:
        parsed = PARSERS[name](text)
    except ParseError:
        return
    assert all(isinstance(v, float) and math.isfinite(v) for v in parsed.values()), parsed


@pytest.mark.parametrize("name", sorted(PARSERS))
@given(text=st.text())
@settings(max_examples=300, deadline=None)
def test_arbitrary_text(name: str, text: str) -> None:
    check(name, text)


@pytest.mark.parametrize("name", sorted(PARSERS))
@given(data=st.data())
@settings(max_examples=300, deadline=None)
def test_damaged_real_output(name: str, data: st.DataObject) -> None:
    """A real capture with a slice replaced by junk: the paths past the first regex."""
    real = REAL[name]
    start = data.draw(st.integers(0, len(real)))
    end = data.draw(st.integers(start, len(real)))
    junk = data.draw(
        st.sampled_from(["", "9" * 500, "-1", "1e999", "NaN", "{", "\n", "x", "[" * 3000])
    )
    check(name, real[:start] + junk + real[end:])


@given(digits=st.text(alphabet="0123456789", min_size=1, max_size=5000))
@settings(max_examples=50, deadline=None)
def test_time_huge_numbers(digits: str) -> None:
    check("time", f"real {digits}m{digits}.5s\nuser 0m1s\nsys 0m1s\n")


def test_deeply_nested_json_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        PARSERS["iperf3"]("[" * 100_000 + "]" * 100_000)
