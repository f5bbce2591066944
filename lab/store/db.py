"""The :class:`Store`: opening, transactions and writing; its queries are in ``reads``."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import TracebackType

from lab.core.errors import LabError, StoreError, UsageError
from lab.store.bulk import Bulk
from lab.store.designs import StudyDesigns
from lab.store.ensure import Ensure
from lab.store.export import Export
from lab.store.full import StoreFull, is_disk_full, store_full
from lab.store.guard import BUSY_TIMEOUT, store_error
from lab.store.listing import Listing
from lab.store.reads import Reads
from lab.store.records import IterationRecord, MetricInfo
from lab.store.schema import check_file, prepare, prepare_readonly
from lab.store.uri import readonly_uri


class Store(Reads, Listing, Ensure, Export, StudyDesigns):
    """An open result store. Make one with :meth:`Store.open`; use it as a context manager.

    Safe to share between threads of one process (writes are serialised by a lock) and
    between processes (SQLite's locking, with a busy timeout).
    """

    def __init__(
        self, conn: sqlite3.Connection, path: Path, busy_timeout: float = BUSY_TIMEOUT
    ) -> None:
        self._conn = conn
        self.path = path
        self.busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._depth = 0  # transactions open on this connection (nested ones are savepoints)

    # -- opening -----------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        cache_kib: int | None = None,
        create: bool = True,
        busy_timeout: float = BUSY_TIMEOUT,
    ) -> Store:
        """Open (creating it and its folder if needed, unless ``create`` is False: what
        commands that only read do, so a mistyped --db makes nothing) the store at ``path``.

        ``cache_kib`` bounds SQLite's page cache for this connection (its default is
        2,000 KiB): a writer that only appends, such as `lab run`'s controller, gains
        nothing from caching the pages it wrote, and a small cache keeps its memory flat
        from the first minutes of a run.

        A write waits up to ``busy_timeout`` seconds for another process's transaction to
        end, then fails as :class:`StoreLockedError`. A store that cannot be written (a
        read-only file or mount) is opened read-only for a command that only reads.
        """
        path = Path(path)
        try:
            check_file(path)
            exists = path.is_file()
        except OSError as err:  # a folder on the way that cannot be searched
            raise StoreError(
                f"cannot open result store {path}: {err.strerror or err}",
                hint="Check that its folder exists and can be read, or pass another --db",
            ) from None
        if not create and exists and _empty(path):  # SQLite would take it, and be written
            raise UsageError(
                f"no result store at {path}: the file is empty",
                hint="Pass the store's path with --db; `lab run` and `lab import` make a store"
                " of an empty file",
            )
        if not create and not exists:
            raise UsageError(
                f"no result store at {path}",
                hint="Pass the store's path with --db (lab.toml's `store` is the default);"
                " `lab run` and `lab import` create one",
            )
        readonly = exists and not _writable(path)
        if readonly and create:  # a command that writes: say so now, not "cannot open"
            raise StoreError(
                f"the result store {path} is read-only (its file, folder or mount cannot be"
                " written)",
                hint="Commands that only read (compare, runs, export, report) work on it; to"
                " write, make it writable, or pass a copy with --db",
            )
        if readonly:
            _refuse_unread_wal(path)
        try:
            if readonly:
                conn = sqlite3.connect(
                    readonly_uri(path), uri=True, isolation_level=None,
                    check_same_thread=False, timeout=busy_timeout,
                )  # fmt: skip
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(
                    str(path), isolation_level=None, check_same_thread=False, timeout=busy_timeout
                )
        except (OSError, sqlite3.Error) as err:
            if is_disk_full(err, path):
                raise store_full(path) from err
            raise StoreError(
                f"cannot open result store {path}: {err}",
                hint="Check that its folder exists and is writable, or pass another --db",
            ) from None
        try:
            (prepare_readonly if readonly else prepare)(conn, path)
            if cache_kib is not None:
                conn.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
        except BaseException as err:
            conn.close()
            if is_disk_full(err, path):  # creating or upgrading the schema found no room
                raise store_full(path) from err
            if isinstance(err, sqlite3.Error):
                raise store_error(err, path, busy_timeout) from err
            raise
        return cls(conn, path, busy_timeout)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close; an SQLite error that ended the ``with`` block (a read of a damaged page,
        a missing table) leaves it as the :class:`StoreError` it means, naming the store."""
        self.close()
        if isinstance(exc, sqlite3.Error):
            raise store_error(exc, self.path, self.busy_timeout) from exc

    class _Tx:
        """BEGIN IMMEDIATE … COMMIT; nested inside another, a savepoint instead."""

        def __init__(self, store: Store) -> None:
            self.store = store
            self.savepoint: str | None = None

        def __enter__(self) -> sqlite3.Connection:
            store = self.store
            store._lock.acquire()
            try:
                if store._depth:
                    self.savepoint = f"sp{store._depth}"
                    store._conn.execute(f"SAVEPOINT {self.savepoint}")
                else:
                    store._conn.execute("BEGIN IMMEDIATE")
            except BaseException as err:
                store._lock.release()
                if isinstance(err, sqlite3.Error):  # locked by another writer, read-only
                    raise store_error(err, store.path, store.busy_timeout) from err
                raise
            store._depth += 1
            return store._conn

        def __exit__(
            self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object
        ) -> None:
            """Commit, or roll back; a disk that is full either way becomes StoreFull."""
            store = self.store
            store._depth -= 1
            try:
                if exc is None:
                    try:  # in WAL mode the commit is what writes: it may find the disk full
                        store._conn.execute(
                            "COMMIT" if self.savepoint is None else f"RELEASE {self.savepoint}"
                        )
                        return
                    except sqlite3.Error as err:
                        self._undo()
                        raise store_error(err, store.path, store.busy_timeout) from err
                self._undo()
                if not isinstance(exc, StoreFull) and is_disk_full(exc, store.path):
                    raise store_full(store.path) from exc
            finally:
                store._lock.release()

        def _undo(self) -> None:
            """Roll back (to the savepoint), unless SQLite already rolled the whole
            transaction back itself, as it may on SQLITE_FULL (a ROLLBACK would then fail)."""
            conn = self.store._conn
            if not conn.in_transaction:
                return
            if self.savepoint is None:
                conn.execute("ROLLBACK")
            else:
                conn.execute(f"ROLLBACK TO {self.savepoint}")
                conn.execute(f"RELEASE {self.savepoint}")

    def _transaction(self) -> Store._Tx:
        return Store._Tx(self)

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """Make every write inside one transaction: all of it is stored, or none.

        ``with store.transaction(): ensure_run(...); record(...); record(...)``
        """
        return Store._Tx(self)

    @contextmanager
    def bulk(self) -> Iterator[Bulk]:
        """One transaction for samples by the million (:mod:`lab.store.bulk`): all of them
        are stored, or none; ``ensure_*`` calls inside it are part of it.

        Foreign keys are not checked row by row meanwhile (SQLite turns them off only outside
        a transaction): the bulk writer is given run and guest ids that ``ensure_run`` and
        ``ensure_guest`` returned and metrics that ``ensure_run`` declared, which is what the
        checks would require, and they cost a tenth of a row's time.
        """
        with self._lock:
            outermost = not self._depth
            if outermost:
                self._conn.execute("PRAGMA foreign_keys=OFF")
            try:
                with self._transaction() as conn:
                    yield Bulk(conn)
            finally:
                if outermost:
                    self._conn.execute("PRAGMA foreign_keys=ON")

    # -- checking ----------------------------------------------------------------------

    def check(self) -> tuple[list[str], dict[str, int], dict[str, int]]:
        """SQLite's integrity check, the counts and the orphans (``lab store check``).

        The integrity check runs on this connection while a second one counts (SQLite lets
        go of the GIL), so the two take the machine's cores: on 6,000,000 samples they are
        about 26 s and 9 s, one after the other over the 30 s a check may take. Where a
        second connection cannot be opened (a damaged file), one after the other here.
        """
        try:
            other = Store.open(self.path, create=False, busy_timeout=self.busy_timeout)
        except LabError:
            return self.integrity_check(), self.counts(), self.orphans()
        found: dict[str, dict[str, int]] = {}
        failed: list[BaseException] = []

        def count() -> None:
            try:
                found["counts"], found["orphans"] = other.counts(), other.orphans()
            except BaseException as err:  # raised again in the caller's thread
                failed.append(err)

        thread = threading.Thread(target=count, name="store-check", daemon=True)
        thread.start()
        try:
            integrity = self.integrity_check()
        except BaseException:  # Ctrl-C: the counting stops too
            other._conn.interrupt()
            raise
        finally:
            thread.join()
            other.close()
        if failed:
            raise failed[0]
        return integrity, found["counts"], found["orphans"]

    # -- writing -----------------------------------------------------------------------

    def add_metrics(self, run_id: int, metrics: Sequence[MetricInfo]) -> None:
        """Give run ``run_id`` more metrics (counters found to work when it started); one
        it has already keeps its unit and direction."""
        with self._transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO metric(run_id, name, unit, direction) VALUES (?, ?, ?, ?)",
                [(run_id, m.name, m.unit, m.direction) for m in metrics],
            )

    def record_samples(
        self, run_id: int, guest_id: int, iteration: int, values: Mapping[str, float]
    ) -> None:
        """More samples of an iteration already stored as successful (counters read on the
        host beside it); the metrics must be the run's (``add_metrics``)."""
        rows = [(run_id, guest_id, iteration, name, float(v)) for name, v in values.items()
                if math.isfinite(float(v))]  # fmt: skip
        with self._transaction() as conn:
            self._check_batch(conn, run_id, guest_id, {r[3] for r in rows})
            conn.executemany(
                "INSERT OR REPLACE INTO sample(run_id, guest_id, iteration, metric, value)"
                " VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    def record(self, run_id: int, guest_id: int, records: Sequence[IterationRecord]) -> int:
        """Store a batch of attempts in one transaction; returns how many were new.

        An attempt already stored (same iteration and attempt number) is left as it was, so
        recording the same batch twice changes nothing.
        """
        rows = []
        samples = []
        for rec in records:
            rows.append((
                run_id, guest_id, rec.iteration, rec.attempt, int(bool(rec.ok)), rec.started,
                rec.ended, rec.wall, rec.user, rec.sys, rec.exit_status, rec.boot_id,
                rec.output_tail, rec.source,
            ))  # fmt: skip
            if rec.ok:
                for name, value in rec.metrics.items():
                    value = float(value)
                    if not math.isfinite(value):
                        raise StoreError(
                            f"iteration {rec.iteration} ({rec.source or 'no source'}): metric"
                            f" {name!r} is {value}, not a finite number",
                            hint="Record the attempt as failed (ok=False) instead",
                        )
                    samples.append((run_id, guest_id, rec.iteration, name, value))
        with self._transaction() as conn:
            self._check_batch(conn, run_id, guest_id, {s[3] for s in samples})
            before = conn.total_changes
            conn.executemany(
                "INSERT OR IGNORE INTO iteration(run_id, guest_id, iteration, attempt, ok,"
                " started, ended, wall, user, sys, exit_status, boot_id, output_tail, source)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            new = conn.total_changes - before
            conn.executemany(
                "INSERT OR IGNORE INTO sample(run_id, guest_id, iteration, metric, value)"
                " VALUES (?, ?, ?, ?, ?)",
                samples,
            )
        return new

    def record_placement(
        self, run_id: int, guest_id: int, iteration: int, label: str, cpus: Sequence[int]
    ) -> None:
        """Store the placement ("own" or "swapped") a guest runs an iteration in.

        ``cpus`` is the host CPU of each vCPU, in vCPU order. Recording an iteration again
        replaces what was there: a repeated iteration ran in the placement recorded last.
        """
        if label not in ("own", "swapped"):
            raise StoreError(f"placement {label!r} is neither 'own' nor 'swapped'")
        with self._transaction() as conn:
            self._check_batch(conn, run_id, guest_id, set())
            conn.execute(
                "INSERT OR REPLACE INTO placement(run_id, guest_id, iteration, label, cpus)"
                " VALUES (?, ?, ?, ?, ?)",
                (run_id, guest_id, iteration, label, ",".join(str(c) for c in cpus)),
            )

    def record_environment(
        self, run_id: int, scope: str, name: str, facts: Mapping[str, str]
    ) -> None:
        """Store one host's or guest's facts at this start of run ``run_id``."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO environment(run_id, scope, name, facts, recorded)"
                " VALUES (?, ?, ?, ?, ?)",
                (run_id, scope, name, json.dumps(dict(facts), sort_keys=True), time.time()),
            )

    def record_stop(self, run_id: int, reason: str, interval: str | None = None) -> None:
        """Store why a run's --until rule ended it, and the interval it stopped on (JSON,
        ``lab.stats.stopping``); once is enough."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO stop(run_id, reason, decided, interval) VALUES (?, ?, ?, ?)",
                (run_id, reason, time.time(), interval),
            )

    def delete_run(self, run_id: int) -> int:
        """Remove a run and everything stored with it, in one transaction; returns the
        number of samples removed. Its study and guests stay (other runs may share them), and
        so does its sweep, with one value fewer."""
        with self._transaction() as conn:
            samples = conn.execute("SELECT COUNT(*) FROM sample WHERE run_id=?", (run_id,))
            count = int(samples.fetchone()[0])
            tables = ("sample", "iteration", "placement", "warmup", "stop", "environment",
                      "sweep_run", "metric")  # fmt: skip
            for table in tables:
                conn.execute(f"DELETE FROM {table} WHERE run_id=?", (run_id,))
            conn.execute("DELETE FROM run WHERE id=?", (run_id,))
        return count

    def record_warmup(self, run_id: int, declared: str) -> None:
        """Store the warm-up declared with a run: 'auto' or a count of iterations per boot.

        Declaring again replaces what was there. ``lab compare`` and ``lab report`` discard
        it unless told otherwise (``lab.stats.discard``).
        """
        if declared != "auto" and not (declared.isascii() and declared.isdigit()):
            raise StoreError(
                f"warm-up {declared!r} is neither 'auto' nor a count of iterations",
                hint="Declare e.g. 2 (iterations discarded after every boot) or auto",
            )
        with self._transaction() as conn:
            if conn.execute("SELECT 1 FROM run WHERE id=?", (run_id,)).fetchone() is None:
                raise StoreError(f"no run id {run_id} in {self.path}", hint="Create it first")
            conn.execute(
                "INSERT OR REPLACE INTO warmup(run_id, declared, recorded) VALUES (?, ?, ?)",
                (run_id, str(int(declared)) if declared != "auto" else declared, time.time()),
            )

    def _check_batch(
        self, conn: sqlite3.Connection, run_id: int, guest_id: int, metrics: set[str]
    ) -> None:
        run = conn.execute("SELECT study_id, key FROM run WHERE id=?", (run_id,)).fetchone()
        guest = conn.execute("SELECT study_id, name FROM guest WHERE id=?", (guest_id,)).fetchone()
        if run is None or guest is None:
            what = f"run id {run_id}" if run is None else f"guest id {guest_id}"
            raise StoreError(
                f"no {what} in {self.path}", hint="Create it first with ensure_run/ensure_guest"
            )
        if run[0] != guest[0]:
            raise StoreError(f"guest {guest[1]!r} and run {run[1]!r} belong to different studies")
        declared = {r[0] for r in conn.execute("SELECT name FROM metric WHERE run_id=?", (run_id,))}
        undeclared = metrics - declared
        if undeclared:
            raise StoreError(
                f"run {run[1]!r} does not declare metric(s) {', '.join(sorted(undeclared))}",
                hint="Declare every metric (name, unit, direction) in ensure_run() first",
            )


def _empty(path: Path) -> bool:
    """Whether the file holds nothing (a store's holds its header from its first write
    on): a command that only read it made it a store, writing the schema into a file it
    was told to read."""
    try:
        return path.stat().st_size == 0
    except OSError:
        return False


def _refuse_unread_wal(path: Path) -> None:
    """Refuse a read-only store whose last writes are in its WAL file without the -shm file
    that SQLite needs to read them (a copy of a store whose writer did not close it): opened
    as immutable, as it is there, its samples in the WAL were left out without a word
    (compare counted 50 of a run's 100)."""
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    try:
        unread = wal.stat().st_size > 0 and not shm.exists()
    except OSError:  # no WAL file: every write is in the store's own file
        return
    if unread:
        raise StoreError(
            f"the result store {path} is read-only and its last writes are in {wal}, which"
            f" SQLite cannot read there without {shm.name} (the store was not closed by the"
            " process that wrote it)",
            hint=f"Copy {path.name} and {wal.name} together to a writable folder and pass the"
            " copy with --db: opened there, SQLite folds the WAL into it",
        )


def _writable(path: Path) -> bool:
    """Whether the store's file and folder can be written (False on a read-only mount even
    for root, whom file modes do not stop)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
