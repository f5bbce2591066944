"""What `lab import` reads: an input that must be text."""

from __future__ import annotations

from pathlib import Path

from lab.core.errors import UsageError


class NotTextError(UsageError):
    """A binary file given to `lab import`: nothing was read or stored."""

    def __init__(self, path: Path, why: str) -> None:
        self.path = path
        super().__init__(
            f"{path} is not a text results file ({why}); nothing was stored",
            hint="Import CSV, JSONL, or the text output of time, sysbench or iperf3"
            " (see `lab import --help`)",
        )
