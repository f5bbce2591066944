"""The controller's memory does not grow with the journal: a soak in seconds, on fake guests.

Over a long run (``lab run null --n 20000``) the controller keeps, per guest, the set of
completed iterations (what ``missing()`` needs) and constant-size summaries; it reads each
journal byte once, and a resumed run re-reads a long journal a piece at a time. The soak on
the real pair, watching the controller's RSS and open files, is
``tests/integration/test_soak.py``.
"""

from __future__ import annotations

import statistics
import sys
import tracemalloc
from pathlib import Path

from lab.run.controller import RECENT, Controller
from lab.run.ingest import READ_CHUNK
from tests.unit.fakeguest import NAMES, FakeRunnerGuest, make_controller, wall_of

MiB = 1024 * 1024


def test_a_long_run_keeps_constant_summaries_and_reads_each_journal_byte_once(
    tmp_path: Path,
) -> None:
    n = 20_000
    guests = {name: FakeRunnerGuest(name, per_read=400, tail_chars=0) for name in NAMES}
    controller, store = make_controller(tmp_path, guests, n)
    controller.run()
    for guest in controller.guests:
        name = guest.record.name
        assert len(store.completed_iterations(controller.run_id, guest.guest_id)) == n
        assert len(guest.completed) == n
        assert len(guest.walls) == RECENT  # not one wall time per iteration
        assert guest.by_iteration == {}  # kept only for --until
        walls = [wall_of(name, i) for i in range(1, n + 1)]
        assert guest.moments.count == n
        assert abs(guest.moments.mean - statistics.fmean(walls)) < 1e-9
        assert abs(guest.moments.stdev - statistics.stdev(walls)) < 1e-9
        journal = bytes(guests[name].journal)
        synced = journal.splitlines(keepends=True)[-1]  # where the next read would start
        assert b'"event":"synced"' in synced and guest.offset == len(journal) - len(synced)
    for fake in guests.values():
        # nothing read twice but the synced line each read starts from
        assert len(fake.journal) <= fake.bytes_read <= len(fake.journal) + fake.reads * 50
        assert fake.reads < n // 400 + 10  # one read per poll, not one per iteration


def completed_bytes(controller: Controller) -> int:
    """What the sets of completed iterations take: the table and an int object per entry."""
    return sum(
        sys.getsizeof(g.completed) + sum(sys.getsizeof(i) for i in g.completed)
        for g in controller.guests
    )


def test_retained_memory_grows_only_by_the_sets_of_completed_iterations(tmp_path: Path) -> None:
    n = 4_000
    guests = {name: FakeRunnerGuest(name, per_read=100, tail_chars=200) for name in NAMES}
    controller, _ = make_controller(tmp_path, guests, n)
    marks: list[tuple[int, int]] = []  # (traced bytes less the fake journals, completed bytes)

    def measure(c: Controller) -> None:
        if min(len(g.completed) for g in c.guests) >= n // 10:
            journals = sum(len(g.journal) for g in guests.values())
            marks.append((tracemalloc.get_traced_memory()[0] - journals, completed_bytes(c)))

    controller.on_update = measure
    tracemalloc.start()
    try:
        controller.run()
    finally:
        tracemalloc.stop()
    (first, first_sets), *_, (last, last_sets) = marks
    # Per iteration the old lists (wall times, values, values by iteration) kept ~190 bytes
    # per guest: 36 iterations' worth over 7,200 would already be past this margin.
    assert last - first <= (last_sets - first_sets) + 256 * 1024, (first, last)


def test_a_resumed_run_reads_a_long_journal_a_piece_at_a_time(tmp_path: Path) -> None:
    n = 5_000
    guests = {name: FakeRunnerGuest(name, per_read=0, tail_chars=2000) for name in NAMES}
    controller, store = make_controller(tmp_path, guests, n)
    for guest in controller.guests:
        controller.start_runner(guest, 1, n)
    for fake in guests.values():
        fake.finish()  # the whole run happened while no controller watched
    store.close()
    journal = len(guests["lab-thp"].journal)
    assert journal > 10 * MiB  # ~2 KiB per attempt: the output tails the runner keeps

    again, store = make_controller(tmp_path, guests, n)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        again.run()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert all(len(store.completed_iterations(again.run_id, g.guest_id)) == n for g in again.guests)
    # Reading a journal whole holds it several times over (text, lines, parsed entries):
    # ~40 MiB here; a piece at a time holds a few pieces.
    assert peak < 16 * MiB, f"peak {peak / MiB:.1f} MiB for a {journal / MiB:.1f} MiB journal"
    for fake in guests.values():
        assert fake.reads >= journal // READ_CHUNK
