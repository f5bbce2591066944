"""--warmup's text is checked by lab.app.warmup (the rules of lab.stats.discard), as the
argparse type lab.commands.storeoptions gives the option."""

from __future__ import annotations

import argparse

import pytest

from lab.app.warmup import warmup_text
from lab.commands.storeoptions import warmup_rule


def test_a_rule_is_its_canonical_text() -> None:
    assert [warmup_text(t) for t in (" AUTO ", "007", "none")] == ["auto", "7", "none"]


def test_where_none_is_no_rule_the_option_says_what_it_may_be() -> None:
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        warmup_rule(allow_none=False)("none")
    assert str(caught.value) == "'none' must be a count of iterations (0 or more) or 'auto'"
    with pytest.raises(argparse.ArgumentTypeError, match="must be 0 or more"):
        warmup_rule(allow_none=True)("-3")
