"""A sweep's axes as people write them (lab.core.sweeps): lists, ranges, products, refusals."""

from __future__ import annotations

import pytest

from lab.core.errors import UsageError
from lab.core.sweeps import (
    MAX_SWEEP_RUNS,
    Axis,
    axis_of,
    check_axes,
    is_size,
    label,
    magnitude,
    parse_axis,
    points,
)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("total_size=16M,64M,256M", ("16M", "64M", "256M")),
        ("total_size = 16M , 64M", ("16M", "64M")),  # spaces around the parts
        ("total_size=4M..4G:x4", ("4M", "16M", "64M", "256M", "1G", "4G")),
        ("block_size=1G..4T:x4", ("1G", "4G", "16G", "64G", "256G", "1T", "4T")),
        ("block_size=4k..16k:x2", ("4K", "8K", "16K")),  # written back in capitals
        ("block_size=4M..10M:x2", ("4M", "8M")),  # the end need not be on the progression
        ("block_size=4M..64M:+20M", ("4M", "24M", "44M", "64M")),
        ("block_size=1M..2M:x1.5", ("1M", "1536K")),  # the largest suffix that divides it
        ("block_size=1K..2K:x1.7", ("1K", "1741")),  # bare units: no suffix divides
        ("threads=1..8:+1", tuple(str(i) for i in range(1, 9))),
        ("threads=1..16:x2", ("1", "2", "4", "8", "16")),
        ("ratio=0.1..0.5:+0.1", ("0.1", "0.2", "0.3", "0.4", "0.5")),  # decimal: 0.3 stays 0.3
        ("x=2..2:x2", ("2",)),
        ("block_size=4K..64K:x4,1M", ("4K", "16K", "64K", "1M")),  # a range and a value
        ("mode=fast,slow", ("fast", "slow")),
    ],
)
def test_lists_and_ranges_give_the_values_in_order(text: str, values: tuple[str, ...]) -> None:
    axis = parse_axis(text)
    assert axis.values == values
    assert axis.key == text.partition("=")[0].strip()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("total_size=", "gives total_size no values"),
        ("total_size=  ", "gives total_size no values"),
        ("total_size=16M,,64M", "empty value"),
        ("total_size", "is not KEY=VALUES"),
        ("=16M", "is not KEY=VALUES"),
        ("total size=16M", "is not KEY=VALUES"),
        ("k=4M..4G", "cannot read the range"),  # no :xF
        ("k=4M..4G:4", "cannot read the range"),
        ("k=4M..4G:x", "cannot read the range"),
        ("k=4M..4G:xfour", "cannot read the factor"),
        ("k=4M..4G:x1", "must be above 1"),
        ("k=4M..4G:x0.5", "must be above 1"),
        ("k=4G..4M:x4", "runs backwards"),
        ("k=4M..4096:x4", "mixes a size and a plain number"),
        ("k=0..16:x2", "must start above 0"),
        ("k=1..8:+0", "must be above 0"),
        ("k=1..8:+1M", "a step with a size suffix needs ends with one too"),
        ("k=4Q..8Q:x2", "cannot read '4Q'"),
        ("k=4M..4G:x1.0001", f"more than {MAX_SWEEP_RUNS} runs"),  # the typo of x4
        ("k=1..100:+1", f"more than {MAX_SWEEP_RUNS} runs"),
    ],
)
def test_bad_axes_are_refused_saying_why(text: str, said: str) -> None:
    with pytest.raises(UsageError, match=said.replace("(", r"\(").replace("+", r"\+")):
        parse_axis(text)


def test_a_long_range_stops_being_made_once_past_the_bound() -> None:
    # a million values would take seconds and memory to make before being refused
    with pytest.raises(UsageError, match="more than 64 runs"):
        parse_axis("k=1..1000000000:+1")


def test_the_cartesian_product_varies_the_first_key_slowest() -> None:
    axes = [Axis("block_size", ("4K", "1M")), Axis("threads", ("1", "2", "4"))]
    got = points(axes)
    assert len(got) == 6
    assert got[:3] == [
        (("block_size", "4K"), ("threads", "1")),
        (("block_size", "4K"), ("threads", "2")),
        (("block_size", "4K"), ("threads", "4")),
    ]
    assert got[3] == (("block_size", "1M"), ("threads", "1"))
    assert points([Axis("a", ("1",))]) == [(("a", "1"),)]
    assert label(got[4]) == "block_size=1M, threads=2"


def test_checks_refuse_a_key_twice_a_value_twice_and_a_product_past_the_bound() -> None:
    check_axes([Axis("a", ("1", "2")), Axis("b", ("x", "y"))])  # fine
    with pytest.raises(UsageError, match="sweeps a twice"):
        check_axes([Axis("a", ("1",)), Axis("a", ("2",))])
    with pytest.raises(UsageError, match="16M is 16M again"):
        check_axes([Axis("a", ("16M", "64M", "16M"))])
    with pytest.raises(UsageError, match="16384K is 16M again"):  # the same size written twice
        check_axes([Axis("a", ("16M", "16384K"))])
    with pytest.raises(UsageError, match=r"2\.0 is 2 again"):
        check_axes([Axis("a", ("2", "2.0"))])
    many = [Axis("a", tuple(str(i) for i in range(9))), Axis("b", tuple(str(i) for i in range(8)))]
    with pytest.raises(UsageError, match=r"\(9 a × 8 b\) makes 72 runs; a sweep makes at most 64"):
        check_axes(many)
    check_axes([many[0], Axis("b", tuple(str(i) for i in range(7)))])  # 63: fine


def test_magnitudes_order_numbers_and_sizes_and_leave_words_alone() -> None:
    assert magnitude("64M") == 64 * 1024**2
    assert magnitude("4k") == 4096
    assert magnitude("1.5G") == 1.5 * 1024**3
    assert magnitude("12") == 12.0 and magnitude(3) == 3.0 and magnitude(0.5) == 0.5
    assert magnitude("fast") is None and magnitude(True) is None and magnitude("4MB") is None
    assert is_size("64M") and not is_size("64") and not is_size("fast")


def test_a_study_file_gives_a_list_or_a_range_string() -> None:
    assert axis_of("total_size", ["4M", "64M"], "w").values == ("4M", "64M")
    assert axis_of("threads", [1, 2, 4], "w").values == ("1", "2", "4")
    assert axis_of("total_size", "4M..64M:x4", "w").values == ("4M", "16M", "64M")
    with pytest.raises(UsageError, match="w: total_size is an empty list"):
        axis_of("total_size", [], "w")
    with pytest.raises(UsageError, match="must be a list of values or a range string"):
        axis_of("total_size", 4, "w")
    with pytest.raises(UsageError, match="holds True, which is not a string or a number"):
        axis_of("threads", [1, True], "w")
    with pytest.raises(UsageError, match="holds an empty value"):
        axis_of("total_size", ["4M", " "], "w")
    with pytest.raises(UsageError, match="holds a value with a comma"):
        axis_of("mode", ["a,b", "c"], "w")  # lab run --sweep could not be given it
