"""The store's SQLite schema, its version history and the checks made when a file is opened.

Schema history (bump ``SCHEMA_VERSION`` and add a step to ``MIGRATIONS`` for each change;
old stores must stay readable, so a step upgrades a store in place, one version at a time):

    1  first version: meta, study, guest, run, metric, iteration, sample.
    2  ``placement``: which CPU placement ("own" or "swapped") each guest ran each iteration
       of a run in, with the host CPU of each vCPU (``lab run --swap-every``). Runs without
       a swap have no rows; a v1 store gains the empty table.
    3  ``warmup``: the warm-up declared with a run (``lab run --warmup``, a study file's
       ``warmup`` key): ``'auto'`` or the count of iterations to discard after every boot.
       Runs without a declaration have no row; a v2 store gains the empty table.
    4  ``stop``: why a run with a stopping rule (``lab run --until``) ended, once it did.
    5  ``stop.interval``: the anytime-valid interval the rule stopped on, as JSON
       (``lab.stats.stopping``), so that ``lab compare`` shows it instead of fixed-n
       intervals, which do not hold after an early stop. Older rows keep NULL.
       ``environment``: each host's and guest's facts at every start of a run (JSON).
    6  ``sweep``: a parameter sweep (``lab run --sweep``, a study file's ``sweep`` key): its
       key, workload, axes (JSON: [[key, [value, ...]], ...] as given) and run order;
       ``sweep_run``: each of its runs, with its place in the sweep and its point (JSON:
       {key: value}). Runs without a sweep have no row; a v5 store gains the empty tables.
    7  ``study_design``: a factorial study's design as it ran (``lab study run``), one JSON
       document per study (lab.store.designs): factors, a fraction's generators and aliases,
       cells, cells left out and why, blocks in run order, seed. Studies of two variants and
       those run before have no row; a v6 store gains the empty table.

Indexes that only make reading faster are no schema version: older lab reads a store that has
them as before (SQLite keeps them up to date for any writer), and a store that lacks one gains
it when opened (``INDEXES``, created in one pass over its table: seconds for millions of rows):

    iteration_boot  the attempts by (run, guest, ok, boot id, iteration): ``lab compare``
                    finds each guest's boots with a few lookups per boot (``Reads._boot_ranges``)
                    where grouping every attempt took 0.4 s per million.

``study.study_file`` holds the text of the study file a study was run from (``lab study
run``), exactly as read, and ``study.study_hash`` its sha256; both stay NULL for studies made
by ``lab run`` or ``lab import`` alone, and are filled in when a study file first runs.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from lab.core.errors import StoreError

SCHEMA_VERSION = 7

SQLITE_MAGIC = b"SQLite format 3\x00"

# Version 1 as it was: never edit it (tests build old stores from it).
SCHEMA_V1 = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE study(
    id INTEGER PRIMARY KEY,
    name TEXT UNIQUE NOT NULL,
    created REAL,
    description TEXT,
    study_file TEXT,
    study_hash TEXT
);
CREATE TABLE guest(
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES study(id),
    name TEXT NOT NULL,
    variant TEXT NOT NULL,
    host TEXT NOT NULL DEFAULT 'local',
    domain_xml TEXT,
    host_facts TEXT,
    guest_facts TEXT,
    created REAL,
    UNIQUE(study_id, host, name)
);
CREATE TABLE run(
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES study(id),
    key TEXT UNIQUE NOT NULL,
    workload TEXT NOT NULL,
    params TEXT,
    schedule TEXT,
    target_n INTEGER,
    created REAL
);
CREATE TABLE metric(
    run_id INTEGER NOT NULL REFERENCES run(id),
    name TEXT NOT NULL,
    unit TEXT,
    direction TEXT CHECK(direction IN ('lower', 'higher')),
    PRIMARY KEY(run_id, name)
);
CREATE TABLE iteration(
    run_id INTEGER NOT NULL REFERENCES run(id),
    guest_id INTEGER NOT NULL REFERENCES guest(id),
    iteration INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    started REAL,
    ended REAL,
    wall REAL,
    user REAL,
    sys REAL,
    exit_status INTEGER,
    boot_id TEXT,
    output_tail TEXT,
    source TEXT,
    PRIMARY KEY(run_id, guest_id, iteration, attempt)
);
CREATE TABLE sample(
    run_id INTEGER NOT NULL,
    guest_id INTEGER NOT NULL REFERENCES guest(id),
    iteration INTEGER NOT NULL,
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY(run_id, guest_id, iteration, metric),
    FOREIGN KEY(run_id, metric) REFERENCES metric(run_id, name)
);
-- compare reads one (run, metric, guest) series ordered by iteration: an index-only scan.
CREATE INDEX sample_series ON sample(run_id, metric, guest_id, iteration, value);
"""

