"""The runner driven step by step, for the paired schedules (``sync``, ``alternate``).

``runner.pyz step`` runs in the foreground of one SSH channel that the controller holds for
the whole run. It starts as any runner does (the lock, the ``start`` line, what a killed
runner left, the setup command), says ``{"ready": …}`` on its standard output, then waits
for lines on its standard input:

* ``go I``: run iteration I (attempt numbered from the journal, as a detached runner does),
  journal it, and answer with the journal's line for it; an iteration the journal holds as
  done is answered ``{"skipped": I}`` without running again.
* ``end``, or the end of standard input (the controller closed the channel, or died): the
  runner journals ``stopped`` and exits. A command being timed then is not cut short: the
  iteration ends, is journalled, and the runner exits after it.

Nothing is started per step in the guest and nothing polls: under emulation a runner's start
cost about a second of the guest's CPU, where the step costs one line each way. The journal
stays the durable record and the resume path, with its group commit
(:mod:`lab.inguest.journalfile`): the answer is sent once the result is written (so the
kernel holds it: a runner killed after it loses nothing), before the fsync of its group.

SIGTERM (``runner stop``) ends the command being timed, as for a detached runner.
"""

from __future__ import annotations

import json
import os
import select
from collections.abc import Callable

from lab.inguest.journalfile import JournalFile
from lab.inguest.runner import Runner, Tally

IDLE_WAKE_S = 0.5  # how often a runner waiting for a step looks whether it was stopped


class Steps:
    """The step loop over ``read_fd`` (the controller's lines) and ``write`` (answers)."""

    def __init__(self, runner: Runner, read_fd: int, write: Callable[[bytes], None]) -> None:
        self.runner, self.read_fd, self.write = runner, read_fd, write
        self.buffer = b""
        self.closed = False  # the controller's side is gone: nothing more is answered

    def say(self, line: bytes) -> None:
        if self.closed:
            return
        try:
            self.write(line)
        except OSError:  # the channel closed under us (a killed controller): finish quietly
            self.closed = True

    def next_line(self) -> str | None:
        """The controller's next line; None at the end of its input, or once stopped."""
        children = self.runner.children
        while b"\n" not in self.buffer:
            if children.stop_requested:
                return None
            ready, _, _ = select.select([self.read_fd], [], [], IDLE_WAKE_S)
            if not ready:
                continue
            chunk = os.read(self.read_fd, 4096)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode(errors="replace").strip()

    def serve(self) -> int:
        journal = JournalFile(self.runner.files.path("journal"), self.runner.log,
                              self.runner.clock)  # fmt: skip
        try:
            return self._serve(journal)
        finally:
            journal.flush()

    def _serve(self, journal: JournalFile) -> int:
        runner = self.runner
        begun = runner.begin(journal)
        if begun is None:
            journal.flush()
            self.say(_answer({"event": "gave_up", "error": "setup command failed"}))
            return 1
        history, _ = begun
        self.say(_answer({"ready": True, "pid": os.getpid()}))
        tally = Tally()
        while (line := self.next_line()) is not None and line != "end":
            word, _, number = line.partition(" ")
            if word != "go" or not number.isdigit():
                runner.log(f"ignoring the step {line[:80]!r}: expected 'go N' or 'end'")
                continue
            iteration = int(number)
            if iteration in history.ok:
                self.say(_answer({"skipped": iteration}))
                continue
            entry = runner.attempt(journal, history, iteration, tally)
            if entry is None:  # stopped before the command began
                break
            journal.flush()  # the kernel holds it before the controller hears of it
            self.say(entry.line())
            if runner.gives_up(journal, entry, tally):
                self.say(_answer({"event": "gave_up", "error": entry.error}))
                return 1
        journal.event("stopped", ok=tally.ok, failed=tally.failed)
        return 0


def _answer(values: dict[str, object]) -> bytes:
    return (json.dumps(values) + "\n").encode()
