"""Runners a schedule waits on: a stepped runner's channel (an iteration per line, answered
on it) and a detached runner's journal."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence

from lab.core.errors import GuestError
from lab.guests.channel import ChannelClosed, wait_any
from lab.inguest.journal import JournalEntry, JournalError, parse_journal_line
from lab.run.ingesting import JournalIngest
from lab.run.runstate import GuestProgress
from lab.run.schedules import STATUS_EVERY

LOOK_UP_EVERY = 5.0  # seconds between libvirt lookups of a stepped guest that is silent

# A stepped runner answers each step on its channel, and its journal (the durable record,
# and what says a runner stopped) is read at most this often while the channel lives.
JOURNAL_EVERY_S = 10.0


class SteppedRunners(JournalIngest):
    """Steps sent to the guests' runners, their answers taken, and whether each is busy."""

    def start_one(self, iteration: int, guest: GuestProgress) -> bool:
        """Have the guest's stepped runner do ``iteration``: one line on its channel, the
        runner started (for the rest of the pass) when it has none. No store access: runs
        in a thread."""
        if guest.channel is None or guest.channel.closed:
            guest.channel = None
            self.start_runner(guest, iteration, self.upto, stepped=True)
        assert guest.channel is not None
        guest.stepping, guest.heard_at = iteration, self.clock.monotonic()
        with contextlib.suppress(ChannelClosed):  # the runner ended: busy() finds out why
            guest.channel.send_line(f"go {iteration}")
        return True

    def running(self, guest: GuestProgress) -> bool:
        self.claim_journal(guest)  # a runner of a journal not this run's is stopped first
        return guest.runner.running()

    def busy(self, guest: GuestProgress, iteration: int) -> bool:
        """Whether the runner started for ``iteration`` is still at it (the alternate and
        sync schedules wait on this while the guest's command is being measured).

        A stepped runner (the channel start_one opened) says so on its channel. Otherwise
        its journal says, read as always (one SFTP request: nothing starts in the guest).
        The runner itself is asked (a Python start in the guest, beside the measured
        command: about a second of the guest's CPU under emulation, where it was asked every
        quarter of a poll) only when the journal has said nothing for STATUS_EVERY s (a
        runner killed without a word), or of a runner this controller did not start.
        """
        if guest.channel is not None:
            return self._stepping(guest, iteration)
        return self._busy_detached(guest, iteration)

    def _busy_detached(self, guest: GuestProgress, iteration: int) -> bool:
        started = guest.runner_started
        self.ingest(guest)  # notes when the journal grew
        if iteration in guest.completed or (started and not guest.runner_started):
            return False  # its result is in, or a line saying the runner ended
        if not guest.runner_started:
            return self.running(guest)
        now = self.clock.monotonic()
        if now - guest.heard_at < STATUS_EVERY:
            return True
        guest.heard_at = now
        return self.running(guest)

    def _stepping(self, guest: GuestProgress, iteration: int) -> bool:
        """Whether the stepped runner is still at ``iteration``: its answers so far are
        taken (stored at once); a channel that closed ends the step."""
        channel = guest.channel
        assert channel is not None
        for line in channel.lines():
            self._answer(guest, line)
        if guest.channel is None:  # "busy": a runner of this key that a dead controller
            guest.stepping = None  # left holds its lock; waited for as a detached one is
            return self._busy_detached(guest, iteration)
        if channel.closed:  # the runner ended, or was killed: the next step starts one
            guest.channel = guest.stepping = None
            self.ingest(guest)  # what it journalled, and why it ended
            return False
        now = self.clock.monotonic()
        silent = now - guest.heard_at
        if guest.stepping == iteration and silent >= LOOK_UP_EVERY:
            # Silent: a long iteration, or a guest gone without closing the connection
            # (destroyed: no reset ever comes). Its host's libvirt says whether it still runs,
            # a lookup every LOOK_UP_EVERY s: if not, nothing can answer, and a read of its
            # journal over the dead connection would wait out the request's bound (60 s) to
            # learn it; a domain gone stops the run at once (with_guest). Past STATUS_EVERY
            # its journal says which; a read that fails is a GuestError, and with_guest
            # waits for the guest from there.
            if now - guest.looked_up_at >= LOOK_UP_EVERY:
                guest.looked_up_at = now
                down = self.domain_down(guest)
                if down is not None:
                    raise GuestError(f"{guest.record.name} does not answer: {down}")
            if silent >= STATUS_EVERY:
                guest.heard_at = now
                self.ingest(guest)
        return guest.stepping == iteration

    def _answer(self, guest: GuestProgress, line: str) -> None:
        """One line from a stepped runner: ready, busy, an attempt's result, or an event."""
        try:
            values = json.loads(line)
        except ValueError:
            values = None
        if not isinstance(values, dict):
            self.ctx.warn(f"{guest.record.name}: the runner said {line[:120]!r}; ignored")
            return
        guest.heard_at = self.clock.monotonic()
        if values.get("busy"):  # another runner of this key holds its lock: wait for it
            assert guest.channel is not None
            guest.channel.close()
            guest.channel = None
            return
        if "ready" in values:  # what its start journalled (a killed one's attempts) is in
            self.ingest(guest)
            return
        if "skipped" in values:  # done in the journal, not yet in the store
            guest.stepping = None
            self.ingest(guest)
            return
        if values.get("event") == "gave_up":  # its setup or its failures: its journal, read
            return  # as the channel closes, says why (and what the setup command printed)
        try:
            record = parse_journal_line(line + "\n")
        except JournalError as err:
            self.ctx.warn(f"{guest.record.name}: the runner's answer is not a journal line: {err}")
            return
        if record is None:
            return
        if isinstance(record, JournalEntry):
            guest.stepping = None
            self._take(guest, [record], later=True)  # stored while the next step runs
            guest.live.add((record.iteration, record.attempt))
        else:
            self._take(guest, [record])

    def settle(self, guest: GuestProgress) -> None:
        """After a step: the journal read (a detached runner's results come that way), or
        for a stepped runner, whose answers carried them, only every JOURNAL_EVERY_S."""
        recent = self.clock.monotonic() - guest.journal_read_at < JOURNAL_EVERY_S
        if guest.channel is not None and recent:
            return
        self.ingest(guest)

    def store_taken(self) -> None:
        """Store the attempts taken from stepped runners' answers and not yet stored. Each
        commit waits for the disk (``synchronous=FULL``: 3.7 ms here), so it is done while
        the guests work, not between their steps; each attempt is in its guest's journal
        meanwhile, so a controller killed before this loses nothing."""
        untaken, self.untaken = self.untaken, []
        for guest, records in untaken:
            self.store.record(self.run_id, guest.guest_id, records)

    def wait(self, guests: Sequence[GuestProgress], seconds: float) -> None:
        """Sleep until a stepped runner of ``guests`` answers, for at most ``seconds``
        (storing what the last answers carried first: the guests are at work)."""
        self.store_taken()
        channels = [g.channel for g in guests if g.channel is not None]
        if channels and len(channels) == len(guests):
            wait_any(channels, seconds)
        else:
            self.clock.sleep(seconds)

    def close_channels(self) -> None:
        """End the stepped runners: each finishes what it is at, journals it and exits."""
        for guest in self.guests:
            channel, guest.channel, guest.stepping = guest.channel, None, None
            if channel is None:
                continue
            with contextlib.suppress(GuestError):
                channel.send_line("end")
            channel.close()
            guest.runner_started = False  # told to end: it did not end without a word
