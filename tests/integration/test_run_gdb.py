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


def test_gdb_libiberty_builds_on_nfs_in_both_twins(
    pair: Pair, gdb_source: str, tmp_path: Path
) -> None:
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
        "target=all-libiberty",
        timeout=3600,
    )
    got = samples(db, "gdb-build", "wall_s")
    assert {name: [i for i, _ in v] for name, v in got.items()} == {
        "lab-thp": [1],
        "lab-shp1g": [1],
    }
    assert all(1 < v < 3600 for values in got.values() for _, v in values)
    # the objects are on the host's export, in each guest's own build tree
    built = list(Path("/var/lib/lab/nfs").glob("build/lab-*/**/libiberty.a"))
    assert {p.relative_to("/var/lib/lab/nfs").parts[1] for p in built} == {"lab-thp", "lab-shp1g"}
