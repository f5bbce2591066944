"""A running study survives the people around it, on the real pair.

Seen here before: guests destroyed and replaced under a `lab run` left it waiting silently for
over 20 minutes, opening one more SSH connection every ~10 s; a deleted run came back from
the guests' journals in 3 s. The guest destroyed here is brought back as it was (its domain
defined again from its own XML, over its own disk), so the later tests find the pair up.
"""

from __future__ import annotations

import shlex
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.run.steps import LOOK_UP_EVERY
from tests.integration.conftest import Pair
from tests.integration.test_run import attempts

pytestmark = pytest.mark.integration

VIRSH = ["virsh", "-c", "qemu:///system"]
LOST = "lab-thp"
GUEST_TIMEOUT = 20  # seconds: the least that keeps this test short
N = 8  # iterations of the destroyed run: 4 or more before the destroy


def tcp_sockets(pid: int) -> int:
    """The TCP connections process ``pid`` holds open (its libvirt socket is a Unix one)."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if path.exists():
            inodes |= {line.split()[9] for line in path.read_text().splitlines()[1:]}
    held = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            held += 1
    return held


def stored(db: Path) -> list[tuple[str, float]]:
    """(guest, started) of every successful attempt stored, none before the store exists."""
    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=30) as conn:
        try:
            return conn.execute(
                "SELECT g.name, i.started FROM iteration i JOIN guest g ON g.id = i.guest_id"
                " WHERE i.ok = 1 ORDER BY i.started"
            ).fetchall()
        except sqlite3.OperationalError:  # its schema is being made
            return []


def bring_back(pair: Pair, xml: Path) -> None:
    """The destroyed guest defined again from its XML and booted; back once SSH answers."""
    subprocess.run([*VIRSH, "define", str(xml)], check=True, capture_output=True)
    subprocess.run([*VIRSH, "start", LOST], check=True, capture_output=True)
    deadline = time.monotonic() + 600
    while pair.lab("ssh", LOST, "true", check=False, timeout=120).returncode != 0:
        assert time.monotonic() < deadline, f"{LOST} did not come back"
        time.sleep(3)


def test_a_destroyed_guest_stops_the_run_with_status_4_over_few_connections_and_it_resumes(
    pair: Pair, tmp_path: Path
) -> None:
    """Destroyed and undefined mid-iteration: the run stops with status 4 as soon as libvirt
    says the domain is gone (no guest timeout: no answer can come), holding a few connections,
    and names the command that resumes; with the guest back, that command stores the lost
    attempt as failed and repeats it."""
    db, xml = tmp_path / "lab.db", tmp_path / f"{LOST}.xml"
    # Its definition, not the running domain's XML: that one has the CPU model expanded
    # (qemu64,hypervisor=on,lahf-lm=on), and `lab diff --live` in a later test then found
    # the twins' -cpu different.
    dumped = subprocess.run(
        [*VIRSH, "dumpxml", "--inactive", LOST], check=True, capture_output=True, text=True
    )
    xml.write_text(dumped.stdout)
    # Iterations of a second: the destroy lands inside one, whose begin line is synced.
    run = ["run", "command", "-p", "argv=sleep 1", "--n", str(N), "--db", str(db)]
    argv = [sys.executable, "-m", "lab", *run, "--guest-timeout", str(GUEST_TIMEOUT)]
    proc = subprocess.Popen(
        argv, env=pair.lab.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # Iteration 2's samples are stored while iteration 3 runs (lab.run.steps: stored while
        # the next step runs), so iteration 3 began just before the 4th sample appeared: seen
        # within 0.05 s, 0.4 s later is inside it. (Polled every 0.5 s and destroyed 0.7 s
        # later, as before, the destroy fell up to 1.2 s into a 1.05 s iteration: once, in
        # the gap before the next began, and no attempt had been interrupted.)
        deadline = time.monotonic() + 300
        while len(stored(db)) < 4:
            assert proc.poll() is None and time.monotonic() < deadline, "no samples came"
            time.sleep(0.05)
        time.sleep(0.4)
        subprocess.run([*VIRSH, "destroy", LOST], check=True, capture_output=True)
        subprocess.run([*VIRSH, "undefine", LOST], check=True, capture_output=True)
        gone = time.monotonic()
        held = []
        while proc.poll() is None:
            held.append(tcp_sockets(proc.pid))
            assert time.monotonic() - gone < 240, f"still running after 240 s: {held}"
            time.sleep(1)
        waited = time.monotonic() - gone
        _, err = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        bring_back(pair, xml)
    assert proc.returncode == 4, err[-3000:]
    # A connection per guest (and one being replaced), however many retries: 52 once.
    assert held and max(held) <= 3, held
    # Silent for LOOK_UP_EVERY (5 s), libvirt says the domain is gone (no request waits out
    # the dead connection's 60 s bound), and the run stops: no GUEST_TIMEOUT of retries (on
    # this machine, 4 s from the undefine to the exit; 330 s before).
    assert waited < LOOK_UP_EVERY + 20, waited
    said = [line for line in err.splitlines() if f"{LOST} unreachable" in line]
    assert said == [], err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"lab: error: {LOST}: its domain no longer exists"), last
    assert "Traceback" not in err
    resume = last.rsplit("resume with `", 1)[1].rstrip("`")
    assert shlex.split(resume) == ["lab", "run", "command", "--n", str(N), "--study", "default",
                                   "-p", "argv=sleep 1", "--db", str(db)]  # fmt: skip

    pair.lab(*shlex.split(resume)[1:])  # the command the error named, as it is
    for name in (LOST, "lab-shp1g"):
        tries = [(i, ok) for guest, i, _, ok in attempts(db, "command") if guest == name]
        assert sorted({i for i, ok in tries if ok}) == list(range(1, N + 1)), tries
        assert len([i for i, ok in tries if ok]) == N, tries  # each once
    lost = [(i, ok) for guest, i, _, ok in attempts(db, "command") if guest == LOST]
    failed = [i for i, ok in lost if not ok]
    assert failed, f"the attempt the destroy took was not recorded: {lost}"


def test_a_deleted_run_is_run_again_not_read_back_from_the_journals(
    pair: Pair, tmp_path: Path
) -> None:
    db = tmp_path / "lab.db"
    args = ("run", "null", "--n", "2", "--guests", "lab-shp1g", "--db", str(db))
    pair.lab(*args)
    before = [when for _, when in stored(db)]
    with sqlite3.connect(db) as conn:
        (key,) = conn.execute("SELECT key FROM run").fetchone()
    pair.lab("runs", "--db", str(db), "delete", key, "--yes")
    assert stored(db) == []
    again = pair.lab(*args)
    after = [when for _, when in stored(db)]
    assert len(after) == 2 and min(after) > max(before), (before, after)  # done again
    assert f"retired 2 iterations of run {key} found in lab-shp1g's journal" in again.stderr
    assert "pass --adopt to take them up instead" in again.stderr
