"""``Store.bulk``: plain inserts of new iterations, and merges into those already there."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.store import IterationRecord, MetricInfo, Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "lab.db")


def _ids(store: Store) -> tuple[int, int]:
    study = store.ensure_study("s")
    metrics = [MetricInfo("t", "s", "lower"), MetricInfo("r", "1/s", "higher")]
    run = store.ensure_run(study, "s/w", "w", {}, None, None, metrics)
    return run, store.ensure_guest(study, "g", "thp")


def _rows(store: Store) -> list[tuple[int, str | None, dict[str, float]]]:
    by_iteration: dict[int, dict[str, float]] = {}
    for row in store.export_rows():
        by_iteration.setdefault(row.iteration, {})[row.metric] = row.value
    sources = {r.iteration: r.source for r in store.export_rows()}
    return [(n, sources[n], by_iteration[n]) for n in sorted(by_iteration)]


def test_merge_into_iterations_made_here_and_before(store: Store) -> None:
    run, guest = _ids(store)
    store.record(run, guest, [IterationRecord(1, 1, True, source="old.txt:9", metrics={"t": 1.0})])
    with store.bulk() as bulk:
        bulk.insert([(run, guest, 2, None, "f.csv:2")], [(run, guest, 2, "t", 2.0)])
        merged = bulk.merge("f.csv", [
            (run, guest, 2, 5, None, {"r": 0.5}, None, None),  # made by this bulk write: joins it
            (run, guest, 2, 6, None, {"t": 9.0}, None, None),  # a second t for iteration 2: a clash
            # stored before: t kept, r added
            (run, guest, 1, 7, None, {"t": 8.0, "r": 0.1}, None, None),
            (run, guest, 3, 8, None, {"t": 3.0}, None, None),  # not stored: made
        ])  # fmt: skip
        again = bulk.merge("f.csv", [(run, guest, 1, 9, None, {"t": 7.0}, None, None)])
    assert merged.clashes == [(6, "a second 't' value for iteration 2")]
    assert merged.made == {(run, guest): 1} and merged.kept == 1
    assert again.kept == 0  # iteration 1 was counted as kept once already
    assert _rows(store) == [
        (1, "old.txt:9", {"t": 1.0, "r": 0.1}),
        (2, "f.csv:2,5", {"t": 2.0, "r": 0.5}),
        (3, "f.csv:8", {"t": 3.0}),
    ]


def test_clash_within_one_merge(store: Store) -> None:
    run, guest = _ids(store)
    with store.bulk() as bulk:
        merged = bulk.merge("f", [(run, guest, 4, 2, 10.0, {"t": 1.0}, None, None),
                                  (run, guest, 4, 3, 11.0, {"t": 2.0}, None, None)])  # fmt: skip
    assert merged.clashes == [(3, "a second 't' value for iteration 4")]
    assert _rows(store) == [(4, "f:2", {"t": 1.0})]


def test_imported_lines_of_one_source(store: Store) -> None:
    run, guest = _ids(store)
    store.record(run, guest, [
        IterationRecord(1, 1, True, source="/r/a.txt:3,4", metrics={"t": 1.0}),
        IterationRecord(2, 1, True, source="/r/a.txt:17", metrics={"t": 1.0}),
        IterationRecord(3, 1, True, source="/r/a.txt.old:5", metrics={"t": 1.0}),
        IterationRecord(4, 1, True, source="/r/a.txt:x:6", metrics={"t": 1.0}),
    ])  # fmt: skip
    with store.bulk() as bulk:
        bits = bulk.imported_lines(run, guest, "/r/a.txt")
        assert bulk.imported_lines(run, guest, "/r/b.txt") is None
    assert bits is not None
    lines = [n for n in range(len(bits) * 8) if bits[n >> 3] >> (n & 7) & 1]
    assert lines == [3, 4, 17]


def test_an_error_inside_stores_nothing(store: Store) -> None:
    run, guest = _ids(store)
    with pytest.raises(RuntimeError), store.bulk() as bulk:
        bulk.insert([(run, guest, 1, None, "f:2")], [(run, guest, 1, "t", 1.0)])
        raise RuntimeError("the input ended badly")
    assert list(store.export_rows()) == [] and store.max_iteration(run, guest) == 0


def test_inserts_beyond_one_statement(store: Store) -> None:
    from lab.store.bulk import ROWS

    run, guest = _ids(store)
    n = 2 * ROWS + 7
    with store.bulk() as bulk:
        bulk.insert([(run, guest, i, None, f"f:{i}") for i in range(1, n + 1)],
                    [(run, guest, i, "t", float(i)) for i in range(1, n + 1)])  # fmt: skip
    (series,) = store.values()
    assert series.values.tolist() == [float(i) for i in range(1, n + 1)]


def test_foreign_keys_are_checked_again_after_the_bulk_write(store: Store) -> None:
    run, guest = _ids(store)
    with pytest.raises(RuntimeError), store.bulk():
        raise RuntimeError("failed")
    with store.bulk() as bulk:
        bulk.insert([(run, guest, 1, None, "f:2")], [(run, guest, 1, "t", 1.0)])
    assert store._conn.execute("PRAGMA foreign_keys").fetchone() == (1,)


@pytest.mark.parametrize("timed", [False, True])
def test_iterations_and_samples_of_one_guest_beyond_one_statement(
    store: Store, timed: bool
) -> None:
    from lab.store.bulk import ROWS

    run, guest = _ids(store)
    n = 2 * ROWS + 7
    numbers = range(1, n + 1)
    with store.bulk() as bulk:
        if timed:
            rows = [f for i in numbers for f in (i, 1000.0 + i, f"f:{i}")]
        else:
            rows = [f for i in numbers for f in (i, f"f:{i}")]
        bulk.insert_iterations(run, guest, rows, timed=timed)
        bulk.insert_samples(run, guest, "t", [f for i in numbers for f in (i, i / 2)])
        bulk.insert_samples(run, guest, "r", [f for i in numbers if i % 2 for f in (i, -i)])
    got = {(r.iteration, r.metric): (r.value, r.started, r.source) for r in store.export_rows()}
    assert len(got) == n + (n + 1) // 2
    for i in (1, ROWS, ROWS + 1, n):
        started = 1000.0 + i if timed else None
        assert got[(i, "t")] == (i / 2, started, f"f:{i}")
        assert got.get((i, "r")) == ((-i, started, f"f:{i}") if i % 2 else None)
