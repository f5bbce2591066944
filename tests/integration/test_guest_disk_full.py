"""A guest's disk fills up: the run stops at once and says so, and resumes once there is room.

The guest user reserves every block it may use (posix_fallocate, so nothing is written and
the host's qcow2 does not grow); the root-reserved blocks stay free, so the guest itself
keeps working. The runner then cannot write even its spec file. Without the check, the
controller took that for a lost guest and retried for ever.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import Pair
from tests.integration.test_run import attempts, samples

pytestmark = pytest.mark.integration

GUEST = "lab-shp1g"
FILLER = "/home/lab/lab-filler"

# Reserve, in smaller and smaller pieces, every block the user may still take.
FILL = """
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
size = 0
for piece in (1 << 30, 1 << 26, 1 << 22, 1 << 16, 1 << 12):
    while True:
        try:
            os.posix_fallocate(fd, size, piece)
        except OSError as err:
            if err.errno != errno.ENOSPC:
                raise
            break
        size += piece
print(size)
"""


def free_bytes(pair: Pair) -> int:
    out = pair.lab("ssh", GUEST, "df", "-B1", "--output=avail", "/home/lab").stdout
    return int(out.split()[-1])


def test_a_full_guest_disk_stops_the_run_clearly_and_the_same_command_resumes(
    pair: Pair, tmp_path: Path
) -> None:
    db = tmp_path / "lab.db"
    args = ("run", "null", "--n", "5", "--study", "guest-disk-full", "--db", str(db))
    try:
        filled = int(pair.lab("ssh", GUEST, "python3", "-c", FILL, FILLER).stdout)
        assert filled > 0 and free_bytes(pair) < 1024 * 1024
        full = pair.lab(*args, check=False, timeout=600)
        assert full.returncode == 6, full.stdout + full.stderr
        message = full.stderr
        assert f"{GUEST}: the guest's disk is full" in message
        assert f"lab ssh {GUEST} df -h" in message  # what to do
        assert "unreachable" not in message  # not taken for a lost guest
    finally:
        pair.lab("ssh", GUEST, "rm", "-f", FILLER)
    assert free_bytes(pair) > 100 * 1024 * 1024
    pair.lab(*args, timeout=600)
    got = samples(db, "null", "wall_s")
    assert {name: [i for i, _ in rows] for name, rows in got.items()} == {
        "lab-thp": [1, 2, 3, 4, 5],
        GUEST: [1, 2, 3, 4, 5],
    }
    assert all(ok for name, _, _, ok in attempts(db, "null") if name == GUEST)