# cpus: the host CPU of each vCPU in vCPU order, comma-separated ("3,4": vCPU 0 on CPU 3).
PLACEMENT_TABLE = """
CREATE TABLE IF NOT EXISTS placement(
    run_id INTEGER NOT NULL REFERENCES run(id),
    guest_id INTEGER NOT NULL REFERENCES guest(id),
    iteration INTEGER NOT NULL,
    label TEXT NOT NULL CHECK(label IN ('own', 'swapped')),
    cpus TEXT,
    PRIMARY KEY(run_id, guest_id, iteration)
);
"""

# declared: 'auto' or a count of iterations ('0', '2'); what `lab compare` and `lab report`
# discard unless told otherwise (lab.stats.discard). A run has one: the one given last.
WARMUP_TABLE = """
CREATE TABLE IF NOT EXISTS warmup(
    run_id INTEGER PRIMARY KEY REFERENCES run(id),
    declared TEXT NOT NULL CHECK(
        declared = 'auto' OR (declared <> '' AND declared NOT GLOB '*[^0-9]*')
    ),
    recorded REAL
);
"""

# Why a run ended before its n: the rule of --until, in its own words; none for a run that
# goes (or went) to its n.
STOP_TABLE = """
CREATE TABLE IF NOT EXISTS stop(
    run_id INTEGER PRIMARY KEY REFERENCES run(id),
    reason TEXT NOT NULL,
    decided REAL
);
"""

STOP_INTERVAL = """
ALTER TABLE stop ADD COLUMN interval TEXT;
"""

# The environment of each start of a run: one row per host and per guest (scope), its facts
# as a JSON object of strings (lab.run.environment), in the order the starts came.
ENVIRONMENT_TABLE = """
CREATE TABLE IF NOT EXISTS environment(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES run(id),
    scope TEXT NOT NULL CHECK(scope IN ('host', 'guest')),
    name TEXT NOT NULL,
    facts TEXT NOT NULL,
    recorded REAL
);
"""

# A sweep groups the runs one `lab run --sweep` makes, one per point of its axes, so that
# `lab compare` shows them as one family and a resumed sweep finds them (lab.run.sweep).
SWEEP_TABLES = """
CREATE TABLE IF NOT EXISTS sweep(
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES study(id),
    key TEXT UNIQUE NOT NULL,
    workload TEXT NOT NULL,
    axes TEXT NOT NULL,
    run_order TEXT NOT NULL CHECK(run_order IN ('interleaved', 'blocked')),
    created REAL
);
CREATE TABLE IF NOT EXISTS sweep_run(
    sweep_id INTEGER NOT NULL REFERENCES sweep(id),
    run_id INTEGER NOT NULL UNIQUE REFERENCES run(id),
    position INTEGER NOT NULL,
    point TEXT NOT NULL,
    PRIMARY KEY(sweep_id, position)
);
"""

# A factorial study's design, as lab.app.design.design_json writes it: one per study, the
# first kept (lab.store.designs).
DESIGN_TABLE = """
CREATE TABLE IF NOT EXISTS study_design(
    study_id INTEGER PRIMARY KEY REFERENCES study(id),
    design TEXT NOT NULL,
    recorded REAL
);
"""

# a new store: the latest
SCHEMA = (
    SCHEMA_V1 + PLACEMENT_TABLE + WARMUP_TABLE + STOP_TABLE + STOP_INTERVAL + ENVIRONMENT_TABLE
    + SWEEP_TABLES + DESIGN_TABLE
)  # fmt: skip

# name -> the statement that creates it; made when missing, whatever the version (above).
INDEXES: dict[str, str] = {
    "iteration_boot": "CREATE INDEX IF NOT EXISTS iteration_boot"
    " ON iteration(run_id, guest_id, ok, boot_id, iteration)",
}

MIGRATIONS: dict[int, str] = {  # from-version -> SQL that upgrades it by one step
    1: PLACEMENT_TABLE,
    2: WARMUP_TABLE,
    3: STOP_TABLE,
    4: STOP_INTERVAL + ENVIRONMENT_TABLE,
    5: SWEEP_TABLES,
    6: DESIGN_TABLE,
}


def _tables(script: str) -> list[str]:
    return re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", script)


# schema version -> the tables a store of that version has (a missing one is refused on open)
TABLES: dict[int, list[str]] = {1: _tables(SCHEMA_V1)}
for _version, _step in sorted(MIGRATIONS.items()):
    TABLES[_version + 1] = TABLES[_version] + _tables(_step)


