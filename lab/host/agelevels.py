"""Host age levels: how a study names the age ``lab host age`` holds the host at, as the
level of a factor ``age`` in cell names (issue 42).

A cell's level holds no dot and no dash (:mod:`lab.core.cells`), so an order-9 unusable free
space index of 0.8 is spelled ``f80``: ``f`` and the index in percent, a whole number from 1
to 100 (``lab host age``'s range). ``fresh`` is the host as ``lab host age --undo`` leaves it:
nothing held by the lab's fragmenter (not a host without fragmentation of its own). A run
records the level its host was held at as its ``host_aged`` fact (``0.8``, or ``no``);
:func:`level_of_fact` reads it back as a level name.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lab.core.errors import LabError, UsageError
from lab.host.aging import MAX_LEVEL
from lab.host.telemetry import unusable_index

AGE_FACTOR = "age"
FRESH = "fresh"
LOWEST_PERCENT = 1
HIGHEST_PERCENT = round(MAX_LEVEL * 100)
# every level name, low (fresh) first: how an age factor's levels are ordered in a fit
AGE_LEVELS = (FRESH, *(f"f{p}" for p in range(LOWEST_PERCENT, HIGHEST_PERCENT + 1)))
_AGED = re.compile(r"f(\d{1,3})")


def age_index(level: str) -> float | None:
    """The unusable free space index ``level`` names (``f80`` -> 0.8), None for ``fresh``."""
    if level == FRESH:
        return None
    match = _AGED.fullmatch(level)
    if match is None or not LOWEST_PERCENT <= int(match[1]) <= HIGHEST_PERCENT:
        raise UsageError(
            f"host age level {level!r} is not fresh or f{LOWEST_PERCENT}..f{HIGHEST_PERCENT}",
            hint="Spell an aged host fNN, NN its unusable free space index in percent (f80 is"
            ' `lab host age --level 0.8`): e.g. age = ["fresh", "f80"]',
        )
    return int(match[1]) / 100


def age_level(index: float | None) -> str:
    """The level name of an unusable free space index (None: ``fresh``)."""
    return FRESH if index is None else f"f{round(index * 100)}"


def level_of_fact(fact: str | None) -> str | None:
    """The level name of a run's ``host_aged`` fact (``no`` -> fresh, ``0.8`` -> f80);
    None where it says nothing readable (not recorded, "yes", a level off the f-scale)."""
    if fact is None:
        return None
    if fact == "no":
        return FRESH
    try:
        level = age_level(float(fact))
        age_index(level)
    except (ValueError, UsageError):
        return None
    return level


def check_host_age(level: str, fact: str, index_now: float | None = None) -> None:
    """Refuse a run asked to run at age ``level`` on a host whose ``host_aged`` fact (what
    ``lab host age`` holds it at) says another; a host nothing holds aged passes for an aged
    level where its own unusable index (``index_now``) is at or above it already."""
    index = age_index(level)
    held = level_of_fact(fact)
    by_itself = held == FRESH and index is not None and (index_now or 0.0) >= index
    if held != level and not by_itself:
        to = "lab host age --undo" if index is None else f"lab host age --level {index:g}"
        raise UsageError(
            f"the run is asked for at host age {level}, and the host is held at"
            f" {held or fact} (lab host age --status)",
            hint=f"Run `{to}` first, or drop --host-age",
        )


def host_index(read: Callable[[str], str]) -> float | None:
    """The host's order-9 unusable free space index now (None where it cannot be read)."""
    try:
        return unusable_index(read("/proc/buddyinfo"))
    except (OSError, ValueError, ZeroDivisionError, LabError):
        return None
