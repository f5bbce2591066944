"""A full disk under the store: StoreFull with what to do, a consistent store, and a resume.

SQLite really runs out of room here: ``PRAGMA max_page_count`` just above the store's
current size makes the next writes fail with the genuine ``SQLITE_FULL`` ("database or disk
is full") that a full filesystem gives. The proof on a real full filesystem (a small tmpfs)
under a real run is ``tests/integration/test_disk_full.py``.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from lab.core.errors import LabError
from lab.store import IterationRecord, MetricInfo, Store
from lab.store.full import StoreFull, format_bytes, is_disk_full
from tests.unit.fakeguest import NAMES, FakeRunnerGuest, make_controller, wall_of

METRICS = [MetricInfo("wall_s", "s", "lower")]


def leave_room(store: Store, pages: int) -> None:
    """Let the store's file grow by at most ``pages`` pages (this connection only)."""
    count = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count={count + pages}")


def batch(first: int, size: int, tail: str = "x" * 600) -> list[IterationRecord]:
    return [
        IterationRecord(i, 1, True, output_tail=tail, metrics={"wall_s": i / 10})
        for i in range(first, first + size)
    ]


def assert_tells_what_to_do(err: StoreFull, path: Path, cause: bool = True) -> None:
    text = str(err)
    assert str(path) in text
    assert "free on its filesystem" in text and format_bytes(err.free_bytes or 0) in text
    assert "Free space there, then run the same command again" in text
    assert "`lab run`" in text and "resumes" in text and "nothing already stored is lost" in text
    assert isinstance(err, LabError) and err.exit_code not in (0, 1)
    assert isinstance(err.__cause__, sqlite3.OperationalError)
    if cause:  # the error itself, not one it was raised while handling
        assert err.__cause__.sqlite_errorcode == sqlite3.SQLITE_FULL


def test_a_full_disk_during_record_is_store_full_and_the_batch_is_rolled_back(
    tmp_path: Path,
) -> None:
    store = Store.open(tmp_path / "lab.db")
    study = store.ensure_study("s")
    run = store.ensure_run(study, "k", "probe", {}, "concurrent", 1000, METRICS)
    guest = store.ensure_guest(study, "lab-thp", "thp")
    leave_room(store, 4)
    first = 1
    with pytest.raises(StoreFull) as caught:
        while first < 1000:
            store.record(run, guest, batch(first, 5))
            first += 5
    assert_tells_what_to_do(caught.value, tmp_path / "lab.db")
    assert first > 1, "the store was full before any batch: leave it more room"
    # Every batch before the failing one is whole, and nothing of the failing one is there.
    assert store.integrity_check() == ["ok"]
    assert sorted(store.completed_iterations(run, guest)) == list(range(1, first))
    assert store._conn.execute("SELECT COUNT(*) FROM sample").fetchone() == (first - 1,)
    assert not store._conn.in_transaction
    # With room again the same connection goes on, and the refused batch is stored once.
    store._conn.execute("PRAGMA max_page_count=1073741823")
    assert store.record(run, guest, batch(first, 5)) == 5
    assert sorted(store.completed_iterations(run, guest)) == list(range(1, first + 5))
    (series,) = store.values(metric="wall_s")
    assert series.values.tolist() == [i / 10 for i in range(1, first + 5)]


def _fill(store: Store, run: int, guest: int) -> None:
    """Record until the store refuses: no page left for anything that needs one."""
    with pytest.raises(StoreFull):
        for first in range(1, 100_000, 5):
            store.record(run, guest, batch(first, 5))


WRITES: dict[str, Callable[[Store, int, int, int], object]] = {
    "ensure_study": lambda s, study, run, guest: s.ensure_study("new", "d" * 20_000),
    "ensure_run": lambda s, study, run, guest: s.ensure_run(
        study, "new-key", "probe", {"p": "v" * 20_000}, "concurrent", 3, METRICS
    ),
    "ensure_guest": lambda s, study, run, guest: s.ensure_guest(
        study, "lab-new", "thp", domain_xml="<domain/>" * 3_000
    ),
    "ensure_guest (update)": lambda s, study, run, guest: s.ensure_guest(
        study, "lab-thp", "thp", domain_xml="<domain/>" * 3_000
    ),
    "record": lambda s, study, run, guest: s.record(run, guest, batch(500_000, 20)),
    "record_placement": lambda s, study, run, guest: place_many(s, run, guest),
}


def place_many(store: Store, run: int, guest: int) -> None:
    for iteration in range(1, 2_000):
        store.record_placement(run, guest, iteration, "own", list(range(200)))


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_write_of_a_run_turns_a_full_disk_into_store_full(tmp_path: Path, write: str) -> None:
    store = Store.open(tmp_path / "lab.db")
    study = store.ensure_study("s")
    run = store.ensure_run(study, "k", "probe", {}, "concurrent", 1000, METRICS)
    guest = store.ensure_guest(study, "lab-thp", "thp")
    leave_room(store, 2)
    _fill(store, run, guest)
    before = store._conn.execute("SELECT COUNT(*) FROM iteration").fetchone()
    with pytest.raises(StoreFull) as caught:
        WRITES[write](store, study, run, guest)
    assert_tells_what_to_do(caught.value, tmp_path / "lab.db")
    assert store.integrity_check() == ["ok"]
    assert store._conn.execute("SELECT COUNT(*) FROM iteration").fetchone() == before
    assert not store._conn.in_transaction


