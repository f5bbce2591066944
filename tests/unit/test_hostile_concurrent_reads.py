"""``lab compare`` while a run is still recording: what a read gives stays one moment's
samples, and the arrays read beside them (iterations, boots, placements) stay aligned."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from lab.app.analyse import Selection, select_samples
from lab.stats.series import series_key
from lab.store import IterationRecord, MetricInfo, Store
from lab.store.parts import HEADER, PAIRS, read_frame

TIME = MetricInfo("time", "s", "lower")


def _gapped(path: Path) -> tuple[int, int]:
    """A run whose guest has iterations 1-100 but 50 (it failed): (run id, guest id)."""
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, None, 200, [TIME])
        guest = store.ensure_guest(study, "lab-thp", "thp")
        store.record(run, guest, [
            IterationRecord(i, 1, True, metrics={"time": float(i)})
            for i in range(1, 101) if i != 50
        ])  # fmt: skip
    return run, guest


class _WrittenAfterMax(sqlite3.Connection):
    """A connection on which, right after a statement asks for MAX(iteration), another
    process's run records its next iteration (as the runner does at any moment)."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        cursor = super().execute(sql, *args)
        if sql.startswith("SELECT MAX(iteration)"):
            writer = Store.open(self.db)  # type: ignore[attr-defined]
            writer.record(1, 1, [IterationRecord(101, 1, True, metrics={"time": 101.0})])
            writer.close()
        return cursor


def test_a_part_read_while_a_run_records_is_one_moments_samples(tmp_path: Path) -> None:
    """The first and last iteration, then the values, were three statements: the one
    sample recorded between them filled the count of a range 1-100 (one gap), and the
    values of 1-49, 51-101 were given iterations 1-100."""
    db = tmp_path / "lab.db"
    _gapped(db)
    conn = sqlite3.connect(db, isolation_level=None, factory=_WrittenAfterMax)
    conn.db = db  # type: ignore[attr-defined]
    frame = read_frame(conn, 1, 1, "time")
    samples, first, last, layout = HEADER.unpack_from(frame)
    assert (samples, first, last, layout) == (99, 1, 100, PAIRS)
    assert not conn.in_transaction
    conn.close()


def _swapping(path: Path, guests: tuple[str, ...] = ("thp", "shp1g")) -> None:
    """A synchronised run that swaps the twins' CPU sets, 40 iterations recorded so far;
    with ``guests`` short of both, the other guest has none yet."""
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, "sync", 200, [TIME])
        for number, variant in enumerate(("thp", "shp1g"), 1):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            if variant not in guests:
                continue
            store.record(run, guest, [
                IterationRecord(i, 1, True, boot_id="b1", metrics={"time": float(i % 5 + number)})
                for i in range(1, 41)
            ])  # fmt: skip
            for i in range(1, 41):
                store.record_placement(run, guest, i, "own" if i % 2 else "swapped", [number])


def _recording_after_the_read(store: Store, db: Path, first: int) -> None:
    """Both guests record iterations ``first``-``first + 3`` (with their placement) right
    after ``store``'s samples were read: the run goes on while compare works."""
    read = store.sample_boots

    def recorded_then_read(*args: Any, **kwargs: Any) -> Any:
        with Store.open(db) as writer:
            for guest in (1, 2):
                writer.record(1, guest, [
                    IterationRecord(i, 1, True, boot_id="b2", metrics={"time": 3.0})
                    for i in range(first, first + 4)
                ])  # fmt: skip
                for i in range(first, first + 4):
                    writer.record_placement(1, guest, i, "own", [guest])
        return read(*args, **kwargs)

    store.sample_boots = recorded_then_read  # type: ignore[method-assign]


def test_placements_of_samples_recorded_after_the_read_are_not_counted(tmp_path: Path) -> None:
    """The placements were read again after the samples, with the samples a run had
    recorded meanwhile: 44 labels for 40 samples, and lab compare died on an IndexError."""
    db = tmp_path / "lab.db"
    _swapping(db)
    with Store.open(db, create=False) as store:
        _recording_after_the_read(store, db, 41)
        samples = select_samples(store, Selection(warmup="none"))
        assert [s.values.size for s in samples.series] == [40, 40]
        for s in samples.series:
            labels = samples.placements[series_key(s)]
            assert labels.tolist() == ["own" if i % 2 else "swapped" for i in s.iterations]
        assert samples.synced == {"w"}
        assert {k: v.tolist() for k, v in samples.boots.items()} == {
            series_key(s): [0] * 40 for s in samples.series
        }


def test_a_guest_that_had_no_samples_when_they_were_read_has_none_counted(
    tmp_path: Path,
) -> None:
    """A guest whose first samples came after the read had them counted for its boots and
    placements, though its series had none: arrays of 4 for a series of 0."""
    db = tmp_path / "lab.db"
    _swapping(db, guests=("thp",))
    with Store.open(db, create=False) as store:
        with store.reading_values() as reading:
            series = reading.result()
        with Store.open(db) as writer:
            writer.record(1, 2, [
                IterationRecord(i, 1, True, boot_id="b2", metrics={"time": 3.0})
                for i in range(1, 5)
            ])  # fmt: skip
            for i in range(1, 5):
                writer.record_placement(1, 2, i, "own", [2])
        assert [s.variant for s in series] == ["thp"]
        boots = store.sample_boots(iterations=reading.iterations)
        placements = store.placement_labels(iterations=reading.iterations)
        assert boots.keys() == placements.keys() == {series_key(series[0])}
        assert boots[series_key(series[0])][1].tolist() == ["b1"] * 40
        assert placements[series_key(series[0])].size == 40
