"""What `lab import` says about the lines of an input it cannot read."""

from __future__ import annotations

from pathlib import Path

from lab.core.errors import UsageError
from lab.importers.records import BadLine


class MalformedInputError(UsageError):
    """Lines of an input file that cannot be read; nothing was stored."""

    def __init__(self, path: Path, bad: list[BadLine]) -> None:
        self.path = path
        self.bad = bad
        first = bad[0]
        more = f" (and {len(bad) - 1} more malformed line(s))" if len(bad) > 1 else ""
        super().__init__(
            f"{path}:{first.line}: {first.message}{more}; nothing was stored",
            hint="Fix the file, or pass --skip-bad to import the rest and skip these lines",
        )
