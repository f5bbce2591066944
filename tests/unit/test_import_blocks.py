"""A CSV's lines are read a block at a time, column by column, when they are plain rows:
a block is read so even when it brings contexts (a metric of a group, a boot) met for the
first time, several rows each, as a long-format file's first block and every new boot do."""

from __future__ import annotations

from lab.importers.rowfields import blank_fields
from lab.importers.tabular import _Columns, read_csv

HEADER = "variant,workload,iteration,boot,metric,value"


def test_a_block_of_new_contexts_is_read_column_by_column() -> None:
    lines = [
        f"{variant},w,{i},b{i // 3},{metric},{i}.5\n"
        for variant in ("thp", "shp1g") for i in range(1, 7) for metric in ("t_s", "rss_kib")
    ]  # fmt: skip
    layout = _Columns(HEADER.split(","), blank_fields({}))
    rows = layout.block(lines, 2)
    assert rows is not None and len(rows) == 24  # not handed on to be read row by row
    assert len({row[1] for row in rows}) == 2 * 3 * 2  # variants, boots, metrics
    parsed = read_csv(HEADER + "\n" + "".join(lines), "f.csv", {})
    assert [(r[0], r[1].metric, r[1].boot, r[2], r[3]) for r in rows] == [
        (s.line, *s.metrics, s.boot, *s.metrics.values(), s.iteration) for s in parsed.samples
    ]


def test_a_block_with_a_context_that_cannot_be_stored_is_read_row_by_row() -> None:
    lines = ["thp,w,1,b,t_s,1.5\n", "thp,w,2,b,t_s,2.5\n", "thp,w,3,b,t_s,3.5\n"]
    lines[1] = lines[1].replace("t_s", "t\x1bs")  # a control character: refused with its line
    layout = _Columns(HEADER.split(","), blank_fields({}))
    assert layout.block(lines, 2) is None
    assert layout.block(lines[::2], 2) is not None
