"""Pairs on two hosts at once, one store: the session's pair on qemu:///system and a second
pair on the same libvirt reached as a remote host, over qemu+ssh through an sshd on loopback.

Both "hosts" are this machine, so the second pair shares its CPUs with the first: `lab up`
refuses that unless told --allow-overcommit. Guests of the remote host are reached through
its SSH (ProxyCommand), their files are volumes of libvirt storage pools made over the
libvirt connection, and their samples land in the one local store tagged with the host.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.conftest import STATE_DIR, Lab, Pair
from tests.integration.sshhop import SSHD, SSHHop

pytestmark = pytest.mark.integration

SIZING = ("--vcpus", "1", "--memory", "1G", "--reserve-host-cpus", "0")
SYSBENCH_2S = ("-p", "time=2", "-p", "total_size=1000G", "-p", "block_size=1M")
METRIC = "throughput_mib_s"
QEMU_CONF = Path("/etc/libvirt/qemu.conf")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def hop(pair: Pair, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, SSHHop]]:
    if not Path(SSHD).exists():
        pytest.skip("openssh-server is not installed: run `bash scripts/bootstrap`")
    folder = tmp_path_factory.mktemp("hop")
    hop = SSHHop(folder, free_port())
    hop.make()
    hop.start()
    config = folder / "lab.toml"
    config.write_text(f"[hosts]\nloop = {json.dumps(hop.uri)}\n")
    lab = Lab({**pair.lab.env, "LAB_CONFIG": str(config)})
    yield lab, hop
    if hop.proc is None:
        hop.start()
    lab("down", "--hosts", "loop", check=False)
    hop.cut()


@dataclass
class LoopPair:
    lab: Lab
    hop: SSHHop
    up_output: str


@pytest.fixture(scope="module")
def loop_pair(hop: tuple[Lab, SSHHop]) -> LoopPair:
    lab, ssh = hop
    # --pairs 1 over all hosts: 'local' runs the session's pair, so the pair goes to 'loop'.
    up = lab("up", "--pair", "thp,shp1g", "--pairs", "1", *SIZING, "--allow-overcommit")
    return LoopPair(lab, ssh, up.stdout + up.stderr)


def counts(db: Path, study: str) -> dict[tuple[str, str], int]:
    """(host, guest) -> iterations with a sample of METRIC, read while a run may write."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        rows = conn.execute(
            "SELECT g.host, g.name, COUNT(DISTINCT s.iteration) FROM sample s"
            " JOIN guest g ON g.id = s.guest_id JOIN study st ON st.id = g.study_id"
            " WHERE st.name = ? AND s.metric = ? GROUP BY g.id",
            (study, METRIC),
        ).fetchall()
    return {(host, name): n for host, name, n in rows}


def iterations(db: Path, study: str) -> dict[tuple[str, str], list[int]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT g.host, g.name, s.iteration FROM sample s JOIN guest g ON g.id = s.guest_id"
            " JOIN study st ON st.id = g.study_id WHERE st.name = ? AND s.metric = ?"
            " ORDER BY g.host, g.name, s.iteration",
            (study, METRIC),
        ).fetchall()
    found: dict[tuple[str, str], list[int]] = {}
    for host, name, i in rows:
        found.setdefault((host, name), []).append(i)
    return found


