"""`lab run` on the real pair: workloads on both twins at once, every sample stored, resume."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.integration.conftest import Pair

pytestmark = pytest.mark.integration

SHORT_SYSBENCH = ["-p", "time=2", "-p", "total_size=256M", "-p", "block_size=1M"]
# Iterations long enough (8 s, never cut short by the size) for a fault to land inside one.
LONG_SYSBENCH = ["-p", "time=8", "-p", "total_size=1000G", "-p", "block_size=1M"]
# 2 s each by the clock, however fast the machine: a run of them lasts long enough to be
# interrupted part way (SHORT_SYSBENCH ends at its size, in a fraction of a second on a
# fast host, so a 20-iteration run could finish between two looks of the test).
TIMED_SYSBENCH = ["-p", "time=2", "-p", "total_size=1000G", "-p", "block_size=1M"]


def samples(db: Path, workload: str, metric: str) -> dict[str, list[tuple[int, float]]]:
    """Each guest's (iteration, value) pairs; none while `lab run` has not made the store
    yet (a test polls this while the run starts: the store is neither created here nor
    read before its schema is there)."""
    if not db.exists():
        return {}
    conn = sqlite3.connect(db, timeout=30)
    try:
        rows = conn.execute(
            "SELECT g.name, s.iteration, s.value FROM sample s JOIN run r ON r.id = s.run_id"
            " JOIN guest g ON g.id = s.guest_id WHERE r.workload = ? AND s.metric = ?"
            " ORDER BY g.name, s.iteration",
            (workload, metric),
        ).fetchall()
    except sqlite3.OperationalError as err:
        if "no such table" not in str(err):
            raise
        return {}
    finally:
        conn.close()
    out: dict[str, list[tuple[int, float]]] = {}
    for name, iteration, value in rows:
        out.setdefault(name, []).append((iteration, value))
    return out


def attempts(db: Path, workload: str) -> list[tuple[str, int, int, int]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT g.name, i.iteration, i.attempt, i.ok FROM iteration i"
            " JOIN run r ON r.id = i.run_id JOIN guest g ON g.id = i.guest_id"
            " WHERE r.workload = ? ORDER BY g.name, i.iteration, i.attempt",
            (workload,),
        ).fetchall()


@pytest.mark.parametrize("schedule", ["sync", "alternate"])
def test_thirty_iterations_of_null_each_stored_once_and_paired(
    pair: Pair, tmp_path: Path, schedule: str
) -> None:
    """Under each schedule every iteration has one ok record per twin; under the paired ones
    (a runner stepped on a channel) each twin's iteration i starts after both ended i - 1.
    The sync run power-cycles the twins half way (--reboot-every): two boots per guest."""
    db = tmp_path / "lab.db"
    reboot = ["--reboot-every", "15"] if schedule == "sync" else []
    pair.lab("run", "null", "--n", "30", "--schedule", schedule, "--db", str(db), *reboot)
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT g.name, i.iteration, i.ok, i.started, i.ended, i.boot_id FROM iteration i"
            " JOIN guest g ON g.id = i.guest_id ORDER BY g.name, i.iteration, i.attempt"
        ).fetchall()
    by_guest: dict[str, list[tuple[int, float, float]]] = {}
    boots: dict[str, list[str]] = {}
    for name, iteration, ok, started, ended, boot in rows:
        assert ok, rows
        by_guest.setdefault(name, []).append((iteration, started, ended))
        boots.setdefault(name, []).append(boot)
    assert sorted(by_guest) == ["lab-shp1g", "lab-thp"]
    for name, done in by_guest.items():
        assert [i for i, _, _ in done] == list(range(1, 31)), name
        if schedule == "sync":  # iterations 1-15 in one boot, 16-30 in the next
            assert len(set(boots[name][:15])) == len(set(boots[name][15:])) == 1, boots
            assert boots[name][0] != boots[name][15], boots
        else:
            assert len(set(boots[name])) == 1, boots
    if schedule == "sync":
        compared = json.loads(pair.lab("compare", "--db", str(db), "--format", "json").stdout)
        assert compared, "lab compare gave nothing for the rebooted run"
    # The guests' clocks differ (by up to a second under emulation), so the test asks
    # whether some offset between them puts every twin's iteration i + 1 after both twins
    # ended i: offset < thp(i+1).start - shp(i).end and offset > thp(i).end - shp(i+1).start.
    # Within a boot: a reboot sets each guest's clock afresh.
    thp, shp = by_guest["lab-thp"], by_guest["lab-shp1g"]
    for steps in [range(14), range(15, 29)] if schedule == "sync" else [range(29)]:
        below = min(thp[i + 1][1] - shp[i][2] for i in steps)
        above = max(thp[i][2] - shp[i + 1][1] for i in steps)
        assert above < below, (above, below)
