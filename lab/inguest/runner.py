"""One start of the runner: the setup command, then the iterations of the spec's range.

Every attempt is journalled (:mod:`lab.inguest.journalfile`), failed ones included, and a
failed attempt is not repeated within one start: the controller decides about repeats. Just
before an attempt's timed command starts the runner writes
``{"event": "begin", "iteration": i, "attempt": a}``. On start it resumes
(:mod:`lab.inguest.history`): a command a SIGKILLed runner left running is ended, interrupted
attempts are recorded as failed, iterations with an ok line are skipped.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from lab.inguest import backing
from lab.inguest.child import ITERATION, Child, Children, boot_id
from lab.inguest.history import History, Interrupted
from lab.inguest.journal import JournalEntry
from lab.inguest.journalfile import GROUP_S, JournalFile
from lab.inguest.runfiles import RunFiles
from lab.inguest.spec import Spec, SpecError
from lab.parsers import tools

# The guest's THP counters are read around an attempt that starts this long or more after
# the last attempt read around started: around every attempt when iterations last longer,
# around about one in every BACKING_EVERY_S / iteration when they are shorter. Under
# emulation a reading cost a fifth of what the runner adds to an iteration of `null`; the
# counters of a 25 ms iteration say little anyway (they count the whole guest, the runner's
# own work included).
BACKING_EVERY_S = 0.5


@dataclass
class Tally:
    """A start's attempts so far, by outcome."""

    ok: int = 0
    failed: int = 0


