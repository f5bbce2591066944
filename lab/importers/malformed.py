"""What `lab import` says about the lines of an input it cannot read, and when it stops reading.

Without ``--skip-bad`` a malformed line fails the import (its transaction is rolled back, so
nothing is stored), but reading goes on to name the others too, and to find those only the
store can tell (a second value for an iteration): up to :data:`LISTED` of them, where it stops.
A line too long stops it at once: whatever follows is not a results file's. With
``--skip-bad`` every malformed line is skipped and counted, and the first :data:`LISTED` are
listed; memory does not grow with their number.
"""

from __future__ import annotations

from pathlib import Path

from lab.core.errors import UsageError
from lab.importers.inputs import MAX_LINE
from lab.importers.limits import one_line
from lab.importers.records import BadLine

LISTED = 100  # malformed lines kept to be named; the rest are counted


class MalformedInputError(UsageError):
    """Lines of an input file that cannot be read; nothing was stored.

    ``bad`` lists the first malformed lines; ``count`` is how many were found in all, and
    ``stopped`` the line where reading stopped before the end of the input (None if it did not).
    """

    def __init__(
        self, path: Path, bad: list[BadLine], count: int | None = None, stopped: int | None = None
    ) -> None:
        self.path = path
        self.bad = bad
        self.count = len(bad) if count is None else count
        self.stopped = stopped
        first = bad[0]
        notes = [f"and {self.count - 1} more malformed line(s)"] if self.count > 1 else []
        notes += [f"reading stopped at line {stopped}"] if stopped is not None else []
        more = f" ({'; '.join(notes)})" if notes else ""
        super().__init__(
            f"{path}:{first.line}: {first.message}{more}; nothing was stored",
            hint="Fix the file, or pass --skip-bad to import the rest and skip these lines",
        )


class Malformed:
    """The malformed lines of one input, collected as it is read."""

    def __init__(self, path: Path, skip: bool) -> None:
        self.path = path
        self.skip = skip
        self.listed: list[BadLine] = []
        self.count = 0

    @property
    def failed(self) -> bool:
        """Whether the import has failed: read on only to name more malformed lines."""
        return self.count > 0 and not self.skip

    def add(self, bad: BadLine) -> None:
        self.count += 1
        if len(self.listed) < LISTED:  # whatever made it, its message is one bounded line
            message = one_line(bad.message)
            bad = bad if message == bad.message else BadLine(bad.line, message)
        if len(self.listed) < LISTED:
            self.listed.append(bad)
        elif not self.skip:
            raise self.error(stopped=bad.line)

    def too_long(self, line: int) -> None:
        """A line past MAX_LINE: skipped with --skip-bad, else the end of reading."""
        self.add(BadLine(line, f"the line is longer than {MAX_LINE >> 20} MiB"))
        if not self.skip:
            raise self.error(stopped=line)

    def check(self) -> None:
        """Raise the error of an import that failed, once its input has been read."""
        if self.failed:
            raise self.error()

    def error(self, stopped: int | None = None) -> MalformedInputError:
        listed = sorted(self.listed, key=lambda b: b.line)
        return MalformedInputError(self.path, listed, self.count, stopped)
