"""Whose a guest's journal is, and the runner started on it.

A journal is this store's run's only if that run claimed it (``KEY.owner`` in the guest: the
key and the moment the store's run was created). A journal the guest kept from a run that
was deleted since, or that another store holds, is retired (renamed ``KEY.retired-STAMP``)
and the run starts from its first iteration; with ``adopt`` its iterations are taken up
instead. Either way one line says so, with their count and dates."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from lab.core.inventory import LOCAL
from lab.core.units import format_timestamp
from lab.inguest.journal import JournalEntry
from lab.run.hostside import guest_infos, nfs_source
from lab.run.ingest import new_pieces
from lab.run.runstate import GuestProgress
from lab.run.trouble import GuestTrouble
from lab.run.workload import GuestInfo


def _date(when: float | None) -> str:
    return format_timestamp(when or 0)


class JournalOwnership(GuestTrouble):
    """A guest's journal claimed for this run (or retired) before a runner is started on it."""

    def start_runner(
        self, guest: GuestProgress, first: int, last: int, stepped: bool = False
    ) -> None:
        """Start the guest's runner for ``first``..``last``: detached, or ``stepped`` (in
        the foreground of a channel the controller holds, an iteration per step)."""
        self.claim_journal(guest)
        if guest.runner_started:  # the last one ended without a word
            guest.runner_started = False
            self._trouble(guest, f"its runner ended without finishing{guest.runner.log_tail()}")
        # With its journal the runner numbers attempts itself; a guest that lost it (a new
        # disk) must not reuse attempt numbers the store already holds.
        base = 1 if guest.journal_seen else self.store.max_attempt(self.run_id, guest.guest_id) + 1
        # The runner gives up once this start has spent what is left of --max-failures.
        budget = max(1, self.plan.max_failures - guest.failed_attempts + 1)
        spec = self.plan.workload.spec(self.plan.params, self.guest_info(guest))
        spec = replace(spec.for_range(first, last, attempt_base=base, max_failures=budget),
                       backing=True)  # the guest's THP counters too  # fmt: skip
        if stepped:
            guest.channel = guest.runner.steps(spec)
        else:
            guest.runner.start(spec)
        guest.runner_started, guest.heard_at = True, self.clock.monotonic()

    def guest_info(self, guest: GuestProgress) -> GuestInfo:
        state = self.state_of(guest.record)
        nfs = ""
        if guest.record.host == LOCAL:  # other hosts run no workload that needs NFS
            nfs = nfs_source(Path(self.ctx.config.state_dir), state.host_ip)
        return guest_infos(state, [guest.record], self.plan.runner_dir, nfs)[0]

    def claim_journal(self, guest: GuestProgress) -> None:
        """Make sure the guest's journal of this key is this run's before anything is read
        from it or a runner is started on it (once per guest and start)."""
        if guest.claimed:
            return
        runner = guest.runner
        owner = runner.owner()
        if owner != self.owner and runner.has_journal():
            if owner is None and self.existed:  # written before journals had owners
                pass
            elif self.plan.adopt:
                self._say_journal(guest, "took up", "as --adopt asks")
            else:
                self._retire(guest)
        if owner != self.owner:
            runner.claim(self.owner)
        guest.claimed = True

    def _retire(self, guest: GuestProgress) -> None:
        guest.runner.stop()  # a runner of that journal may still be at it
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(self.clock.now()))
        summary = self._summary(guest)
        target = guest.runner.retire(stamp)
        self._say_journal(guest, "retired", f"now {target}; pass --adopt to take them up"
                          " instead", summary)  # fmt: skip
        guest.check_runner = True

    def _summary(self, guest: GuestProgress) -> tuple[int, float | None, float | None]:
        """The iterations done in the guest's journal, and the first and last moments."""
        done: set[int] = set()
        first = last = None
        where = f"{guest.record.name}:{guest.runner.journal}"
        for items, _ in new_pieces(guest.shell, guest.runner.journal, 0, where):
            for item in items:
                if isinstance(item, JournalEntry):
                    done.update([item.iteration] if item.ok else [])
                    first = item.started if first is None else min(first, item.started)
                    end = item.ended or item.started
                    last = end if last is None else max(last, end)
        return len(done), first, last

    def _say_journal(
        self,
        guest: GuestProgress,
        verb: str,
        then: str,
        summary: tuple[int, float | None, float | None] | None = None,
    ) -> None:
        count, first, last = summary or self._summary(guest)
        when = f" ({_date(first)} to {_date(last)})" if first is not None else ""
        self.ctx.note(
            f"{verb} {count} iterations of run {self.key} found in {guest.record.name}'s"
            f" journal{when}, which this store's run did not start; {then}"
        )
