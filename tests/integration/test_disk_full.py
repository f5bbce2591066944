"""The disk holding the store fills up mid-run: a clear stop, a consistent store, a resume.

The store lives on a 4 MiB tmpfs. The schema, the WAL (which only grows here: SQLite
checkpoints it at 1,000 pages, ~4 MiB, more than the filesystem) and 8 iterations of
sysbench output per guest take a few hundred KiB, so the run fits until a filler file takes
every free byte. The next commit then meets ENOSPC (SQLITE_FULL). The runners in the guests
are not told: they go on journaling, and running the same command again once the filler is
gone stores every iteration exactly once.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.store.full import StoreFull
from tests.integration.conftest import Pair
from tests.integration.test_faults import start_run, wait_for_samples
from tests.integration.test_run import attempts, samples

pytestmark = pytest.mark.integration

N = 8
# Each iteration runs its full 3 s (1000G never completes), so the run is still going
# well after the second sample, when the filesystem is filled.
SYSBENCH_3S = ["-p", "time=3", "-p", "total_size=1000G", "-p", "block_size=1M"]


@pytest.fixture
def small_fs(pair: Pair, tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards whatever happened."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mountpoint = tmp_path / "small"
    mountpoint.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", str(mountpoint)], check=True
    )
    try:
        yield mountpoint
    finally:
        if subprocess.run(["umount", str(mountpoint)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def fill(directory: Path) -> Path:
    """Write a file until the filesystem has no byte left (ENOSPC), in smaller and smaller
    writes so that the last page is taken too."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as stream:
        for size in (1024 * 1024, 65536, 4096, 512, 1):
            block = b"\xff" * size
            try:
                while stream.write(block):
                    pass
            except OSError as err:
                assert err.errno == errno.ENOSPC, err
    return filler


def integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def test_a_full_disk_stops_the_run_clearly_and_the_same_command_resumes(
    pair: Pair, small_fs: Path
) -> None:
    db = small_fs / "lab.db"
    args = ("sysbench-memory", "--n", str(N), *SYSBENCH_3S)
    proc = start_run(pair, db, *args)
    try:
        wait_for_samples(db, "sysbench-memory", "throughput_mib_s", 2)
        assert proc.poll() is None, "the run ended before the disk could be filled"
        filler = fill(small_fs)
        out, _ = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == StoreFull.exit_code, out[-3000:]
    assert f"no space left for the result store {db}" in out
    assert "free on its filesystem" in out
    assert "Free space there, then run the same command again" in out
    assert "nothing already stored is lost" in out
    assert "Traceback" not in out

    # Consistent, and what is in holds whole iterations, numbered from 1 without gaps.
    assert integrity(db) == "ok"
    before = samples(db, "sysbench-memory", "throughput_mib_s")
    assert sum(len(v) for v in before.values()) >= 2
    for values in before.values():
        assert [i for i, _ in values] == list(range(1, len(values) + 1))
    stored_before = {(n, i): v for n, values in before.items() for i, v in values}

    filler.unlink()
    pair.lab("run", *args, "--db", str(db))
    got = samples(db, "sysbench-memory", "throughput_mib_s")
    assert {name: [i for i, _ in v] for name, v in got.items()} == {
        "lab-thp": list(range(1, N + 1)),
        "lab-shp1g": list(range(1, N + 1)),
    }
    after = {(n, i): v for n, values in got.items() for i, v in values}
    assert all(after[key] == value for key, value in stored_before.items())  # none rewritten
    succeeded = [(name, i) for name, i, _, ok in attempts(db, "sysbench-memory") if ok]
    assert len(succeeded) == len(set(succeeded)) == 2 * N  # each iteration succeeded once
    assert integrity(db) == "ok"
