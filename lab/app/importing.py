"""``lab import``'s action: samples other tools wrote (hyperfine, pyperf, pytest-benchmark,
GNU time, iperf3, CSV, ...) stored as iterations, all of them or none."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from lab.app.stores import open_store_all_or_nothing
from lab.importers.ingest import ImportOptions, ImportSummary, import_inputs, plan

__all__ = ["ImportOptions", "ImportSummary", "import_files"]


def import_files(
    db: Path, names: list[str], options: ImportOptions, stdin: BinaryIO | None
) -> list[ImportSummary]:
    """Store the samples of every input ``names`` names ("-": ``stdin``) in the store at
    ``db``, one summary per input. Every input is opened and its format told before the
    store is opened: a missing file, a folder or a binary file changes nothing. The samples
    are read as they are stored, in one transaction."""
    planned = plan(names, options, stdin)
    with open_store_all_or_nothing(db) as store:
        return import_inputs(store, planned, options)
