"""Where `lab import` puts samples: a group's target (its run and guest in the store), an
input's route to it (its numbering), and the batch that holds numbered samples until they
are stored."""

from __future__ import annotations

import json
from collections.abc import Mapping
from itertools import chain
from typing import Any

import numpy as np

from lab.importers.limits import MAX_METRICS, shown
from lab.importers.made import Lines, Made
from lab.importers.malformed import Malformed
from lab.importers.records import Attempt, BadLine
from lab.store import MetricInfo, Store
from lab.store.bulk import ATTEMPT_WIDTH, Bulk, Mark, Numbered

# study, workload, variant, guest, host, run key (None: the import's own run of the
# workload), run parameters (JSON text; None: {"imported": true}), the run's schedule
Group = tuple[str, str, str, str, str, str | None, str | None, str | None]
IMPORTED = {"imported": True}  # the parameters of a run that the input does not name


class Target:
    """Where one group's samples go: its run and guest, the metrics this import declared for
    its run, and the highest iteration number stored or written (a number above it is new).
    The run is the one the input names (``lab export``'s run and params columns), each kept
    apart; else ``STUDY/import/WORKLOAD``."""

    __slots__ = (
        "declared", "group", "guest_id", "high", "made", "metrics", "params", "run_id",
        "run_key", "schedule", "study_id", "target_n",
    )  # fmt: skip

    def __init__(self, store: Store, group: Group) -> None:
        study, workload, variant, guest, host, run, params, schedule = group
        self.group = group
        self.study_id = store.ensure_study(study, "imported with lab import")
        self.run_key = run or f"{study}/import/{workload}"
        self.params = IMPORTED if params is None else json.loads(params)
        # a run the store holds keeps its schedule and n (ensure_run sets what it is given)
        held = store.run_record(study, self.run_key)
        self.schedule = schedule if held is None else held.schedule
        self.target_n = None if held is None else held.target_n
        self.run_id = store.ensure_run(
            self.study_id, self.run_key, workload, self.params, self.schedule, self.target_n, []
        )
        self.guest_id = store.ensure_guest(self.study_id, guest, variant, host=host)
        self.declared: set[str] = set()  # by this import: ensure_run checks each once
        # the run's metrics, stored or declared (one set for the targets of a run: share())
        self.metrics = set() if held is None else {m.name for m in held.metrics}
        self.high = store.max_iteration(self.run_id, self.guest_id)
        self.made = Made(self.high)  # the iterations this import made, above those stored

    def share(self, other: Target) -> None:
        """This target's run is ``other``'s: they count the run's metrics together."""
        other.metrics |= self.metrics
        self.metrics = other.metrics

    def declare(self, store: Store, info: MetricInfo) -> str | None:
        """Declare a metric for the run, once; why it cannot be (the run would have more than
        MAX_METRICS), else None."""
        if info.name not in self.metrics and len(self.metrics) >= MAX_METRICS:
            return (
                f"run {shown(self.run_key)} would have more than {MAX_METRICS:,} metrics"
                f" ({shown(info.name)} and on)"
            )
        self.metrics.add(info.name)
        workload = self.group[1]
        store.ensure_run(
            self.study_id,
            self.run_key,
            workload,
            self.params,
            self.schedule,
            self.target_n,
            [info],
        )
        self.declared.add(info.name)
        return None


class Route:
    """A group's target as one input sees it: its numbering, and its lines stored before."""

    __slots__ = ("counters", "first", "imported", "target")

    def __init__(self, target: Target, imported: bytearray | None) -> None:
        self.target = target
        self.first = target.high + 1
        self.counters: dict[str, int] = {}
        self.imported = imported

    def had(self, line: int) -> bool:
        """Whether the store held the group's sample of the input's ``line`` before."""
        imported = self.imported
        return (
            imported is not None
            and line >> 3 < len(imported)
            and bool(imported[line >> 3] >> (line & 7) & 1)
        )

    def next(self, metric: str) -> int:
        """The number of the next sample of ``metric`` that the input does not number: in
        the order of its lines, after those stored before it."""
        count = self.counters.get(metric, 0)
        self.counters[metric] = count + 1
        return self.first + count


