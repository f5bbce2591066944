"""Property tests of `lab import`'s readers: any text is read into samples and bad lines.

A reader never raises on file content (it reports bad lines; only an unusable CSV header
is a :class:`UsageError`), and `lab import`'s whole read path raises nothing but a
UsageError on any bytes. Generated well-formed files read back to exactly their numbers.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.errors import UsageError
from lab.importers.appended import (
    read_iperf3_json,
    read_iperf3_text,
    read_sysbench,
    read_time,
)
from lab.importers.ingest import ImportOptions, detect_format, plan, samples
from lab.importers.jsonl import read_jsonl
from lab.importers.limits import MAX_VALUE
from lab.importers.malformed import Malformed
from lab.importers.records import Parsed, collect
from lab.importers.tabular import read_csv

FIXTURES = Path(__file__).parent.parent / "fixtures" / "import"
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RAW_READERS = {
    "time": read_time,
    "sysbench": read_sysbench,
    "iperf3": read_iperf3_text,
    "iperf3-json": read_iperf3_json,
}
REAL = {
    "time": (FIXTURES / "time-thp.txt").read_text(),
    "sysbench": (FIXTURES / "sysbench-thp.txt").read_text(),
    "iperf3": (FIXTURES / "iperf3-text-thp.txt").read_text(),
    "iperf3-json": (FIXTURES / "iperf3-J-thp.json").read_text(),
    "csv": (FIXTURES / "results.csv").read_text(),
    "jsonl": (FIXTURES / "results.jsonl").read_text(),
}
JUNK = st.sampled_from(
    ["", "\n", "9" * 400, "-1", "1e999", "nan", "NaN", "{", "[" * 3000, '"', ",,,", "\x00", "\r"]
)
# Text that looks a little like the formats, so the junk gets past the first checks.
LOOKALIKE = st.lists(
    st.sampled_from(["real", "user", "sys", "sec", " ", "\t", "\n", "0", "7", ".", ",", "m", "s",
                     "{", "}", "[", "]", '"', ":", "-", "sysbench 1.0", "Connecting to host "]),
    max_size=60,
).map("".join)  # fmt: skip


def check(parsed: Parsed) -> None:
    lines = {s.line for s in parsed.samples} | {b.line for b in parsed.bad}
    assert all(isinstance(n, int) and n >= 1 for n in lines)
    for sample in parsed.samples:
        assert sample.metrics
        assert all(isinstance(v, float) and math.isfinite(v) for v in sample.metrics.values())
    assert all(b.message and "\n" not in b.message for b in parsed.bad)


def read(path: Path, options: ImportOptions) -> Parsed:
    """`lab import`'s whole read path, short of the store: open, tell the format, read."""
    (planned,) = plan([str(path)], options)
    malformed = Malformed(path, skip=True)
    try:
        parsed = collect(planned.format, samples(planned, options, malformed))
    finally:
        planned.input.close()
    return Parsed(parsed.format, parsed.samples, parsed.bad + malformed.listed)


def read_any(fmt: str, text: str) -> Parsed:
    if fmt == "csv":
        return read_csv(text, "f.csv", {})
    if fmt == "jsonl":
        return read_jsonl(text, "f.jsonl", {})
    return RAW_READERS[fmt](text)


@pytest.mark.parametrize("fmt", sorted(REAL))
@FAST
@given(text=st.text(max_size=300) | LOOKALIKE)
def test_any_text_is_samples_and_bad_lines(fmt: str, text: str) -> None:
    try:
        parsed = read_any(fmt, text)
    except UsageError as err:
        assert fmt == "csv" and ":1:" in err.message  # only a CSV header can be unusable
        return
    check(parsed)


@pytest.mark.parametrize("fmt", sorted(REAL))
@FAST
@given(data=st.data())
def test_damaged_real_files(fmt: str, data: st.DataObject) -> None:
    real = REAL[fmt]
    start = data.draw(st.integers(0, len(real)))
    end = data.draw(st.integers(start, min(len(real), start + 200)))
    text = real[:start] + data.draw(JUNK) + real[end:]
    try:
        parsed = read_any(fmt, text)
    except UsageError as err:
        assert fmt == "csv" and ":1:" in err.message
        return
    check(parsed)


def test_deep_nesting_and_huge_fields_are_bad_lines_not_crashes() -> None:
    """Found bugs: RecursionError from json and csv.Error from the csv module escaped."""
    assert read_jsonl("[" * 100_000 + "\n", "f", {}).bad[0].message.endswith("too deeply")
    assert "too deeply" in read_iperf3_json("[" * 100_000).bad[0].message
    huge = 'variant,workload,metric,value\n"' + "a" * 200_000 + '",w,m,1\nthp,w,m,2\n'
    parsed = read_csv(huge, "f.csv", {})
    assert [b.line for b in parsed.bad] == [2] and "field limit" in parsed.bad[0].message
    assert [s.metrics for s in parsed.samples] == [{"m": 2.0}]


