"""Property tests of what people type: sizes, CPU lists, ``--hugepages``, ``--pair``, names.

On any text each parser returns a value or raises :class:`UsageError` (a one-line message),
never anything else; formatted values parse back to themselves; generated well-formed input
parses to the numbers it was generated from.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.commands.guestoptions import parse_pair
from lab.core.errors import UsageError
from lab.core.names import check_name
from lab.core.units import format_cpuset, format_kib, parse_cpuset, parse_size_kib
from lab.host.facts import parse_hugepages_option

FACTOR = {"": 1, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3}
# Text with the characters these parsers care about, so the junk reaches past the first check.
TYPED = st.text(alphabet=st.sampled_from("0123456789.,:-@^ KMGTkmgtiB\t\n\x00٣²"), max_size=40)
ANY_TEXT = st.one_of(st.text(max_size=60), TYPED)
FAST = settings(max_examples=100, deadline=None)


@FAST
@given(ANY_TEXT)
def test_size_of_any_text_is_a_positive_number_or_a_usage_error(text: str) -> None:
    try:
        kib = parse_size_kib(text)
    except UsageError:
        return
    assert isinstance(kib, int) and kib > 0


@FAST
@given(st.integers(1, 2**50))
def test_formatted_sizes_parse_back(kib: int) -> None:
    assert parse_size_kib(format_kib(kib)) == kib


@FAST
@given(
    st.integers(1, 10**6),
    st.sampled_from(sorted(FACTOR)),
    st.sampled_from(["", "iB", "B", "ib"]),
    st.sampled_from(["", " ", "\t"]),
)
def test_generated_sizes_parse_to_their_value(
    number: int, suffix: str, tail: str, pad: str
) -> None:
    text = f"{pad}{number}{suffix.lower() if number % 2 else suffix}{tail if suffix else ''}{pad}"
    assert parse_size_kib(text) == number * FACTOR[suffix]


@FAST
@given(st.text(alphabet="0123456789", min_size=1, max_size=500), st.sampled_from(sorted(FACTOR)))
def test_long_numbers_are_exact_or_refused(digits: str, suffix: str) -> None:
    """Found a bug: 400 nines overflowed a float into an OverflowError."""
    try:
        kib = parse_size_kib(digits + suffix)
    except UsageError:
        return
    assert kib == int(digits) * FACTOR[suffix]


@FAST
@given(st.integers(0, 4096), st.integers(1, 1023), st.sampled_from(["M", "G", "T"]))
def test_fractional_sizes_are_exact(whole: int, part: int, suffix: str) -> None:
    fraction = f"{part / 1024:.10f}".rstrip("0")[2:] or "0"
    text = f"{whole}.{fraction}{suffix}"
    kib = FACTOR[suffix] * whole + FACTOR[suffix] * part // 1024
    assert parse_size_kib(text) == kib


@FAST
@given(ANY_TEXT)
def test_cpu_list_of_any_text_is_sorted_ids_or_a_usage_error(text: str) -> None:
    """Found a bug: '²' passed str.isdigit() and then failed int() with a ValueError."""
    try:
        cpus = parse_cpuset(text)
    except UsageError:
        return
    assert cpus == sorted(set(cpus)) and all(isinstance(c, int) and c >= 0 for c in cpus)


def test_a_cpu_range_beyond_any_host_is_refused_not_expanded() -> None:
    """Found a bug: '0-99999999999' built a set of 10^11 ids."""
    import pytest

    with pytest.raises(UsageError, match="beyond any host"):
        parse_cpuset("0-99999")
    with pytest.raises(UsageError, match="cannot read CPU list"):
        parse_cpuset("0-99999999999")


@FAST
@given(st.sets(st.integers(0, 512), max_size=40))
def test_cpu_lists_round_trip(cpus: set[int]) -> None:
    assert parse_cpuset(format_cpuset(cpus)) == sorted(cpus)


HUGEPAGE_SIZES = st.sampled_from(
    [("2M", 2048), ("1G", 1048576), ("2048K", 2048), ("1GiB", 1048576)]
)


@FAST
@given(ANY_TEXT)
def test_hugepages_option_of_any_text_is_a_list_or_a_usage_error(text: str) -> None:
    try:
        wanted = parse_hugepages_option(text)
    except UsageError:
        return
    for page_kib, count, node in wanted:
        assert page_kib > 0 and count >= 0 and (node is None or node >= 0)


@FAST
@given(
    st.lists(
        st.tuples(HUGEPAGE_SIZES, st.integers(0, 4096), st.none() | st.integers(0, 63)),
        max_size=6,
    )
)
def test_generated_hugepages_options_parse_to_their_values(
    items: list[tuple[tuple[str, int], int, int | None]],
) -> None:
    text = ",".join(
        f"{size}:{count}" + (f"@{node}" if node is not None else "")
        for (size, _), count, node in items
    )
    expected = [(kib, count, node) for (_, kib), count, node in items]
    assert parse_hugepages_option(text) == expected


@FAST
@given(ANY_TEXT)
def test_pair_of_any_text_is_two_names_or_a_usage_error(text: str) -> None:
    try:
        names = parse_pair(text)
    except UsageError:
        return
    assert len(names) == 2 and all(n and n == n.strip() and "," not in n for n in names)


@FAST
@given(st.text(max_size=80))
def test_a_name_is_plain_or_refused(name: str) -> None:
    try:
        assert check_name("image", name) == name
    except UsageError as err:
        assert "\n" not in err.message.replace(repr(name), "")
        return
    assert not set(name) & set("/\\;$`'\" \t\n|&<>*?(){}[]~!#")
    assert ".." not in name and not name.startswith(("-", "."))
