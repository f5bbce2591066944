"""Ordinary accidents during a run on the real pair: the run goes on and loses nothing."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.core.hostexec import Host
from lab.host import daemons, nfs
from tests.integration.conftest import STATE_DIR, Pair
from tests.integration.test_run import (
    LONG_SYSBENCH,
    TIMED_SYSBENCH,
    attempts,
    samples,
)

pytestmark = pytest.mark.integration


def start_run(pair: Pair, db: Path, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "lab", "run", *args, "--db", str(db)]
    return subprocess.Popen(
        argv, env=pair.lab.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def wait_for_samples(
    db: Path, workload: str, metric: str, count: int, timeout: float = 600
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists() and sum(len(v) for v in samples(db, workload, metric).values()) >= count:
            return
        time.sleep(0.5)
    raise AssertionError(f"no {count} samples of {workload} after {timeout} s")


def domstate(name: str) -> str:
    return subprocess.run(
        ["virsh", "-c", "qemu:///system", "domstate", name], capture_output=True, text=True
    ).stdout.strip()


def test_a_libvirtd_restart_during_a_run_does_not_stop_it(pair: Pair, tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    proc = start_run(pair, db, "sysbench-memory", "--n", "6", *TIMED_SYSBENCH)
    wait_for_samples(db, "sysbench-memory", "throughput_mib_s", 2)
    systemd = daemons.has_systemd()
    daemons.restart(Host(), daemons.LIBVIRTD, systemd=systemd)
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-3000:]
    got = samples(db, "sysbench-memory", "throughput_mib_s")
    assert {name: [i for i, _ in v] for name, v in got.items()} == {
        "lab-thp": list(range(1, 7)),
        "lab-shp1g": list(range(1, 7)),
    }
    assert domstate("lab-thp") == domstate("lab-shp1g") == "running"


def test_an_nfs_server_restart_during_a_build_iteration(pair: Pair, tmp_path: Path) -> None:
    ganesha = nfs.GaneshaFiles(STATE_DIR / "ganesha").daemon()
    if daemons.find_pid(ganesha) is None:  # before the run: a skip must leave none running
        pytest.skip("the lab's NFS server here is not NFS-Ganesha")
    db = tmp_path / "lab.db"
    proc = start_run(pair, db, "demo-build", "--n", "3")
    wait_for_samples(db, "demo-build", "wall_s", 1)
    time.sleep(2)  # into a build
    daemons.restart(Host(), ganesha, systemd=False)
    out, _ = proc.communicate(timeout=1500)
    assert proc.returncode == 0, out[-3000:]
    got = samples(db, "demo-build", "wall_s")
    for name in ("lab-thp", "lab-shp1g"):
        assert [i for i, _ in got[name]] == [1, 2, 3]  # each iteration once, failed ones repeated
    for _, iteration, attempt, ok in attempts(db, "demo-build"):
        assert ok or any(
            i == iteration and a > attempt and k for _, i, a, k in attempts(db, "demo-build")
        )


def test_a_guest_reset_mid_iteration_is_recorded_failed_and_repeated(
    pair: Pair, tmp_path: Path
) -> None:
    db = tmp_path / "lab.db"
    proc = start_run(
        pair,
        db,
        "sysbench-memory",
        "--n",
        "2",
        "--guests",
        "lab-shp1g",
        *LONG_SYSBENCH,
    )
    wait_for_samples(db, "sysbench-memory", "throughput_mib_s", 1)
    time.sleep(3)  # into the second iteration
    subprocess.run(["virsh", "-c", "qemu:///system", "reset", "lab-shp1g"], check=True)
    out, _ = proc.communicate(timeout=1500)
    assert proc.returncode == 0, out[-3000:]
    got = samples(db, "sysbench-memory", "throughput_mib_s")["lab-shp1g"]
    assert [i for i, _ in got] == [1, 2]  # 2 repeated, on the new boot
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT iteration, attempt, ok, boot_id FROM iteration ORDER BY iteration, attempt"
        ).fetchall()
    failed = [r for r in rows if not r[2]]
    assert failed, f"the reset attempt was not recorded: {rows}"
    boots = {r[3] for r in rows if r[3]}
    assert len(boots) >= 2, "the boot id did not change across the reset"


KILLS = 8  # at random moments of the run: of its start, of a step, of a store commit


def test_sigkills_of_the_controller_at_random_moments_lose_nothing(
    pair: Pair, tmp_path: Path
) -> None:
    db = tmp_path / "lab.db"
    # Iterations of 2 s by the clock: on any machine the kills land while samples arrive.
    # Under sync, where each kill also cuts the channels of the stepped runners mid-step.
    args = ("sysbench-memory", "--n", "12", "--schedule", "sync", *TIMED_SYSBENCH)
    rng = random.Random(7)
    kills = 0
    while kills < KILLS:
        proc = start_run(pair, db, *args)
        time.sleep(rng.uniform(0.5, 4.0))
        if proc.poll() is not None:  # it finished before this kill: start from a new run
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        if db.exists():
            with sqlite3.connect(db) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert kills >= KILLS // 2, f"the run finished after only {kills} kills"
    pair.lab("run", *args, "--db", str(db))
    got = samples(db, "sysbench-memory", "throughput_mib_s")
    for name in ("lab-thp", "lab-shp1g"):
        assert [i for i, _ in got[name]] == list(range(1, 13))
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        dupes = conn.execute(
            "SELECT COUNT(*) FROM (SELECT run_id, guest_id, iteration, metric FROM sample"
            " GROUP BY run_id, guest_id, iteration, metric HAVING COUNT(*) > 1)"
        ).fetchone()
    assert dupes == (0,)
