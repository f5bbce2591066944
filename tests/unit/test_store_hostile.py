"""The store under hostile conditions, with real files and real processes: ``lab store
check`` searches an index for every row it checks (it was quadratic), and every SQLite
failure is one line naming the store with the documented status, never a traceback."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.core.errors import StoreError
from lab.store import Store
from lab.store.guard import StoreLockedError
from lab.store.listing import ORPHANS
from tests.unit.helpers import twins_store

# -- lab store check is linear ---------------------------------------------------------------


@pytest.mark.parametrize("what", sorted(ORPHANS))
def test_each_orphan_query_searches_an_index_per_row(tmp_path: Path, what: str) -> None:
    """One table scanned, the owner searched by an index for each row: never a scan inside
    a scan. The samples' query searched iteration_boot by (run, guest) only, reading every
    attempt of the guest for each sample: 40,000 samples took 60 s."""
    twins_store(tmp_path / "lab.db")
    conn = sqlite3.connect(tmp_path / "lab.db")
    plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + ORPHANS[what])]
    conn.close()
    scans = [step for step in plan if step.startswith("SCAN")]
    searches = [step for step in plan if step.startswith("SEARCH")]
    assert len(scans) == 1, plan
    assert len(searches) == 1, plan
    assert "USING INTEGER PRIMARY KEY" in searches[0] or "USING INDEX" in searches[0], plan
    if what == "samples without their attempt":  # by the whole key, not a prefix of it
        assert "(run_id=? AND guest_id=? AND iteration=?)" in searches[0], plan


# -- every failure is one line -----------------------------------------------------------------

CHECKOUT = Path(__file__).resolve().parents[2]


def lab(*args: str) -> tuple[int, str, str]:
    """``python -m lab ARGS`` in a real process: status, standard output, standard error."""
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT), "COLUMNS": "200"}
    env.pop("LAB_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "lab", *args], cwd=CHECKOUT, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err[-3000:]
    return err


def test_a_store_locked_by_another_writer(tmp_path: Path) -> None:
    """A second process holds BEGIN IMMEDIATE: after the busy timeout a write fails in one
    line, status 8, naming that process."""
    db = twins_store(tmp_path / "lab.db", 5)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time\n"
         f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        started = time.monotonic()
        with pytest.raises(StoreLockedError) as caught, Store.open(db, busy_timeout=0.3) as store:
            store.ensure_study("another")
        assert 0.3 <= time.monotonic() - started < 5
    finally:
        holder.kill()
        holder.wait()
    err = caught.value
    assert err.exit_code == 8
    assert f"another process held the write lock of the result store {db} for 0.3 s" in str(err)
    assert f"pid {holder.pid} (" in str(err) and "\n" not in str(err)
    with Store.open(db, busy_timeout=0.3) as store:  # the holder gone, the write goes in
        assert store.ensure_study("another") > 0


def damage(db: Path, table: str, cells: bool = False) -> None:
    """Overwrite the middle of a leaf page of ``table`` (a table or an index) in the file;
    ``cells``: its cell pointers (zeroed) instead, which SQLite reads without an error."""
    conn = sqlite3.connect(db)
    pages = [
        p
        for (p,) in conn.execute(
            "SELECT pageno FROM dbstat WHERE name=? AND pagetype='leaf' ORDER BY pageno", (table,)
        )
    ]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with db.open("r+b") as f:
        if cells:
            f.seek((pages[0] - 1) * size + 100)
            f.write(bytes(200))
        else:
            f.seek((pages[len(pages) // 2] - 1) * size + size // 4)
            f.write(bytes(range(256)) * (size // 512))


def test_a_damaged_store_stops_compare_and_store_check_reports_it(tmp_path: Path) -> None:
    db = twins_store(tmp_path / "lab.db", 1000)
    damage(db, "sample_series")  # what compare reads
    status, _, err = lab("compare", "--db", str(db))
    assert status == 5
    assert one_line(err).startswith(f"lab: error: the result store {db} is damaged (On tree page")
    assert "Run `lab store check`" in err
    # a store too big to be checked first: the read that meets the damaged page says so
    damaged = pytest.raises(
        StoreError, match=re.escape("is damaged (database disk image is malformed)")
    )
    with damaged, Store.open(db, create=False) as store:
        store.verify(limit=0)
        store.values()
    status, out, err = lab("store", "check", "--db", str(db))
    assert status == 5
    assert "integrity  " in out and "ok" not in out.split("integrity", 1)[1].split("\n")[0]
    assert one_line(err) == (
        f"lab: error: {db}: SQLite's integrity check failed. Restore the store from a copy;"
        " the journals in the guests can refill it\n"
    )


def test_damage_that_reads_without_an_error_stops_compare_too(tmp_path: Path) -> None:
    """Zeroed cell pointers of an index page: compare read 854 of 1,000 samples of a guest
    and said nothing; a store this small is checked (quick_check) before it is analysed."""
    db = twins_store(tmp_path / "lab.db", 1000)
    damage(db, "sample_series", cells=True)
    status, out, err = lab("compare", "--db", str(db))
    assert status == 5, out
    assert one_line(err).startswith(f"lab: error: the result store {db} is damaged (On tree page")
    with Store.open(db, create=False) as store:  # a big store is left to its reads
        store.verify(limit=1024)
        assert sum(s.values.size for s in store.values()) < 2000


def test_store_check_on_damaged_sample_pages(tmp_path: Path) -> None:
    db = twins_store(tmp_path / "lab.db", 1000)
    damage(db, "sample")
    status, out, err = lab("store", "check", "--db", str(db), "--json")
    assert status == 5
    assert json.loads(out)["integrity"] != ["ok"]
    assert "SQLite's integrity check failed" in one_line(err)


@pytest.mark.parametrize("command", [["compare"], ["runs"], ["store", "check"], ["export"]])
def test_a_store_missing_a_table(tmp_path: Path, command: list[str]) -> None:
    db = twins_store(tmp_path / "lab.db", 5)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE sample")
    conn.commit()
    conn.close()
    status, _, err = lab(*command, "--db", str(db))
    assert status == 5
    assert one_line(err).startswith(
        f"lab: error: the store at {db} is missing table sample: it is not a lab store or it"
        " is damaged."
    )


def test_any_sqlite_error_in_a_store_block_names_the_store(tmp_path: Path) -> None:
    db = twins_store(tmp_path / "lab.db", 5)
    missing = pytest.raises(StoreError, match=f"the store at {db} is missing table nosuch")
    with missing, Store.open(db) as store:
        store._conn.execute("SELECT * FROM nosuch")
    with (
        pytest.raises(StoreError, match=f'the result store {db}: near "SELEKT"'),
        Store.open(db) as store,
    ):
        store._conn.execute("SELEKT 1")


def test_a_store_folder_that_cannot_be_searched(tmp_path: Path) -> None:
    """ENAMETOOLONG stands for EACCES, which root never gets."""
    db = f"/{'d' * 5000}/lab.db"
    (tmp_path / "in.csv").write_text("variant,workload,metric,value\nthp,w,t,1.5\n")
    importing = ["import", str(tmp_path / "in.csv"), "--direction", "lower"]
    for command in (["runs"], importing):
        status, _, err = lab(*command, "--db", db)
        assert status == 5, err
        assert "cannot open result store /ddd" in one_line(err) and "too long" in err


@pytest.fixture
def readonly_mount(tmpfs: Path) -> Path:
    """A store on a tmpfs remounted read-only (root writes any file whatever its mode)."""
    twins_store(tmpfs / "lab.db", 20)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    return tmpfs / "lab.db"


def test_a_read_only_mount_is_read_and_refuses_writes_saying_so(readonly_mount: Path) -> None:
    db = str(readonly_mount)
    status, out, err = lab("compare", "--db", db)
    assert status == 0 and "error" not in err and "thp" in out and "shp1g" in out
    status, out, err = lab("runs", "--db", db)
    assert (status, err) == (0, "") and "s/w" in out
    status, out, err = lab("export", "--db", db)
    assert (status, err) == (0, "") and len(out.splitlines()) == 41  # a header, 40 samples
    status, out, err = lab("store", "check", "--db", db)
    assert (status, err) == (0, "") and "integrity  ok" in out
    status, out, err = lab("study", "check", str(CHECKOUT / "studies" / "demo.toml"), "--db", db)
    assert (status, err) == (0, "") and out.endswith("demo.toml: valid\n")
    status, _, err = lab("runs", "--db", db, "delete", "s/w", "--yes")
    assert status == 5
    assert one_line(err).startswith(f"lab: error: the result store {db} is read-only")
    assert "restore" not in err
    (readonly_mount.parent.parent / "in.csv").write_text(
        "variant,workload,metric,value\nthp,w,t,1\n"
    )
    status, _, err = lab("import", str(readonly_mount.parent.parent / "in.csv"), "--direction",
                         "lower", "--db", db)  # fmt: skip
    assert status == 5
    assert one_line(err).startswith(f"lab: error: the result store {db} is read-only")


def test_store_check_counts_on_a_second_connection_beside_the_integrity_check(
    tmp_path: Path,
) -> None:
    db = twins_store(tmp_path / "lab.db", 10)
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM iteration WHERE iteration=3")  # its two samples are orphans now
    conn.commit()
    conn.close()
    with Store.open(db, create=False) as store:
        integrity, counts, orphans = store.check()
    assert integrity == ["ok"]
    assert counts == {"study": 1, "run": 1, "guest": 2, "iteration": 18, "sample": 20}
    assert orphans["samples without their attempt"] == 2
    assert sum(orphans.values()) == 2