def statements(script: str) -> list[str]:
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def describe_file(path: Path) -> str:
    """Say what a file that is not an SQLite database looks like, for the error message."""
    with path.open("rb") as f:
        head = f.read(64)
    signatures = (
        (b"\x1f\x8b", "gzip-compressed data"),
        (b"PK\x03\x04", "a zip archive"),
        (b"BZh", "bzip2-compressed data"),
        (b"\xfd7zXZ\x00", "xz-compressed data"),
        (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
        (b"\x7fELF", "an ELF executable"),
        (b"%PDF", "a PDF document"),
        (b"\x89PNG", "a PNG image"),
    )
    for magic, what in signatures:
        if head.startswith(magic):
            return what
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return f"binary data beginning {head[:8].hex(' ')}"
    first = text.strip().splitlines()[0] if text.strip() else ""
    kind = "JSON" if first[:1] in "{[" else "CSV" if "," in first else "text"
    return f"a {kind} file beginning {first[:40]!r}"


def check_file(path: Path) -> None:
    """Refuse, before SQLite touches it, a path that is a folder or not an SQLite file."""
    if path.is_dir():
        raise StoreError(
            f"{path} is a directory, not a result store",
            hint="Pass the path of the database file, e.g. --db results/lab.db",
        )
    if path.exists() and path.stat().st_size > 0:
        with path.open("rb") as f:
            magic = f.read(len(SQLITE_MAGIC))
        if magic != SQLITE_MAGIC:
            raise StoreError(
                f"{path} is not a lab result store: it is {describe_file(path)}",
                hint="Pass the path of a store made by lab (--db), or a new path to create one",
            )


def _run(conn: sqlite3.Connection, script: list[str]) -> None:
    # One statement at a time inside our own transaction: executescript() would commit early.
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in script:
            conn.execute(statement)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def prepare(conn: sqlite3.Connection, path: Path, readonly: bool = False) -> None:
    """Set the durability pragmas, then create the schema or check and upgrade its version;
    ``readonly``: only check that the store is one this lab reads, as it is."""
    try:
        mode = "wal" if readonly else conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as err:
        code = (getattr(err, "sqlite_errorcode", None) or 0) & 0xFF
        if code not in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            raise  # locked, read-only, ...: what the store's opening says of them
        raise StoreError(
            f"{path} cannot be read as an SQLite database: {err}",
            hint="The file may be damaged; restore it from a copy or pass another --db",
        ) from None
    if mode.lower() != "wal":
        raise StoreError(
            f"{path}: SQLite refused write-ahead logging (journal mode {mode})",
            hint="Put the store on a local file system (not NFS), e.g. --db results/lab.db",
        )
    if not tables:
        version_row = f"INSERT INTO meta(key, value) VALUES ('schema_version', '{SCHEMA_VERSION}')"
        _run(conn, [*statements(SCHEMA), *INDEXES.values(), version_row])
        return
    if "meta" not in tables:
        raise StoreError(
            f"{path} is an SQLite database but not a lab result store"
            f" (its tables: {', '.join(sorted(tables))})",
            hint="Pass the path of a store made by lab (--db), or a new path to create one",
        )
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    version = int(row[0]) if row and str(row[0]).isdigit() else 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer lab (store schema {version}; this lab reads up to"
            f" {SCHEMA_VERSION})",
            hint="Upgrade lab (pip install -U ./ from its newer checkout, in its environment)"
            " to read it",
        )
    if version < 1:
        raise StoreError(
            f"{path}: the meta table has no valid schema_version ({row})",
            hint="The file was not written by lab or is damaged; pass another --db",
        )
    missing = sorted(set(TABLES[min(version, SCHEMA_VERSION)]) - tables)
    if missing:
        raise StoreError(
            f"the store at {path} is missing table {', '.join(missing)}: it is not a lab store"
            " or it is damaged",
            hint="Pass the path of a store made by lab (--db); restore this one from a copy",
        )
    if readonly:
        if version < SCHEMA_VERSION:
            raise StoreError(
                f"the result store {path} is read-only and of an older schema ({version};"
                f" this lab reads {SCHEMA_VERSION}), which it cannot upgrade",
                hint="Copy it somewhere writable and pass the copy with --db",
            )
        return
    while version < SCHEMA_VERSION:
        step = statements(MIGRATIONS[version])
        version += 1
        _run(conn, [*step, f"UPDATE meta SET value='{version}' WHERE key='schema_version'"])
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    missing = [sql for name, sql in INDEXES.items() if name not in indexes]
    if missing:
        _run(conn, missing)


def prepare_readonly(conn: sqlite3.Connection, path: Path) -> None:
    """:func:`prepare` for a store opened read-only: its schema checked, nothing written."""
    prepare(conn, path, readonly=True)
