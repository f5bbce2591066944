"""A guest's journal read into the store: what it gained since last time, counted into the
guest's progress."""

from __future__ import annotations

from lab.inguest.journal import TERMINAL_EVENTS, JournalEntry, JournalEvent
from lab.run.ingest import entry_to_record, new_pieces
from lab.run.ownership import JournalOwnership
from lab.run.runstate import GuestProgress


def _taken(live: set[tuple[int, int]], item: JournalEntry | JournalEvent) -> bool:
    """Whether ``item`` is an attempt already taken from a stepped runner's answer (it is
    then dropped from ``live``: its line is read once)."""
    if not isinstance(item, JournalEntry) or (item.iteration, item.attempt) not in live:
        return False
    live.discard((item.iteration, item.attempt))
    return True


class JournalIngest(JournalOwnership):
    """The guests' journals streamed into the store."""

    def ingest(self, guest: GuestProgress) -> int:
        """Store what the guest's journal gained, durably, since last time; returns the new
        attempts. The offset moves only once the store holds a piece, so a store that
        refused one (a full disk) leaves the controller exactly where the store is."""
        self.claim_journal(guest)
        guest.journal_read_at = self.clock.monotonic()
        added = 0
        where = f"{guest.record.name}:{guest.runner.journal}"
        for records, used in new_pieces(guest.shell, guest.runner.journal, guest.offset, where):
            guest.journal_seen = True
            added += self._take(guest, records)
            guest.offset += used
            if used:  # the runner said something (an empty piece is the journal's end)
                guest.heard_at = self.clock.monotonic()
        return added

    def _take(
        self, guest: GuestProgress, items: list[JournalEntry | JournalEvent], later: bool = False
    ) -> int:
        """Store the attempts among ``items`` (``later``: at the next :meth:`store_taken`),
        then count them into ``guest``."""
        source = f"journal:{guest.record.name}:{self.key}"
        if guest.live:  # lines of attempts already taken from a stepped runner's answers
            items = [i for i in items if not _taken(guest.live, i)]
        new = [entry_to_record(item, source) for item in items if isinstance(item, JournalEntry)]
        added = 0
        if new and later:
            self.untaken.append((guest, new))
        elif new:
            added = self.store.record(self.run_id, guest.guest_id, new)
        first = self.metrics[0].name if self.metrics else None
        for item in items:
            if isinstance(item, JournalEvent):
                ours = guest.runner_started  # not a start of a controller before this one
                if item.event in TERMINAL_EVENTS:
                    guest.check_runner = True
                    guest.runner_started = False
                error = str(item.fields.get("error"))
                if ours and item.event == "gave_up" and error.startswith("setup"):
                    # no attempt began, so no failure counts it: a setup that always fails
                    # would start runners for ever; MAX_TROUBLES of them stop the run
                    self._trouble(guest, f"its {error}{setup_said(items)}")
                continue
            guest.troubles = 0
            if item.boot_id:
                guest.last_boot = item.boot_id
            if item.ok:
                guest.completed.add(item.iteration)
                if item.wall is not None:
                    guest.walls.append(item.wall)
                if first is not None and first in item.metrics:
                    guest.moments.add(item.metrics[first])
                    if self.rule is not None:
                        guest.by_iteration[item.iteration] = item.metrics[first]
            else:
                guest.failed_attempts += 1
                guest.last_error = item.error or f"exit status {item.exit_status}"
        return added


def setup_said(items: list[JournalEntry | JournalEvent]) -> str:
    """The end of what the last failed setup command printed, as a clause (or nothing)."""
    for item in reversed(items):
        if isinstance(item, JournalEvent) and item.event == "setup":
            tail = str(item.fields.get("output_tail") or "").strip()
            return f"; it said: {tail[-300:]}" if tail else ""
    return ""