@FAST
@given(st.binary(max_size=300), st.sampled_from(["auto", "csv", "jsonl", "time", "iperf3-json"]))
def test_lab_import_read_of_any_bytes_is_parsed_or_a_usage_error(
    tmp_path_factory: Any, content: bytes, fmt: str
) -> None:
    path = Path(tmp_path_factory.mktemp("imp")) / "results.txt"
    path.write_bytes(content)
    try:
        check(read(path, ImportOptions(format=fmt, variant="thp")))
    except UsageError as err:
        assert "\n" not in err.message.replace(repr(content), "")


@FAST
@given(st.text(max_size=200))
def test_detect_format_is_a_format_or_a_usage_error(text: str) -> None:
    try:
        assert detect_format(Path("results.txt"), text) in RAW_READERS.keys() | {"csv", "jsonl"}
    except UsageError as err:
        assert "--format" in str(err)


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # refused in names (limits)
NAME = st.text(
    alphabet=st.characters(blacklist_categories=["Cs", "Cc", "Z"], blacklist_characters=BIDI),
    min_size=1,
    max_size=8,
)
FINITE = st.floats(min_value=-MAX_VALUE, max_value=MAX_VALUE, width=64)  # what import stores
ROWS = st.lists(
    st.fixed_dictionaries(
        {"variant": NAME, "workload": NAME, "metric": NAME, "value": FINITE},
        optional={
            "iteration": st.integers(1, 10**6),
            "direction": st.sampled_from(["lower", "higher"]),
        },
    ),
    min_size=1,
    max_size=8,
)  # fmt: skip


def expected(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (r["variant"].strip(), r["workload"].strip(), {r["metric"].strip(): r["value"]},
         r.get("iteration"), r.get("direction"))
        for r in rows
    ]  # fmt: skip


def got(parsed: Parsed) -> list[tuple[Any, ...]]:
    return [
        (s.variant, s.workload, s.metrics, s.iteration, next(iter(s.directions.values()), None))
        for s in parsed.samples
    ]


@FAST
@given(ROWS)
def test_generated_csv_reads_back(rows: list[dict[str, Any]]) -> None:
    out = io.StringIO()
    writer = csv.DictWriter(
        out, ["variant", "workload", "metric", "value", "iteration", "direction"]
    )
    writer.writeheader()
    writer.writerows({**r, "value": repr(r["value"])} for r in rows)
    parsed = read_csv(out.getvalue(), "f.csv", {})
    assert parsed.bad == [] and got(parsed) == expected(rows)


@FAST
@given(ROWS)
def test_generated_jsonl_reads_back(rows: list[dict[str, Any]]) -> None:
    parsed = read_jsonl("".join(json.dumps(r) + "\n" for r in rows), "f.jsonl", {})
    assert parsed.bad == [] and got(parsed) == expected(rows)
    assert [s.line for s in parsed.samples] == list(range(1, len(rows) + 1))


DURATION = st.tuples(st.integers(0, 99), st.integers(0, 59), st.integers(0, 59999))


@FAST
@given(st.lists(st.tuples(DURATION, DURATION, DURATION), min_size=1, max_size=6))
def test_generated_time_blocks_read_back(blocks: list[tuple[Any, ...]]) -> None:
    def text(d: tuple[int, int, int]) -> str:
        return f"{d[0]}m{d[1]}.{d[2]:05d}s"  # bash's 2m27.08s, with more digits

    def seconds(d: tuple[int, int, int]) -> float:
        return d[0] * 60 + d[1] + d[2] / 100000

    lines = []
    for real, user, sys in blocks:
        lines += ["", f"real\t{text(real)}", f"user\t{text(user)}", f"sys\t{text(sys)}"]
    parsed = read_time("\n".join(lines) + "\n")
    assert parsed.bad == []
    assert [s.line for s in parsed.samples] == [2 + 4 * i for i in range(len(blocks))]
    for sample, (real, user, sys) in zip(parsed.samples, blocks, strict=True):
        want = {"real_s": seconds(real), "user_s": seconds(user), "sys_s": seconds(sys)}
        assert sample.metrics == pytest.approx(want, rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("fmt", ["sysbench", "iperf3", "iperf3-json"])
@settings(max_examples=10, deadline=None)
@given(copies=st.integers(1, 5))
def test_appended_real_runs_read_as_one_sample_each(fmt: str, copies: int) -> None:
    one = read_any(fmt, REAL[fmt])
    assert one.bad == []
    parsed = read_any(fmt, REAL[fmt].rstrip("\n") + "\n" + "".join(
        REAL[fmt].rstrip("\n") + "\n" for _ in range(copies - 1)))  # fmt: skip
    assert parsed.bad == []
    assert [s.metrics for s in parsed.samples] == [s.metrics for s in one.samples] * copies


def test_a_rate_of_400_digits_is_a_bad_line_not_an_infinite_sample() -> None:
    """Found by the property test above: float() of 400 digits is inf, not an error."""
    text = REAL["iperf3"]
    huge = re.sub(r"[0-9.]+( [KMGT]?bits/sec.*sender)", "9" * 400 + r"\1", text, count=1)
    assert huge != text
    parsed = read_any("iperf3", huge)
    check(parsed)
    assert parsed.bad and "too large to be a number" in parsed.bad[0].message