_NO_ATTEMPT = (1, None, None, None, None, None)  # an Attempt's but the source: attempt 1


class _New:
    """A target's new iterations in a batch, as ``Bulk.insert_iterations`` and
    ``Bulk.insert_samples`` take them: what each row has of its own, one field after the
    other (the run, guest and metric they share are given once); and by number, which row
    each iteration is, with the names of its metrics.

    Keyed by a number, not by (target, number): a tuple that holds the target is an object a
    row that the garbage collector follows until the batch is stored (2.4 s of collections
    in an import of 2,000,000 rows, 1.0 s without).

    What grows with an iteration's samples grows in place: its metrics are a set, and the
    lines of its second and later samples a list, joined to its source when the batch is
    stored. A tuple made anew and a source string copied at every sample took time growing
    with the square of an iteration's metrics (100,000 metrics of one iteration: 104 s)."""

    __slots__ = ("at", "iterations", "lines", "marks", "own", "samples", "width")

    def __init__(self) -> None:
        # (number, source) a row while no iteration of the batch has a start; then (number,
        # started, source): width is 2, then 3; once one has an Attempt (lab export's rows),
        # (number, started, *attempt's fields, source): ATTEMPT_WIDTH. The source is last.
        self.iterations: list[Any] = []
        self.width = 2
        self.samples: dict[str, list[Any]] = {}  # metric -> (number, value) a row
        self.at: dict[int, tuple[int, set[str]]] = {}  # number -> (row, its metrics)
        self.lines: dict[int, list[int]] = {}  # row -> the lines of its later samples
        self.marks: list[Any] = []  # (number, mark) of each iteration with a boot or placement
        self.own: set[int] = set()  # rows whose source is the file's, not its lines

    def iteration(
        self, number: int, started: float | None, source: str, attempt: Attempt | None = None
    ) -> int:
        """A new iteration's row, and which row it is."""
        if attempt is not None and self.width != ATTEMPT_WIDTH:
            self.widen(ATTEMPT_WIDTH)
        elif started is not None and self.width == 2:  # the first start: every row gets one
            self.widen(3)
        row = len(self.iterations) // self.width
        if self.width == 2:
            self.iterations += (number, source)
        elif self.width == 3:
            self.iterations += (number, started, source)
        elif attempt is None:
            self.iterations += (number, started, *_NO_ATTEMPT, source)
        else:
            if attempt.source is not None:
                source = attempt.source
                self.own.add(row)
            self.iterations += (number, started, *attempt[:-1], source)
        return row

    def widen(self, width: int) -> None:
        """Every row made wider: a start (None) where it had none, then an attempt's fields
        (those of attempt 1, which an import gives an iteration)."""
        rows, before = self.iterations, self.width
        self.iterations = []
        for at in range(0, len(rows), before):
            number, source = rows[at], rows[at + before - 1]
            started = rows[at + 1] if before > 2 else None
            if width == 3:
                self.iterations += (number, started, source)
            else:
                self.iterations += (number, started, *_NO_ATTEMPT, source)
        self.width = width

    def also(self, row: int, line: int) -> None:
        """Iteration ``row`` is also the sample of ``line``: the line joins its source (unless
        that is the one the file gave)."""
        if row not in self.own:
            lines = self.lines.get(row)
            if lines is None:
                self.lines[row] = [line]
            else:
                lines.append(line)

    def sources(self) -> list[Any]:
        """The rows, each source with the lines of its later samples joined to it."""
        rows, width = self.iterations, self.width
        for row, lines in self.lines.items():
            at = row * width + width - 1
            rows[at] = f"{rows[at]},{','.join(map(str, lines))}"
        self.lines = {}
        return rows

    def sample(self, metric: str, number: int, value: float) -> None:
        rows = self.samples.get(metric)
        if rows is None:
            rows = self.samples[metric] = []
        rows += (number, value)


