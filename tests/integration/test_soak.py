"""A short soak: `lab run null --n 3000` on both twins; the controller stays flat, nothing lost.

The checks are `bench/soak.py`'s (which runs the 20,000-iteration soak and prints its
figures): the controller's RSS and open descriptors, read from /proc every half second,
are fitted against the iteration number after the first 10 % of the run, and the slopes
are bounded (bytes and descriptors per iteration), so a leak shows in a few thousand
iterations as it would in twenty thousand; the totals after 10 % are bounded as before.
That the bound catches a leak (one journal line kept per iteration) is shown by
tests/unit/test_soak_bounds.py.

Expected duration under TCG: 40-85 ms per iteration on machines of this kind (both twins
at once, each on its own host CPU), so 2-4.5 minutes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.soak import figures, leaks, ms_per_iteration, soak_command, watch
from tests.integration.conftest import Pair
from tests.integration.test_run import samples

pytestmark = [pytest.mark.integration]

N = 3_000
DEADLINE_S = 1800  # the estimate above, with a wide margin for a loaded host


def test_a_short_soak_keeps_the_controller_flat(
    pair: Pair,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "lab.db"
    # concurrent: thousands of iterations in the time CI has (bench/soak.py soaks sync, the
    # default, for hours)
    argv = soak_command(N, db, f"soak-{tmp_path.name}", "concurrent")
    watched = watch(argv, pair.lab.env, db, tmp_path / "run.log", DEADLINE_S)
    assert watched.returncode == 0, watched.output[-3000:]

    got = samples(db, "null", "wall_s")
    assert {name: len(v) for name, v in got.items()} == {"lab-thp": N, "lab-shp1g": N}
    for values in got.values():
        assert [i for i, _ in values] == list(range(1, N + 1))
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()

    found = figures(watched.ticks, N)
    found["duration_s"] = round(watched.duration, 1)
    found["ms_per_iteration_in_guest"] = ms_per_iteration(db)
    for key, value in found.items():
        record_property(f"soak_{key}", value)
    with capsys.disabled():  # shown whatever -s/-ra say: the machine's emulation speed
        print("\nsoak figures:", ", ".join(f"{k}={v}" for k, v in found.items()))
    assert leaks(found) == [], found
