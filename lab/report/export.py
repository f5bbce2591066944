"""``lab export``'s formats: every sample with its context, as CSV or JSON lines."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from typing import IO

from lab.store import EXPORT_COLUMNS, ExportRow, Store


def environment_lines(out: IO[str], store: Store, study: str | None, workload: str | None,
                       run: str | None) -> None:  # fmt: skip
    """Each selected run's environment records as JSON lines (``lab.run.environment``)."""
    for r in store.runs(study):
        if workload in (None, r.workload) and run in (None, r.key):
            for e in store.environment(r.id):
                out.write(json.dumps({
                    "record": "environment", "study": r.study, "run": r.key, "scope": e.scope,
                    "name": e.name, "recorded": e.recorded, "facts": e.facts,
                }, ensure_ascii=False) + "\n")  # fmt: skip


def write_rows(out: IO[str], rows: Iterable[ExportRow], fmt: str) -> int:
    count = 0
    if fmt == "csv":
        writer = csv.DictWriter(out, EXPORT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow(row.as_dict())
            count += 1
        return count
    for row in rows:
        data = {k: None if isinstance(v, float) and not math.isfinite(v) else v
                for k, v in row.as_dict().items()}  # fmt: skip
        out.write(json.dumps(data, ensure_ascii=False) + "\n")
        count += 1
    return count