def wait_until(what: str, check: object, timeout: float, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        if proc.poll() is not None:
            raise AssertionError(f"the run ended ({proc.returncode}) before {what}")
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def test_a_pair_sharing_cpus_with_running_guests_is_refused(hop: tuple[Lab, SSHHop]) -> None:
    lab, _ = hop
    done = lab("up", "--pair", "thp,shp1g", "--hosts", "loop", *SIZING, check=False)
    assert done.returncode == 3, done.stderr
    assert "lab-thp may run on CPU" in done.stderr and "--allow-overcommit" in done.stderr
    assert not (STATE_DIR / "hosts/loop/lab.json").exists()
    listed = subprocess.run(
        ["virsh", "-c", "qemu:///system", "list", "--all", "--name"], capture_output=True, text=True
    ).stdout.split()
    assert "lab-loop-thp" not in listed


def test_the_remote_host_is_checked_over_its_ssh_and_libvirt(hop: tuple[Lab, SSHHop]) -> None:
    lab, _ = hop
    checked = json.loads(lab("host", "check", "--hosts", "loop", "--json", *SIZING).stdout)
    rows = {row["name"]: row for row in checked["rows"]}
    assert checked["ready"] is True, checked
    assert rows["libvirtd"]["state"] == "ok" and rows["network lab"]["state"] == "ok"
    assert "TCG" in rows["accelerator"]["detail"] or "KVM" in rows["accelerator"]["detail"]
    # Read on the host through its SSH: the session's shp1g holds one of the two 1 GiB pages.
    pages = [row["detail"] for name, row in rows.items() if name.startswith("huge pages 1 GiB")]
    assert pages and all("2 total, 1 free" in detail for detail in pages), pages
    assert "not used on other hosts" in rows["NFS (ganesha)"]["detail"]


def test_the_remote_host_is_prepared_and_released_over_ssh(hop: tuple[Lab, SSHHop]) -> None:
    """2 MiB pages asked of "loop" over its SSH: the pool, a hugetlbfs mount and libvirt's
    qemu.conf are changed there, recorded here for that host only, and put back by release.
    (The 1 GiB pages, the network and the rest are there already: the session's own prepare
    made them on this same machine, and its record stays as it was.)"""
    lab, _ = hop
    local_record = STATE_DIR / "host-changes.json"
    before = local_record.read_bytes() if local_record.exists() else None
    conf_before = QEMU_CONF.read_text()
    pool = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
    assert pool.read_text().strip() == "0"
    try:
        done = lab("host", "prepare", "--hosts", "loop", "--hugepages", "1G:2,2M:4")
        mark = "lab: changed on host loop: "
        assert [line.removeprefix(mark) for line in done.stderr.splitlines()
                if line.startswith(mark)] == [
            "2 MiB huge pages on node 0: 0 -> 4",
            "created /dev/hugepages2M",
            "mounted hugetlbfs (pagesize=2M) on /dev/hugepages2M",
            f"set hugetlbfs_mount in {QEMU_CONF}",
        ]  # fmt: skip
        assert "host loop has no systemd: restart its libvirtd by hand" in done.stderr
        assert "NFS: not set up on host loop" in done.stderr
        assert pool.read_text().strip() == "4"
        assert "/dev/hugepages2M hugetlbfs" in Path("/proc/mounts").read_text()
        assert '"/dev/hugepages2M"' in QEMU_CONF.read_text()
        record = json.loads((STATE_DIR / "hosts/loop/host-changes.json").read_text())
        assert [c["kind"] for c in record["changes"]] == ["hugepages", "mkdir", "mount",
                                                          "qemu_conf"]  # fmt: skip
        assert (local_record.read_bytes() if local_record.exists() else None) == before
        checked = json.loads(lab("host", "check", "--hosts", "loop", "--json", *SIZING).stdout)
        rows = {row["name"]: row["detail"] for row in checked["rows"]}
        assert "4 total, 4 free" in rows["huge pages 2 MiB node 0"], rows
        assert "in libvirt's hugetlbfs_mount" in rows["hugetlbfs 2 MiB"], rows
        again = lab("host", "prepare", "--hosts", "loop", "--hugepages", "1G:2,2M:4")
        assert "host loop prepared: it already was, nothing changed" in again.stderr
    finally:
        released = lab("host", "release", "--hosts", "loop")
    assert "host loop released: 4 change(s) undone" in released.stderr
    assert pool.read_text().strip() == "0"
    assert "/dev/hugepages2M" not in Path("/proc/mounts").read_text()
    assert QEMU_CONF.read_text() == conf_before
    assert not (STATE_DIR / "hosts/loop/host-changes.json").exists()
    assert (local_record.read_bytes() if local_record.exists() else None) == before


def test_the_remote_pair_is_up_from_pool_volumes_and_verified(loop_pair: LoopPair) -> None:
    out = loop_pair.up_output
    assert "1 pair(s), one per host: on loop (a lab is up on local)" in out
    assert "lab up on loop" in out and "verified" in out
    assert "host loop: accelerator TCG" in out
    if "uploading image" in out:  # the first pair on this host (the image pool stays after)
        assert "loop image: uploading image 100 % of" in out
    virsh = ["virsh", "-c", loop_pair.hop.uri]
    volumes = subprocess.run(
        [*virsh, "vol-list", "lab-images"], capture_output=True, text=True, check=True
    ).stdout
    assert ".complete" in volumes and ".qcow2" in volumes and ".vmlinuz" in volumes
    guest_vols = subprocess.run(
        [*virsh, "vol-list", "lab-loop-shp1g"], capture_output=True, text=True, check=True
    ).stdout
    assert "disk.qcow2" in guest_vols and "seed.iso" in guest_vols
    disk = STATE_DIR / "guests/lab-loop-shp1g/disk.qcow2"
    chain = subprocess.run(
        ["qemu-img", "info", "-U", "--output=json", str(disk)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert json.loads(chain)["backing-filename"].startswith("/var/lib/lab/images/")
    status = loop_pair.lab("status").stdout
    assert "host local" in status and "host loop" in status
    assert status.count("running") == 4
    # The remote guest answers through the host's SSH (ProxyCommand), as `lab ssh` uses it.
    hostname = loop_pair.lab("ssh", "lab-loop-thp", "hostname").stdout.strip()
    assert hostname == "lab-loop-thp"


def test_a_request_in_flight_when_its_host_drops_off_fails_in_seconds(loop_pair: LoopPair) -> None:
    """A command running in a remote guest when the host's SSH dies: the connection through
    the dead hop is noticed (keepalive) and the command fails, instead of waiting for ever
    for an answer that cannot come."""
    lab, hop = loop_pair.lab, loop_pair.hop
    marker = f"/tmp/inflight-{time.monotonic_ns()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab", "ssh", "lab-loop-thp", "sh", "-c", f"touch {marker};"
         " sleep 120"],
        env=lab.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(
            "the command to run in the guest",
            lambda: lab("ssh", "lab-loop-thp", "test", "-e", marker, check=False).returncode == 0,
            120, proc,
        )  # fmt: skip
        hop.cut()
        cut = time.monotonic()
        _, err = proc.communicate(timeout=90)
        took = time.monotonic() - cut
    finally:
        if proc.poll() is None:
            proc.kill()
        if hop.proc is None:
            hop.start()
    assert proc.returncode != 0
    assert "lab-loop-thp" in err and "failed" in err, err
    assert took < 45, f"{took:.0f} s to notice the lost host"


def test_a_host_that_drops_off_does_not_stop_the_other_and_resumes(
    loop_pair: LoopPair, tmp_path: Path
) -> None:
    db = tmp_path / "cut.db"
    # Four TCG guests on two CPUs starve the controller and the hop too: a remote guest's
    # samples may be stored many iterations late, so the run is long enough to cut it early.
    n = 10
    # concurrent: each pair at its own pace (sync's barrier would hold the local pair for the
    # remote one)
    argv = [sys.executable, "-m", "lab", "run", "sysbench-memory", "--n", str(n), *SYSBENCH_2S,
            "--study", "cut", "--db", str(db), "--schedule", "concurrent"]  # fmt: skip
    log = tmp_path / "run.err"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            argv, env=loop_pair.lab.env, stdout=subprocess.PIPE, stderr=err, text=True
        )
    local = [("local", "lab-thp"), ("local", "lab-shp1g")]
    remote = [("loop", "lab-loop-thp"), ("loop", "lab-loop-shp1g")]
    try:
        wait_until(
            "a sample from the remote host",
            lambda: db.exists() and any(counts(db, "cut").get(k, 0) >= 1 for k in remote),
            240, proc,
        )  # fmt: skip
        loop_pair.hop.cut()  # the host drops off: its SSH and every session through it
        time.sleep(3)
        frozen = {k: counts(db, "cut").get(k, 0) for k in remote}
        assert all(v < n for v in frozen.values()), frozen
        wait_until(
            "the local pair to finish while the other host is away",
            lambda: all(counts(db, "cut").get(k, 0) == n for k in local),
            300, proc,
        )  # fmt: skip
        assert proc.poll() is None  # still waiting for the remote guests
        assert {k: counts(db, "cut").get(k, 0) for k in remote} == frozen
        loop_pair.hop.start()  # the host is back
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        if loop_pair.hop.proc is None:
            loop_pair.hop.start()
    stderr = log.read_text()
    assert proc.returncode == 0, stderr[-3000:]
    assert f"{n} iterations on 4 guests" in out
    assert all(v == list(range(1, n + 1)) for v in iterations(db, "cut").values())
    assert len(iterations(db, "cut")) == 4
    for name in ("lab-loop-thp", "lab-loop-shp1g"):
        assert f"{name} unreachable, will retry" in stderr
        assert f"{name} reachable again" in stderr
    assert "lab-thp unreachable" not in stderr and "lab-shp1g unreachable" not in stderr
    assert "Traceback" not in stderr  # each loss is one line of the lab's, not paramiko's
    # The two pairs ran at once into one store, each guest tagged by its host (this run is
    # also the test of that: a run of its own cost CI 37 s).
    with sqlite3.connect(db) as conn:
        spans = dict(
            conn.execute(
                "SELECT g.host, MIN(i.started) || ' ' || MAX(i.ended) FROM iteration i"
                " JOIN guest g ON g.id = i.guest_id GROUP BY g.host"
            ).fetchall()
        )
        facts = dict(conn.execute("SELECT name, host_facts FROM guest").fetchall())
    (local_start, local_end), (loop_start, loop_end) = (
        map(float, spans[h].split()) for h in ("local", "loop")
    )
    assert loop_start < local_end and local_start < loop_end  # at once, not one after the other
    assert json.loads(facts["lab-loop-thp"])["uri"] == loop_pair.hop.uri
    lab = loop_pair.lab
    blocked = json.loads(
        lab(
            "compare", "--db", str(db), "--by", "host", "--metric", METRIC, "--format", "json"
        ).stdout
    )
    (result,) = blocked
    assert [h["host"] for h in result["hosts"]] == ["local", "loop"]
    assert all(h["n_a"] == n and h["n_b"] == n for h in result["hosts"])
    low, high = result["combined"]["ci"]
    assert low < result["combined"]["difference"] < high
    # The report of a study on two hosts carries the same By-host table by itself.
    lab("report", "--db", str(db), "--out", str(tmp_path / "report"))
    page = (tmp_path / "report" / "index.html").read_text()
    assert " within each host, then combined</caption>" in page
    assert "<td>local</td>" in page and "<td>loop</td>" in page
