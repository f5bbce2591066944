"""A store on a read-only mount whose last writes are still in its WAL file: refused, not
read without them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.core.errors import StoreError
from lab.store import Store

CHECKOUT = Path(__file__).resolve().parents[2]

# A writer that records 2 x 50 samples, checkpoints them into the store's file, records
# 2 x 50 more into the WAL only, and dies without closing the store (a crash, a copy taken
# while it ran).
WRITER = """
import os, sys
from lab.store import IterationRecord, MetricInfo, Store
store = Store.open(sys.argv[1])
study = store.ensure_study("s")
run = store.ensure_run(study, "s/w", "w", {}, None, 100, [MetricInfo("t", "s", "lower")])
guests = [store.ensure_guest(study, f"lab-{v}", v) for v in ("thp", "shp1g")]
def record(first):
    for g in guests:
        store.record(run, g, [IterationRecord(i, 1, True, metrics={"t": g * 10.0 + i % 3})
                              for i in range(first, first + 50)])
record(1)
store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
store._conn.execute("PRAGMA wal_autocheckpoint=0")
record(51)
os._exit(0)
"""


def _crashed_store(folder: Path) -> Path:
    db = folder / "lab.db"
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    subprocess.run([sys.executable, "-c", WRITER, str(db)], env=env, check=True)
    assert Path(f"{db}-wal").stat().st_size > 0
    return db


@pytest.mark.parametrize("with_shm", [False, True])
def test_a_read_only_store_with_writes_in_its_wal(
    tmp_path: Path, tmpfs: Path, with_shm: bool
) -> None:
    """Without its -shm file the store was opened as immutable, its WAL ignored: compare
    and runs saw 50 samples of each guest's 100, and said nothing."""
    written = _crashed_store(tmp_path)
    for suffix in ("", "-wal", "-shm") if with_shm else ("", "-wal"):
        shutil.copy(f"{written}{suffix}", f"{tmpfs / 'lab.db'}{suffix}")
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    db = tmpfs / "lab.db"
    if with_shm:  # SQLite reads the WAL through it: every sample is there
        with Store.open(db, create=False) as store:
            assert [s.values.size for s in store.values()] == [100, 100]
        return
    with pytest.raises(StoreError) as raised:
        Store.open(db, create=False)
    assert raised.value.exit_code == 5
    assert f"its last writes are in {db}-wal" in str(raised.value)
    assert "Copy lab.db and lab.db-wal together to a writable folder" in (raised.value.hint or "")
    copy = tmp_path / "copy"
    copy.mkdir()
    for suffix in ("", "-wal"):  # what the hint says to do
        shutil.copy(f"{db}{suffix}", f"{copy / 'lab.db'}{suffix}")
    with Store.open(copy / "lab.db", create=False) as store:
        assert [s.values.size for s in store.values()] == [100, 100]
