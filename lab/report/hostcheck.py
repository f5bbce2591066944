"""``lab host check``'s rows (:mod:`lab.host.row`) as a table or as JSON."""

from __future__ import annotations

import json
from dataclasses import asdict

from rich.table import Table

from lab.core.context import Context
from lab.core.text import cell
from lab.host.row import MISSING, OK, WARN, Row


def rows_json(rows: list[Row]) -> str:
    ready = all(row.state != MISSING for row in rows)
    return json.dumps({"ready": ready, "rows": [asdict(r) for r in rows]}, indent=2)


def print_rows(ctx: Context, rows: list[Row]) -> None:

    styles = {OK: "green", WARN: "yellow", MISSING: "bold red"}
    table = Table("requirement", "state", "detail", "fix")
    for row in rows:
        style = styles.get(row.state)  # not available: plain, nothing to look at
        # what was read from the host (a THP mode's "[never]") is text, never markup
        table.add_row(cell(row.name), cell(row.state, style or ""), cell(row.detail), cell(row.fix))
    ctx.out.print(table)
