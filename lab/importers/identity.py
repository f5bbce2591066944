"""What makes two inputs of `lab import` the same: their bytes, not their names or line numbers.

Each input's SHA-256 is made as it is read (:class:`lab.importers.inputs.Input`), and an
input that stored samples is remembered in the store's ``meta`` table (no new table, no new
schema version), under ``import:<sha256>:<options>``: the same bytes imported again with the
same options are a no-op, whether they come from the same file, another file or standard input.
Such a record counts only while the runs it stored into are the ones it stored into (same id,
same creation time): after ``lab runs delete`` the same bytes are stored again.

A file is also remembered by its path (``import-path:<path>``: its size, line count and
SHA-256 when it was imported last, and the runs of those bytes), for the files that hand-run
loops append to: when the file starts with those same bytes, its lines up to that count are
skipped (while those runs are all there; else those of them that the store holds) and only
what was appended since is stored, also after the same bytes were a no-op under that name.
That record counts only for the same options: with others (another ``--variant`` ...) the
lines go to other runs, and only those of them that the store holds there are skipped. A
file rewritten in place does not start with them: all of its lines are read as new. A file no
import of which was recorded (by a lab before these records) has the lines skipped that the
store holds, as then. Standard input has no such past: only its bytes count.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from lab.core.units import format_timestamp
from lab.importers.inputs import Input

RECORD = "import:"  # + sha256 of the bytes + ":" + what the options make of them
PATH = "import-path:"  # + the file's absolute path


@dataclass(frozen=True)
class Seen:
    """An import of the same bytes that the store still holds."""

    source: str  # the absolute path it was read from, or "stdin"
    at: float = field(repr=False, compare=False)  # when (epoch seconds): said, not compared
    runs: list[list[object]] = field(default_factory=list, repr=False, compare=False)

    def describe(self) -> str:
        when = format_timestamp(self.at)
        return f"from {self.source} at {when}"


class Past(NamedTuple):
    """What a file's last import read of it, when the file still starts with those bytes."""

    lines: int  # its first lines, read before (0: none)
    held: bool  # the runs they went to are all there: every one of these lines is skipped


def fingerprint(fields: Mapping[str, object]) -> str:
    """What decides where the same bytes go (format, study, variant ...), as a short hash."""
    text = json.dumps(dict(fields), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Identities:
    """The records of inputs imported before, read and written inside the import's
    transaction (``conn`` is that transaction's connection)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _get(self, key: str) -> dict[str, object] | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError):
            return None  # not one of ours: as if there were none
        return value if isinstance(value, dict) else None

    def _put(self, key: str, value: Mapping[str, object]) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value))
        )

    def _created(self, run_id: object) -> list[object] | None:
        """When run ``run_id`` was made, as a list of one; None when there is no such run."""
        row = self.conn.execute("SELECT created FROM run WHERE id=?", (run_id,)).fetchone()
        return None if row is None else [row[0]]

    def seen(self, digest: str, options: str) -> Seen | None:
        """The import of these bytes with these options, if the store still holds its runs."""
        record = self._get(f"{RECORD}{digest}:{options}")
        if record is None:
            return None
        runs = record.get("runs")
        if not self._held(runs):
            return None
        at = record.get("at")
        when = float(at) if isinstance(at, int | float) else 0.0
        return Seen(str(record.get("source")), when, runs)  # type: ignore[arg-type]

    def _held(self, runs: object) -> bool:
        """Whether each run of ``runs`` ([id, created] each) is still there."""
        if not isinstance(runs, list) or not runs:
            return False
        for entry in runs:
            if not (isinstance(entry, list) and len(entry) == 2):
                return False
            if self._created(entry[0]) != entry[1:]:
                return False  # deleted (and maybe made again since): its samples are gone
        return True

    def record(self, source: Input, options: str, run_ids: Iterable[int]) -> None:
        """Remember an input read to its end whose samples went into runs ``run_ids``."""
        runs = [[run_id, *(self._created(run_id) or [None])] for run_id in sorted(set(run_ids))]
        digest = source.digest()
        self._put(
            f"{RECORD}{digest}:{options}",
            {"source": source.source, "at": time.time(), "runs": runs},
        )
        self.remember_path(source, options, runs)

    def remember_path(self, source: Input, options: str, runs: list[list[object]]) -> None:
        """Remember what a file read to its end was, with which options, and where its
        bytes' samples are."""
        if source.source != "stdin":
            self._put(
                f"{PATH}{source.source}",
                {
                    "bytes": source.size, "lines": source.line_count,
                    "sha256": source.digest(), "runs": runs, "options": options,
                },
            )  # fmt: skip

    def appended(self, source: Input, options: str) -> Past | None:
        """What of the file was read before: the lines of its last import, when it still
        starts with the same bytes (else none, and for standard input); None for a file no
        import of which was recorded with these ``options`` (by a lab before these records, or
        with other options: any of its lines the store holds in the runs these options make
        were read before, none of those of another variant). The stream is told to check,
        as it reads, that these bytes do not change meanwhile."""
        if source.source == "stdin":
            return Past(0, False)
        record = self._get(f"{PATH}{source.source}")
        if record is None or record.get("options") != options:
            return None  # its lines went to other runs (or a lab before options said not)
        size, lines, digest = record.get("bytes"), record.get("lines"), record.get("sha256")
        if not (isinstance(size, int) and isinstance(lines, int) and size > 0 and lines > 0):
            return Past(0, False)
        if source.prefix_digest(size) != digest:
            return Past(0, False)  # rewritten in place (or cut shorter): its lines are new
        source.watch(size)
        source.expected = digest
        return Past(lines, self._held(record.get("runs")))
