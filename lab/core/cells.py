"""Cell names: a cell of a factorial study is a variant whose name spells one level of each
factor, ``FACTOR-LEVEL`` parts joined by dots (``page-1g.prealloc-on``, ``memory-16M.cache-2K``).

The lab's own factors (:mod:`lab.guests.factors`) and the factor levels of an import's
``factor.NAME`` columns are named this way, so that ``lab compare`` finds the factors of any
study from its variants' names. A factor's name may hold dashes (``guest-thp``) but no dot; a
level holds neither, so a part splits at its last dash.
"""

from __future__ import annotations

from collections.abc import Iterable

LEVEL_SEPARATOR = "-"  # between a factor's name and its level: page-1g
CELL_SEPARATOR = "."  # between the levels of a cell: page-1g.prealloc-on


def cell_name(levels: Iterable[tuple[str, str]]) -> str:
    """The name of the cell of these (factor, level) pairs, in their order."""
    return CELL_SEPARATOR.join(f"{factor}{LEVEL_SEPARATOR}{level}" for factor, level in levels)


def factor_problem(name: str) -> str | None:
    """Why ``name`` cannot be a factor's name in a cell; None if it can."""
    if not name:
        return "a factor needs a name (factor.NAME)"
    if CELL_SEPARATOR in name:
        return f"factor {name!r} has a dot, which separates a cell's levels"
    return None


def level_problem(factor: str, level: str) -> str | None:
    """Why ``level`` cannot be a level of ``factor`` in a cell name; None if it can."""
    if not level:
        return f"factor {factor!r} has no level"
    for separator in (CELL_SEPARATOR, LEVEL_SEPARATOR):
        if separator in level:
            return f"level {level!r} of factor {factor!r} has a {separator!r}, which cell names use"
    return None


def cell_levels(name: str) -> dict[str, str] | None:
    """The factor -> level a cell's name spells, in its order; None where ``name`` is not a
    cell's (a part without a dash, an empty factor or level, a factor given twice)."""
    levels: dict[str, str] = {}
    for part in name.split(CELL_SEPARATOR):
        factor, dash, level = part.rpartition(LEVEL_SEPARATOR)
        if not (dash and factor and level) or factor in levels:
            return None
        levels[factor] = level
    return levels
