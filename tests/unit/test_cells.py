"""Cell names (lab.core.cells): a cell's factor levels in its name, and back."""

from __future__ import annotations

import pytest

from lab.core.cells import cell_levels, cell_name, factor_problem, level_problem


@pytest.mark.parametrize(
    ("levels", "name"),
    [
        ({"page": "1g", "prealloc": "on"}, "page-1g.prealloc-on"),
        ({"guest-thp": "never", "page": "thp"}, "guest-thp-never.page-thp"),
        ({"memory": "16M", "cache": "2K"}, "memory-16M.cache-2K"),
    ],
)
def test_a_cell_name_spells_its_levels_and_is_read_back(levels: dict[str, str], name: str) -> None:
    assert cell_name(levels.items()) == name
    assert cell_levels(name) == levels and list(cell_levels(name) or {}) == list(levels)


@pytest.mark.parametrize("name", ["thp", "shp1g", "-on", "page-", "page-1g.page-2m", "a-b..c-d"])
def test_a_name_that_is_not_a_cell_has_no_levels(name: str) -> None:
    assert cell_levels(name) is None


def test_factor_and_level_names_that_would_break_a_cell_name_are_refused() -> None:
    assert factor_problem("page") is None and factor_problem("guest-thp") is None
    assert "dot" in (factor_problem("a.b") or "") and "name" in (factor_problem("") or "")
    assert level_problem("page", "1g") is None
    assert "'-'" in (level_problem("page", "1-g") or "")
    assert "'.'" in (level_problem("page", "1.5") or "")
    assert "no level" in (level_problem("page", "") or "")
