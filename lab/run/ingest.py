"""Reading a guest's journal into the store: what is new, durable, and parsed.

The controller reads each journal from where it stopped, a piece at a time, and only up to
its last ``synced`` line (:func:`lab.inguest.journal.durable_length`): what a guest crash
could take back is never stored.
"""

from __future__ import annotations

from collections.abc import Iterator

from lab.core.errors import StoreError
from lab.guests.ssh import GuestShell
from lab.inguest.journal import (
    JournalEntry,
    JournalError,
    JournalEvent,
    durable_length,
    read_journal,
)
from lab.store import IterationRecord

READ_CHUNK = 1024 * 1024  # bytes of journal read (and stored) at a time


def entry_to_record(entry: JournalEntry, source: str) -> IterationRecord:
    return IterationRecord(
        iteration=entry.iteration,
        attempt=entry.attempt,
        ok=entry.ok,
        started=entry.started,
        ended=entry.ended,
        wall=entry.wall,
        user=entry.user,
        sys=entry.sys,
        exit_status=entry.exit_status,
        boot_id=entry.boot_id,
        output_tail=(entry.error + "\n" if entry.error else "") + entry.output_tail,
        source=source,
        metrics=dict(entry.metrics) if entry.ok else {},
    )


def split_journal(data: bytes, where: str) -> tuple[list[JournalEntry | JournalEvent], int]:
    """The durable lines of a journal piece parsed, and how many bytes they used."""
    used = durable_length(data)
    try:
        return read_journal(data[:used].decode(errors="replace")), used
    except JournalError as err:
        raise StoreError(f"{where}: {err}", hint=JournalError.hint) from None


def new_pieces(
    shell: GuestShell, path: str, offset: int, where: str
) -> Iterator[tuple[list[JournalEntry | JournalEvent], int]]:
    """(records, bytes used) for each piece of the journal from ``offset``, READ_CHUNK bytes
    at a time, so a long journal is never held whole; nothing if it does not exist yet. The
    caller stores a piece's records before it asks for the next, and moves its offset by the
    bytes used only then."""
    size = READ_CHUNK
    while True:
        data = shell.read_bytes(path, offset, size)
        if data is None:
            return
        records, used = split_journal(data, where)
        yield records, used
        offset += used
        if len(data) < size:  # the end of the journal
            return
        size = READ_CHUNK if used else 2 * size  # lines longer than a piece: read more
