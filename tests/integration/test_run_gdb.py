"""`gdb-build` on the real GDB source, on NFS, on both twins: the study's third benchmark."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import Pair
from tests.integration.test_run import samples

pytestmark = [pytest.mark.integration, pytest.mark.slow]
FETCH = Path(__file__).resolve().parents[2] / "scripts" / "fetch-gdb-source"


@pytest.fixture(scope="module")
def gdb_source() -> str:
    done = subprocess.run(["bash", str(FETCH)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"could not fetch the GDB source with {FETCH}: {done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


def test_gdb_libdecnumber_builds_on_nfs_in_both_twins(
    pair: Pair, gdb_source: str, tmp_path: Path
) -> None:
    """The mechanics end to end: the real tarball unpacked into the export, each twin's own
    build tree on NFS configured (untimed, the top-level configure), then one directory of
    the tree configured and built, timed (``make all-libdecnumber``), in both twins at once.

    The target is the smallest library of the tree with a configure of its own: natively
    2.2 s for the top-level configure and 3.2 s for the target, a few minutes under TCG,
    where ``all-libiberty`` took 12.5 minutes on a slow machine (its configure alone 8) and
    the whole of GDB takes hours. The full build is ``bench/gdb_build.py``, for a real host.
    Built with CFLAGS=-O0 through configure_args, which gives it a build tree of its own."""
    db = tmp_path / "lab.db"
    pair.lab(
        "run",
        "gdb-build",
        "--n",
        "1",
        "--db",
        str(db),
        "-p",
        f"source={gdb_source}",
        "-p",
        "target=all-libdecnumber",
        "-p",
        "configure_args=CFLAGS=-O0",
        timeout=3600,
    )
    got = samples(db, "gdb-build", "wall_s")
    assert {name: [i for i, _ in v] for name, v in got.items()} == {
        "lab-thp": [1],
        "lab-shp1g": [1],
    }
    assert all(1 < v < 3600 for values in got.values() for _, v in values)
    # the objects are on the host's export, in each guest's own build tree
    built = list(Path("/var/lib/lab/nfs").glob("build/lab-*/gdb_*-*/libdecnumber/libdecnumber.a"))
    assert {p.relative_to("/var/lib/lab/nfs").parts[1] for p in built} == {"lab-thp", "lab-shp1g"}
    # configure_args reached configure: the tree's record of how it was configured says so
    for lib in built:
        status = (lib.parents[1] / "config.status").read_text(errors="replace")
        assert "CFLAGS=-O0" in status, lib