def test_a_full_disk_inside_an_outer_transaction_rolls_all_of_it_back(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "lab.db")
    study = store.ensure_study("s")
    guest = store.ensure_guest(study, "lab-thp", "thp")
    leave_room(store, 3)
    with pytest.raises(StoreFull), store.transaction():
        run = store.ensure_run(study, "k", "probe", {}, "concurrent", 10, METRICS)
        for first in range(1, 100_000, 5):
            store.record(run, guest, batch(first, 5))
    assert store.runs() == []  # the run made inside it is gone too
    assert store._conn.execute("SELECT COUNT(*) FROM iteration").fetchone() == (0,)
    assert store.integrity_check() == ["ok"]
    store.ensure_run(study, "k", "probe", {}, "concurrent", 10, METRICS)  # usable again


def test_no_space_as_an_oserror_is_store_full_too(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "lab.db")
    study = store.ensure_study("s")
    with pytest.raises(StoreFull, match="no space left for the result store"), store.transaction():
        store.ensure_guest(study, "lab-thp", "thp")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert store.guests() == []
    assert is_disk_full(OSError(errno.ENOSPC, "full"))
    assert not is_disk_full(OSError(errno.EACCES, "denied"))
    assert not is_disk_full(sqlite3.OperationalError("database is locked"))


def genuine_full_error(tmp_path: Path) -> sqlite3.OperationalError:
    """The error SQLite raises when a write finds no room."""
    conn = sqlite3.connect(tmp_path / "tiny.db")
    try:
        conn.execute("CREATE TABLE t(x)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={pages}")
        conn.execute("INSERT INTO t VALUES (?)", (b"x" * 100_000,))
    except sqlite3.OperationalError as err:
        return err
    finally:
        conn.close()
    raise AssertionError("SQLite found room for 100 kB in a store of no spare page")


def test_no_room_to_create_a_store_is_store_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = genuine_full_error(tmp_path)

    def prepare(conn: sqlite3.Connection, path: Path) -> None:
        # as lab.store.schema does: its ROLLBACK fails once SQLite rolled back by itself
        try:
            raise full
        except sqlite3.OperationalError:
            raise sqlite3.OperationalError("cannot rollback - no transaction is active")  # noqa: B904

    monkeypatch.setattr("lab.store.db.prepare", prepare)
    with pytest.raises(StoreFull) as caught:
        Store.open(tmp_path / "new.db")
    assert_tells_what_to_do(caught.value, tmp_path / "new.db", cause=False)


def test_other_errors_in_a_transaction_are_left_as_they_were(tmp_path: Path) -> None:
    from lab.core.errors import StoreError

    store = Store.open(tmp_path / "lab.db")
    study = store.ensure_study("s")
    store.ensure_guest(study, "lab-thp", "thp")
    with pytest.raises(StoreError, match="is variant 'thp'") as caught:
        store.ensure_guest(study, "lab-thp", "shp1g")
    assert not isinstance(caught.value, StoreFull)


# -- the run: the controller streaming journals into a store that fills up ------------------


def stored(store: Store, run_id: int, guest_id: int) -> list[tuple[int, int, float]]:
    return store._conn.execute(
        "SELECT i.iteration, i.attempt, s.value FROM iteration i JOIN sample s"
        " ON (s.run_id, s.guest_id, s.iteration) = (i.run_id, i.guest_id, i.iteration)"
        " WHERE i.run_id=? AND i.guest_id=? AND s.metric NOT LIKE 'backing.%'"  # the host's
        " ORDER BY i.iteration, i.attempt",
        (run_id, guest_id),
    ).fetchall()


def test_a_run_stops_on_a_full_disk_and_the_same_run_resumes_to_exactly_n(tmp_path: Path) -> None:
    n = 60
    guests = {name: FakeRunnerGuest(name, per_read=3) for name in NAMES}
    controller, store = make_controller(tmp_path, guests, n)
    leave_room(store, 6)
    with pytest.raises(StoreFull) as caught:
        controller.run()
    assert_tells_what_to_do(caught.value, tmp_path / "lab.db")
    assert store.integrity_check() == ["ok"]
    before = {}
    for guest in controller.guests:
        rows = stored(store, controller.run_id, guest.guest_id)
        name = guest.record.name
        # a prefix of whole iterations, each with its sample as the guest measured it
        assert rows == [(i, 1, wall_of(name, i)) for i in range(1, len(rows) + 1)]
        assert sorted(guest.completed) == [i for i, _, _ in rows]  # no further than the store
        before[name] = len(rows)
    assert 0 < sum(before.values()) < 2 * n, before
    assert all(g.running for g in guests.values())  # the runners were not stopped
    store.close()

    for fake in guests.values():
        fake.finish()  # meanwhile the runners went on, journaling every iteration
    again, store = make_controller(tmp_path, guests, n)  # room again: the same command
    assert again.run_id == controller.run_id
    again.run()
    for guest in again.guests:
        name = guest.record.name
        assert stored(store, again.run_id, guest.guest_id) == [
            (i, 1, wall_of(name, i)) for i in range(1, n + 1)
        ]
    assert store.integrity_check() == ["ok"]
    assert all(g.starts == 1 for g in guests.values())  # resumed from the journals alone
