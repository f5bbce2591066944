"""``lab plan`` refuses inf, nan and values that mean nothing (a negative time, a zero sd)
in one line naming the option, exit 2: --iteration-time inf printed an OverflowError
traceback, and -1 planned a negative duration."""

from __future__ import annotations

import pytest

from lab.cli import main

BASE = ["plan", "--sd", "1", "--mean", "100"]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--iteration-time", "inf", "--iteration-time inf is not a duration in seconds"),
        ("--iteration-time", "nan", "--iteration-time nan is not a duration in seconds"),
        ("--iteration-time", "-1", "--iteration-time -1 is not a duration in seconds"),
        ("--iteration-time", "0", "--iteration-time 0 is not a duration in seconds"),
        ("--sd", "inf", "--sd inf is not a standard deviation"),
        ("--sd", "nan", "--sd nan is not a standard deviation"),
        ("--sd", "-1", "--sd -1 is not a standard deviation"),
        ("--sd", "0", "--sd 0 is not a standard deviation"),
        ("--mean", "inf", "--mean inf is not a mean"),
        ("--mean", "nan", "--mean nan is not a mean"),
        ("--effect", "inf", "--effect inf is not a finite number"),
        ("--effect", "nan", "--effect nan is not a finite number"),
        ("--effect", "1e308", "cannot plan with sd 1, effect 1e+308"),
        ("--threshold", "inf", "--threshold 'inf' must be 0 or more"),
        ("--threshold", "nan", "--threshold 'nan' must be 0 or more"),
        ("--threshold", "1e308", "threshold ±1e+308: (34, 'Numerical result out of range')"),
        ("--confidence", "nan", "--confidence nan is not a percentage"),
        ("--power", "inf", "--power inf is not a probability"),
        ("--autocorrelation", "nan", "--autocorrelation nan is not a correlation"),
    ],
)
def test_a_meaningless_number_is_one_line_naming_its_option(
    capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    status = main([*BASE, option, value])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("lab: error: ") and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_an_absolute_threshold_checks_sd_too(capsys: pytest.CaptureFixture[str]) -> None:
    """A threshold in the metric's unit skipped every check of the others."""
    from lab.core.errors import UsageError
    from lab.stats.planning import plan_samples
    from lab.stats.verdict import Threshold

    with pytest.raises(UsageError, match="cannot plan with sd -1"):
        plan_samples(-1.0, 2.0, threshold=Threshold(0.5, relative=False))
    with pytest.raises(UsageError, match="iteration time inf"):
        plan_samples(1.0, 2.0, 99.0, iteration_time=float("inf"))


def test_ordinary_numbers_still_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, "--iteration-time", "30", "--json"]) == 0
    assert '"n":' in capsys.readouterr().out
