"""The four outcomes, for times (lower is better) and throughput (higher is better)."""

from __future__ import annotations

import math

import pytest

from lab.core.errors import UsageError
from lab.stats.verdict import Outcome, decide, parse_percent

CASES = [
    # CI of (B/A − 1) in %, direction, threshold, outcome
    ((-2.9, -2.1), "lower", 0.01, Outcome.FASTER),  # the study's sysbench: 2.4 % less time
    ((2.1, 2.9), "lower", 0.01, Outcome.SLOWER),
    ((0.2, 0.6), "higher", 0.01, Outcome.EQUIVALENT),  # the study's iperf3: 0.4 %, tiny
    ((1.5, 3.0), "higher", 0.01, Outcome.FASTER),
    ((-3.0, -1.5), "higher", 0.01, Outcome.SLOWER),
    ((-1.5, -0.5), "lower", 0.01, Outcome.INCONCLUSIVE),  # certainly lower, maybe not by 1 %
    ((-0.5, 0.5), "lower", 0.001, Outcome.INCONCLUSIVE),
    ((-1.0, 1.0), "lower", 0.01, Outcome.EQUIVALENT),  # the bounds are inside
    ((-0.9, -0.1), "lower", 0.0, Outcome.FASTER),  # threshold 0: only the sign matters
]


@pytest.mark.parametrize(("ci", "direction", "threshold", "outcome"), CASES)
def test_outcomes(
    ci: tuple[float, float], direction: str, threshold: float, outcome: Outcome
) -> None:
    v = decide(ci, direction, threshold, "thp", "shp1g")  # type: ignore[arg-type]
    assert v.outcome is outcome
    assert v.outcome.value in v.text and "shp1g" in v.text and "thp" in v.text
    assert "significant" not in v.text


def test_benefit_is_turned_for_direction() -> None:
    assert decide((-3.0, -2.0), "lower", 0.01).benefit_ci == (2.0, 3.0)
    assert decide((-3.0, -2.0), "higher", 0.01).benefit_ci == (-3.0, -2.0)


def test_text_states_interval_and_threshold() -> None:
    text = decide((-2.9, -2.1), "lower", 0.01, "thp", "shp1g", 0.9999).text
    assert text == (
        "shp1g is faster than thp: 2.10 % to 2.90 % lower (99.99 % CI), beyond the 1 % threshold"
    )


def test_undefined_ratio_is_inconclusive() -> None:
    assert decide((math.nan, math.nan), "lower", 0.01).outcome is Outcome.INCONCLUSIVE


@pytest.mark.parametrize(("text", "value"), [("1%", 0.01), ("0.5 %", 0.005), ("2%", 0.02)])
def test_parse_percent(text: str, value: float) -> None:
    assert parse_percent(text) == pytest.approx(value)


@pytest.mark.parametrize(
    ("text", "spellings"),
    [("0.01", "0.01% for 0.01 percent, or 1% for"), ("2", "2% for 2 percent, or 200% for")],
)
def test_a_bare_number_is_refused_with_both_spellings(text: str, spellings: str) -> None:
    """0.01 was 1 % in lab run and 0.01 % in lab compare: now it is neither, and says so."""
    with pytest.raises(UsageError, match="needs its % sign") as err:
        parse_percent(text)
    assert spellings in str(err.value)


@pytest.mark.parametrize("text", ["abc", "-1%", "100%", ""])
def test_parse_percent_refuses(text: str) -> None:
    with pytest.raises(UsageError):
        parse_percent(text)
