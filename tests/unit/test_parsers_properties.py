"""Property tests: on any text a parser returns finite floats or raises ParseError, only that."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.parsers.tools import (
    CONFIGURED,
    PARSERS,
    ParseError,
    parse_bash_time,
    parse_iperf3_json,
    parse_sysbench_memory,
    parser_for,
)

CAPTURES = Path(__file__).parent.parent / "fixtures" / "captures"
REAL = {
    "sysbench-memory": (CAPTURES / "sysbench-1.0.20-memory-guest-tcg.txt").read_text(),
    "sysbench-oltp": (CAPTURES / "sysbench-1.0.20-oltp_read_write-guest-tcg.txt").read_text(),
    "iperf3": (CAPTURES / "iperf3-3.12-client-J-guest-tcg.json").read_text(),
    "time": (CAPTURES / "bash-time-make-nfs-guest.txt").read_text(),
    "lab-stream": (CAPTURES / "stream-lab-host.txt").read_text(),
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
@settings(max_examples=100, deadline=None)
def test_arbitrary_text(name: str, text: str) -> None:
    check(name, text)


@pytest.mark.parametrize("name", sorted(PARSERS))
@given(data=st.data())
@settings(max_examples=100, deadline=None)
def test_damaged_real_output(name: str, data: st.DataObject) -> None:
    """A real capture with a slice replaced by junk: the paths past the first regex."""
    real = REAL[name]
    start = data.draw(st.integers(0, len(real)))
    end = data.draw(st.integers(start, len(real)))
    junk = data.draw(
        st.sampled_from(["", "9" * 500, "-1", "1e999", "NaN", "{", "\n", "x", "[" * 3000])
    )
    check(name, real[:start] + junk + real[end:])


OPTIONS = {
    "regex": {"pattern": r"^(?P<rate>\S+) ops/s(?: in (?P<took>\S*))?"},
    "json": {"sent": "end.sum_sent.bits_per_second", "first": "intervals.0.sum.bytes"},
}


@pytest.mark.parametrize("name", sorted(CONFIGURED))
@given(text=st.one_of(st.text(), st.text().map(lambda t: f"{t} ops/s in {t}")))
@settings(max_examples=100, deadline=None)
def test_configured_parsers_on_arbitrary_text(name: str, text: str) -> None:
    parse = parser_for(name, OPTIONS[name])
    try:
        parsed = parse(text)
    except ParseError:
        return
    assert all(isinstance(v, float) and math.isfinite(v) for v in parsed.values()), parsed


@given(digits=st.text(alphabet="0123456789", min_size=1, max_size=5000))
@settings(max_examples=50, deadline=None)
def test_time_huge_numbers(digits: str) -> None:
    check("time", f"real {digits}m{digits}.5s\nuser 0m1s\nsys 0m1s\n")


def test_deeply_nested_json_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        PARSERS["iperf3"]("[" * 100_000 + "]" * 100_000)


# -- generated well-formed output reads back to the numbers it was made from ------------------


DECIMAL = st.decimals(min_value=0, max_value=10**9, places=2, allow_nan=False, allow_infinity=False)


def sysbench_text(ops: int, per_s: Decimal, mib: Decimal, mib_s: Decimal, total: Decimal,
                  latency: dict[str, Decimal]) -> str:  # fmt: skip
    lat = "".join(f"         {name}:{' ' * 20}{value}\n" for name, value in latency.items())
    return (
        "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\n"
        f"Total operations: {ops} (   {per_s} per second)\n\n"
        f"{mib} MiB transferred ({mib_s} MiB/sec)\n\n\n"
        "General statistics:\n"
        f"    total time:                          {total}s\n"
        f"    total number of events:              {ops}\n\n"
        f"Latency (ms):\n{lat}\n"
        "Threads fairness:\n    events (avg/stddev):           32.0000/0.00\n"
    )


@given(
    ops=st.integers(0, 10**12), per_s=DECIMAL, mib=DECIMAL, mib_s=DECIMAL, total=DECIMAL,
    latency=st.dictionaries(st.sampled_from(["min", "avg", "max", "sum", "95th percentile",
                                             "99th percentile"]), DECIMAL),
)  # fmt: skip
@settings(max_examples=100, deadline=None)
def test_generated_sysbench_reads_back(
    ops: int, per_s: Decimal, mib: Decimal, mib_s: Decimal, total: Decimal,
    latency: dict[str, Decimal],
) -> None:  # fmt: skip
    parsed = parse_sysbench_memory(sysbench_text(ops, per_s, mib, mib_s, total, latency))
    want = {
        "total_time_s": float(total), "throughput_mib_s": float(mib_s),
        "transferred_mib": float(mib), "operations": float(ops),
        "operations_per_s": float(per_s), "events": float(ops),
    }  # fmt: skip
    for name, value in latency.items():
        key = f"p{name.split('th')[0]}" if "percentile" in name else name
        want[f"latency_{key}_ms"] = float(value)
    assert parsed == want


@given(
    st.tuples(st.none() | st.integers(0, 99), st.none() | st.integers(0, 59), DECIMAL),
    st.sampled_from([".", ","]),
    st.booleans(),
)
@settings(max_examples=100, deadline=None)
def test_generated_time_reads_back(
    parts: tuple[int | None, int | None, Decimal], comma: str, suffix: bool
) -> None:
    hours, minutes, seconds = parts
    text = (f"{hours}h" if hours is not None else "") + (
        f"{minutes}m" if minutes is not None else ""
    )
    text += str(seconds).replace(".", comma) + ("s" if suffix else "")
    want = float((hours or 0) * 3600 + (minutes or 0) * 60 + seconds)
    parsed = parse_bash_time(f"real\t{text}\nuser {text}\nsys\t{text}\n")
    assert parsed == {"real_s": want, "user_s": want, "sys_s": want}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
    | st.integers(10**300, 10**400),
    lambda inner: st.lists(inner, max_size=2)
    | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)  # fmt: skip


@given(sent=JSON_VALUES, received=JSON_VALUES, retransmits=JSON_VALUES | st.just(None))
@settings(max_examples=120, deadline=None)
def test_iperf3_json_numbers_are_taken_exactly_or_refused(
    sent: Any, received: Any, retransmits: Any
) -> None:
    doc = {"end": {"sum_sent": {"bits_per_second": sent, "retransmits": retransmits},
                   "sum_received": {"bits_per_second": received}}}  # fmt: skip
    try:
        parsed = PARSERS["iperf3"](json.dumps(doc))
    except ParseError:
        return
    assert parsed["sender_bits_per_s"] == float(sent)
    assert parsed["receiver_bits_per_s"] == float(received)
    assert parsed.get("retransmits") == (None if retransmits is None else float(retransmits))
    assert parse_iperf3_json(json.dumps(doc)) == parsed
