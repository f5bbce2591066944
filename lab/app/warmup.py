"""What a warm-up rule may say where a user gives one (``--warmup`` of ``lab run``,
``lab compare``, ``lab report``, ``lab plan``): the rules are :mod:`lab.stats.discard`'s."""

from __future__ import annotations


def warmup_text(text: str, allow_none: bool = True) -> str:
    """``"auto"``, ``"none"`` (with ``allow_none``) or a count K, as the rule's text; else
    ValueError saying what it may be."""
    from lab.stats.discard import parse_warmup  # deferred: heavy (scipy)

    return parse_warmup(text, allow_none=allow_none)