class Batch:
    """Samples numbered and waiting to be stored: those of new iterations, kept apart per
    target (a second sample of an iteration joins its row), and those whose iteration may be
    stored already (left to ``Bulk.merge``).

    Each target's rows go in together, in the order they were read, and its samples one
    metric at a time: SQLite then inserts next to the row before in each index, where rows of
    two guests in turn (as a long-format file gives them) alternate between two places in
    every index; measured on 2,000,000 samples, a tenth less CPU time for the whole import.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.new: dict[Target, _New] = {}
        self.maybe: list[Numbered] = []
        # samples of one metric of iterations this import made in an earlier batch, per
        # target: (number, line, metric, value) each, one field after the other
        self.late: dict[Target, list[Any]] = {}
        self.size = 0

    def add(
        self, target: Target, number: int, line: int, started: float | None,
        metrics: dict[str, float], malformed: Malformed, mark: Mark | None = None,
        attempt: Attempt | None = None,
    ) -> None:  # fmt: skip
        """The sample of ``line``: iteration ``number`` of ``target``, started at ``started``
        (its successful ``attempt``'s fields, where the file gives them)."""
        new = self.new.get(target)
        entry = new.at.get(number) if new is not None else None
        if new is not None and entry is not None:
            row, before = entry
            clash = [m for m in metrics if m in before]
            if clash:
                message = f"a second {shown(clash[0])} value for iteration {number}"
                malformed.add(BadLine(line, message))
                return
            new.also(row, line)
            before.update(metrics)
        elif number > target.high or (made := target.made.state(number)) is False:
            if new is None:
                new = self.new[target] = _New()
            row = new.iteration(number, started, f"{self.source}:{line}", attempt)
            new.at[number] = (row, set(metrics))
            if mark is not None:
                new.marks += (number, mark)
            target.made.add(number)
            if number > target.high:
                target.high = number
        elif made and attempt is None and len(metrics) == 1:
            late = self.late.get(target)
            if late is None:
                late = self.late[target] = []
            for metric, value in metrics.items():
                late += (number, line, metric, value)
            self.size += 1
            return
        else:
            self.maybe.append(
                (target.run_id, target.guest_id, number, line, started, metrics, attempt, mark)
            )
            self.size += 1
            return
        for metric, value in metrics.items():
            new.sample(metric, number, value)
        self.size += 1

    def add_one(
        self, target: Target, number: int, line: int, started: float | None, metric: str,
        value: float, malformed: Malformed, mark: Mark | None = None,
        attempt: Attempt | None = None,
    ) -> None:  # fmt: skip
        """:meth:`add` of a sample of one metric, with no dict of it when its iteration is new
        (above every number stored or written: not in ``at``) or one this batch made, as
        most are."""
        new = self.new.get(target)
        if number <= target.high:
            entry = new.at.get(number) if new is not None else None
            made = target.made  # made.state(number) is True, without the call (a row each)
            offset = number - made.first - 1
            bits = made.bits
            if (
                entry is None
                and attempt is None
                and offset >= 0
                and offset >> 3 < len(bits)
                and bits[offset >> 3] >> (offset & 7) & 1
            ):
                late = self.late.get(target)  # an iteration an earlier batch made
                if late is None:
                    late = self.late[target] = []
                late += (number, line, metric, value)
                self.size += 1
                return
            if new is None or entry is None or metric in entry[1]:
                self.add(target, number, line, started, {metric: value}, malformed, mark, attempt)
                return
            # another metric of an iteration this batch made, as a long-format table gives
            # every one after the first: add() without its dict, calls and checks
            row, before = entry
            if row not in new.own:
                lines = new.lines.get(row)
                if lines is None:
                    new.lines[row] = [line]
                else:
                    lines.append(line)
            before.add(metric)
            values = new.samples.get(metric)
            if values is None:
                values = new.samples[metric] = []
            values += (number, value)
            self.size += 1
            return
        if new is None:
            new = self.new[target] = _New()
        rows = new.iterations
        if started is None and new.width == 2 and attempt is None:  # new.iteration(), no call
            new.at[number] = (len(rows) >> 1, {metric})
            rows += (number, f"{self.source}:{line}")
        else:
            row = new.iteration(number, started, f"{self.source}:{line}", attempt)
            new.at[number] = (row, {metric})
        if mark is not None:
            new.marks += (number, mark)
        values = new.samples.get(metric)
        if values is None:
            values = new.samples[metric] = []
        values += (number, value)
        target.high = number
        target.made.add(number)
        self.size += 1

    def store(self, bulk: Bulk, late: Late) -> dict[Target, int]:
        """Write the batch's new iterations; hand the samples of iterations an earlier batch
        made to ``late``; and stage the samples whose iteration may be stored already
        (:func:`merge_staged` merges them once the input ends). Returns the iterations it
        made per target."""
        made: dict[Target, int] = {}
        for target in sorted(self.new, key=lambda t: (t.run_id, t.guest_id)):
            new, ids = self.new[target], (target.run_id, target.guest_id)
            bulk.insert_iterations(*ids, new.sources(), width=new.width)
            if new.marks:
                bulk.set_marks(*ids, new.marks)
            for metric, values in new.samples.items():
                bulk.insert_samples(*ids, metric, values)
            made[target] = len(new.iterations) // new.width
        for target, samples in self.late.items():
            late.add(target, samples)
        bulk.staged.add(self.maybe)
        return made


class Late:
    """Samples of iterations this import made in an earlier batch, held across batches and
    inserted :data:`HELD` at a time, in key order: each insert then walks the store's indexes
    once, where a batch's few spread over a large store touched a page each (the seed study
    shuffled: most of its time)."""

    HELD = 400_000  # samples: about 110 bytes each

    def __init__(self) -> None:
        self.samples: dict[Target, list[Any]] = {}
        self.count = 0

    def add(self, target: Target, samples: list[Any]) -> None:
        held = self.samples.get(target)
        if held is None:
            self.samples[target] = samples
        else:
            held += samples
        self.count += len(samples) >> 2

    def store(self, bulk: Bulk, malformed: Malformed, lines: Lines) -> None:
        """Insert them (see :func:`_store_late`), and forget them."""
        held, self.samples, self.count = self.samples, {}, 0
        for target in sorted(held, key=lambda t: (t.run_id, t.guest_id)):
            _store_late(bulk, target, held.pop(target), malformed, lines)


def _store_late(
    bulk: Bulk, target: Target, late: list[Any], malformed: Malformed, lines: Lines
) -> None:
    """Insert samples of iterations this import made (``late``: (number, line, metric,
    value) each) by number, then line: of two values of an iteration's metric, in ``late`` or
    in the store, the file's first is kept and the other is malformed; the lines of those
    inserted are kept for their iterations' sources."""
    ids = (target.run_id, target.guest_id)
    count = len(late) >> 2
    numbers, at_lines, metrics, values = late[0::4], late[1::4], late[2::4], late[3::4]
    keys = (np.fromiter(at_lines, np.int64, count), np.fromiter(numbers, np.int64, count))
    order = np.lexsort(keys).tolist()
    numbers = [numbers[i] for i in order]
    at_lines = [at_lines[i] for i in order]
    metrics = [metrics[i] for i in order]
    values = [values[i] for i in order]
    rows = list(chain.from_iterable(zip(numbers, metrics, values, strict=True)))
    refused = bulk.insert_late(*ids, rows)
    for i in refused:
        message = f"a second {shown(metrics[i])} value for iteration {numbers[i]}"
        malformed.add(BadLine(at_lines[i], message))
    if refused:
        taken = sorted(set(range(count)) - set(refused))
        numbers = [numbers[i] for i in taken]
        at_lines = [at_lines[i] for i in taken]
    lines.extend(ids, numbers, at_lines)


def merge_staged(
    bulk: Bulk, source: str, malformed: Malformed, targets: Mapping[tuple[int, int], Target]
) -> tuple[dict[Target, int], int]:
    """Merge the samples the batches of an input staged, in key order
    (:mod:`lab.store.staged`): the iterations it made per target, and how many iterations
    stored before it kept; the samples it refused go to ``malformed``."""
    made: dict[Target, int] = {}
    kept = 0
    for chunk in bulk.staged.chunks():
        merged = bulk.merge(source, chunk)
        for ids, count in merged.made.items():
            made[targets[ids]] = made.get(targets[ids], 0) + count
        kept += merged.kept
        for line, message in merged.clashes:
            malformed.add(BadLine(line, message))
    return made, kept
