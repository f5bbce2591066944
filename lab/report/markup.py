"""The report page's HTML pieces: text escaped for it, anchors, sections, tables, JSON."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence

from lab.core.text import shown
from lab.report.tables import TableData


def escape(text: object) -> str:
    """Text for the page: HTML escaped, its control characters shown (``\\x1b``)."""
    return html.escape(shown(text, lines=True))


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def table_html(data: TableData) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in data.header)
    rows = []
    for row in data.rows:
        cls = ' class="verdict"' if row[0] == "Verdict" else ""
        indent = ' class="sub"' if row[0].startswith(" ") else ""  # a detail of the row above
        cells = [f"<td{indent}>{escape(row[0].strip())}</td>"]
        extra = " " if row[0] == "Verdict" else ""  # the outcome names are CSS classes
        cells += [
            f'<td class="n{extra}{escape(v) if extra else ""}">{escape(v)}</td>' for v in row[1:]
        ]
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return (
        f"<table><caption>{escape(data.title)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def section(heading: str, parts: Sequence[str]) -> str:
    """``heading`` and its parts, or nothing when there are none: no empty headings."""
    parts = [part for part in parts if part]
    return heading + "".join(parts) if parts else ""


def json_block(data: object) -> str:
    return f"<pre>{escape(json.dumps(data, indent=2, sort_keys=True))}</pre>"