class Runner:
    """The detached process: runs setup, then the iterations, and journals them."""

    def __init__(
        self, files: RunFiles, spec: Spec, log: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.files, self.spec, self.log, self.clock = files, spec, log, clock
        self.boot_id = boot_id()
        self.children = Children(files)
        self.cwd = files.dir / (spec.cwd or ".")  # an absolute cwd replaces DIR
        self.env = {**os.environ, **spec.env}
        self.proc = backing.ProcFiles()  # /proc/vmstat, kept open
        self.thp_kib = backing.thp_kib() if spec.backing else None
        self.counters: dict[str, int] | None = None
        self.sampled_at = -math.inf  # when the last attempt read around began
        try:  # configured once per start: a regex compiles here, not at every sample
            self.parse = tools.parser_for(spec.parser, spec.parser_options)
        except tools.OptionsError as err:
            raise SpecError(f"spec field 'parser_options': {err}") from None

    def iteration(self, journal: JournalFile, iteration: int, attempt: int) -> JournalEntry | None:
        """Run one attempt and return its journal record; None if stopped before it began."""
        spec, children = self.spec, self.children
        env = {**self.env, ITERATION: str(iteration), "LAB_ATTEMPT": str(attempt)}
        carried, self.counters = self.counters, None  # the THP counters after the last attempt
        if spec.clean_argv:
            journal.flush()  # the last attempt's result, before this command starts
            carried = None  # the clean command ran since: read them again
            clean = children.run(spec.clean_argv, self.cwd, env, spec.timeout_s)
            if clean.stopped:
                return None
            if clean.error is not None:
                error = f"clean command failed: {clean.error}"
                return self.entry(iteration, attempt, Child(clean.started, clean.ended), {}, error)
        # untimed, like the journal: the last attempt's reading if nothing ran since; and
        # at most once per BACKING_EVERY_S, so that short iterations are read in a sample
        before = None
        if spec.backing and (now := self.clock()) - self.sampled_at >= BACKING_EVERY_S:
            self.sampled_at = now
            before = carried if carried is not None else backing.counters(self.proc)
        journal.event("begin", iteration=iteration, attempt=attempt, boot_id=self.boot_id)
        child = children.run(spec.argv, self.cwd, env, spec.timeout_s)
        if child.error is not None:
            return self.entry(iteration, attempt, child, {}, child.error)
        metrics, problem = self.metrics(child)
        if before is not None and problem is None:
            found, self.counters = backing.measure(before, self.proc, self.thp_kib)
            metrics.update(found)
        return self.entry(iteration, attempt, child, metrics, problem)

    def metrics(self, child: Child) -> tuple[dict[str, float], str | None]:
        """The spec's metrics from the parser's output and the runner's own timings."""
        spec = self.spec
        parsed: dict[str, float | None] = {}
        if spec.parser != "none":
            scratch = self.children.scratch
            source = scratch.out if spec.parse_from == "stdout" else scratch.err
            try:
                parsed.update(self.parse(scratch.read(source)))
            except tools.ParseError as err:
                return {}, f"parse error: {err}"
            except Exception as err:  # a parser bug must not end the run
                return {}, f"parser {spec.parser!r} failed: {type(err).__name__}: {err}"
        # A source is looked up in the parser's output first, then in the runner's own
        # timings; one loop, as this runs after every command
        available = {"wall_s": child.wall, "user_s": child.user, "sys_s": child.sys}
        if parsed:
            available.update(parsed)
        metrics: dict[str, float] = {}
        missing = []
        for key, name in spec.metrics_from.items():
            value = available.get(key)
            if value is None:
                missing.append(key)
            else:
                metrics[name] = float(value)
        if missing:
            return {}, f"no {', '.join(missing)} in the output of parser {spec.parser!r}"
        return metrics, None

    def entry(
        self, iteration: int, attempt: int, child: Child, metrics: dict[str, float],
        error: str | None, boot: str | None = None, tail: bool = True,
    ) -> JournalEntry:  # fmt: skip
        return JournalEntry(
            iteration=iteration, attempt=attempt, ok=error is None, started=child.started,
            ended=child.ended, wall=child.wall, user=child.user, sys=child.sys,
            exit_status=child.exit_status, boot_id=boot or self.boot_id, metrics=metrics,
            error=error, output_tail=self.children.scratch.tail() if tail else "",
        )  # fmt: skip

    def interrupted(self, what: Interrupted) -> JournalEntry:
        """The failed record of an attempt that began (or may have) and never ended."""
        if what.lost_lines:
            error = (
                "interrupted: the guest restarted during this run, before the journal's last"
                f" lines (at most {GROUP_S:g} s of attempts) reached its disk; this attempt"
                " stands for them"
            )
        else:
            killed = what.boot_id == self.boot_id
            why = "the runner was killed" if killed else "the guest restarted"
            error = f"interrupted: {why} during this attempt"
        started = what.started if what.started is not None else 0.0
        child = Child(started)
        return self.entry(what.iteration, what.attempt, child, {}, error, what.boot_id, False)

    def serve(self) -> int:
        """The whole start, in the detached process; returns its exit status."""
        journal = JournalFile(self.files.path("journal"), self.log, self.clock)
        try:
            return self._serve(journal)
        finally:  # a result held for the next line is written even if a bug ends the start
            journal.flush()

    def begin(self, journal: JournalFile) -> tuple[History, list[int]] | None:
        """A start's first steps: the ``start`` line, what a killed runner left ended and
        recorded, then the setup command. The history and the iterations to do; None if
        the setup command failed (the runner gave up)."""
        spec, children = self.spec, self.children
        children.open_scratch()
        history = History.of(journal.records, self.boot_id)
        first, last = spec.start_iteration, spec.end_iteration
        todo = [i for i in range(first, last + 1) if i not in history.ok]
        journal.event(
            "start", pid=os.getpid(), boot_id=self.boot_id, todo=len(todo), spec=spec.to_dict()
        )
        children.end_orphans(self.log)
        for what in history.interrupted:
            journal.entry(self.interrupted(what))
        journal.flush()
        if history.interrupted:
            # On disk, with a synced line, now: the controller reads only what a synced line
            # follows, and no step's answer carries these. Left to the next group, the last
            # attempt of a run came after the controller's last read, and a guest reset's
            # failed attempt never reached the store (seen on the real pair).
            journal.sync()
        if todo and spec.setup_argv and not children.stop_requested:
            setup = children.run(spec.setup_argv, self.files.dir, self.env, None)
            journal.event("setup", ok=setup.error is None, wall=setup.wall, error=setup.error,
                          exit_status=setup.exit_status,
                          output_tail=children.scratch.tail())  # fmt: skip
            if setup.error is not None and not setup.stopped:
                journal.event("gave_up", error=f"setup command failed: {setup.error}")
                return None
        return history, todo

    def _serve(self, journal: JournalFile) -> int:
        spec, children = self.spec, self.children
        begun = self.begin(journal)
        if begun is None:
            return 1
        history, todo = begun
        tally = Tally()
        for iteration in todo:
            if children.stop_requested:
                break
            entry = self.attempt(journal, history, iteration, tally)
            if entry is None:
                break
            if self.gives_up(journal, entry, tally):
                return 1
        if children.stop_requested:
            journal.event("stopped", ok=tally.ok, failed=tally.failed)
            return 0
        first, last = spec.start_iteration, spec.end_iteration
        journal.event("done", ok=tally.ok, failed=tally.failed, start_iteration=first,
                      end_iteration=last)  # fmt: skip
        return 0

    def attempt(
        self, journal: JournalFile, history: History, iteration: int, tally: Tally
    ) -> JournalEntry | None:
        """One attempt at ``iteration`` (numbered after the journal's last), journalled and
        counted; None when the runner was stopped before its command began. The detached
        runner and the stepped one both take their attempts here."""
        attempt = history.next_attempt(iteration, self.spec.attempt_base)
        entry = self.iteration(journal, iteration, attempt)
        if entry is None:
            return None
        journal.entry(entry)
        history.last_attempt[iteration] = attempt
        if entry.ok:
            history.ok.add(iteration)
        tally.ok, tally.failed = tally.ok + entry.ok, tally.failed + (not entry.ok)
        return entry

    def gives_up(self, journal: JournalFile, entry: JournalEntry, tally: Tally) -> bool:
        """Whether this start's failures reached the spec's ``max_failures`` (journalled as
        ``gave_up``): the controller then decides what happens to the run."""
        limit = self.spec.max_failures
        if not limit or tally.failed < limit or self.children.stop_requested:
            return False
        journal.event("gave_up", iteration=entry.iteration, attempt=entry.attempt,
                      failures=tally.failed, error=entry.error)  # fmt: skip
        return True
