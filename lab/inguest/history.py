"""What a journal says already happened, for the runner's next start to resume from it.

Iterations with an ok line are done. Any other iteration of the range runs with attempt
number ``max(attempt_base, last recorded attempt of that iteration + 1)``. An attempt that
began and never ended (a ``begin`` without a result) is first recorded as failed,
"interrupted". So is a guest restart that took the ``begin`` line with it (group commit, see
:mod:`lab.inguest.journalfile`): when the last start ran in another boot, never ended, and
left no open ``begin`` (and its setup command, if any, had finished), the first iteration of
its range without an ok line stands for the attempts the crash took away.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.inguest.journal import TERMINAL_EVENTS, JournalEntry, JournalEvent


@dataclass(frozen=True)
class Interrupted:
    """An attempt to record as failed: it began (or may have) and never ended."""

    iteration: int
    attempt: int
    boot_id: str  # the boot it ran in
    started: float | None
    lost_lines: bool = False  # its begin line was lost with the guest's unsynced lines


@dataclass
class History:
    ok: set[int] = field(default_factory=set)
    last_attempt: dict[int, int] = field(default_factory=dict)
    interrupted: list[Interrupted] = field(default_factory=list)

    @classmethod
    def of(cls, records: list[JournalEntry | JournalEvent], boot_id: str) -> History:
        history = cls()
        begins: dict[tuple[int, int], JournalEvent] = {}
        results: set[tuple[int, int]] = set()
        last_start: JournalEvent | None = None
        ended = set_up = False
        for record in records:
            if isinstance(record, JournalEntry):
                key = (record.iteration, record.attempt)
                results.add(key)
                history._saw(record.iteration, record.attempt)
                if record.ok:
                    history.ok.add(record.iteration)
            elif record.event == "start":
                last_start, ended, set_up = record, False, False
            elif record.event == "setup":
                set_up = True
            elif record.event in TERMINAL_EVENTS:
                ended = True
            elif record.event == "begin" and record.iteration and record.attempt:
                begins[(record.iteration, record.attempt)] = record
                history._saw(record.iteration, record.attempt)
        for (iteration, attempt), begin in begins.items():
            if (iteration, attempt) not in results:
                then = str(begin.fields.get("boot_id", "unknown"))
                history.interrupted.append(Interrupted(iteration, attempt, then, begin.time))
        if last_start is not None and not ended and not history.interrupted:
            history._lost_with_the_guest(last_start, set_up, boot_id)
        return history

    def _lost_with_the_guest(self, start: JournalEvent, set_up: bool, boot_id: str) -> None:
        """The last start ran in another boot and never ended, with no open ``begin``: the
        guest restarted and took its unsynced lines. A crash during the setup command took no
        attempt with it."""
        then = str(start.fields.get("boot_id", "unknown"))
        spec = start.fields.get("spec")
        if then == boot_id or not isinstance(spec, dict):
            return
        if spec.get("setup_argv") and not set_up:
            return
        first, last = spec.get("start_iteration"), spec.get("end_iteration")
        base = spec.get("attempt_base")
        if not (isinstance(first, int) and isinstance(last, int) and isinstance(base, int)):
            return
        lost = [i for i in range(first, last + 1) if i not in self.ok]
        if lost:
            attempt = self.next_attempt(lost[0], base)
            self.interrupted.append(Interrupted(lost[0], attempt, then, start.time, True))
            self._saw(lost[0], attempt)

    def _saw(self, iteration: int, attempt: int) -> None:
        self.last_attempt[iteration] = max(self.last_attempt.get(iteration, 0), attempt)

    def next_attempt(self, iteration: int, base: int) -> int:
        return max(base, self.last_attempt.get(iteration, 0) + 1)
