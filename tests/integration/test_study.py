"""`lab study run studies/demo.toml` on the real pair: every workload, the file, the report."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from lab.app.study import load_study
from lab.core.paths import CHECKOUT
from tests.integration.conftest import Pair, free_1g_pages
from tests.integration.test_run import samples

pytestmark = pytest.mark.integration

DEMO = CHECKOUT / "studies" / "demo.toml"
FIRST_METRIC = {"sysbench-memory": "total_time_s", "iperf3": "sender_bits_per_s",
                "demo-build": "wall_s"}  # fmt: skip
# What each workload's samples must look like on any machine, TCG or KVM: the study is the
# one integration test of the three workloads' runs (it runs each on both twins at once).
PLAUSIBLE = {
    ("sysbench-memory", "throughput_mib_s"): (100, 100_000),  # MiB/s
    ("iperf3", "sender_bits_per_s"): (1e6, 1e12),
    ("demo-build", "wall_s"): (0.01, 600),
}


def test_the_demo_study_runs_every_workload_stores_its_file_and_writes_the_report(
    pair: Pair, tmp_path: Path
) -> None:
    db = tmp_path / "lab.db"
    study = load_study(DEMO)
    # The pair that is up (thp,shp1g, 1 vCPU each) is the study's: it is used, not replaced.
    done = pair.lab("study", "run", str(DEMO), "--db", str(db), timeout=3600)
    assert "using the lab that is up" in done.stderr
    for workload in study.workloads:
        got = samples(db, workload.name, FIRST_METRIC[workload.name])
        assert {name: [i for i, _ in v] for name, v in got.items()} == {
            "lab-thp": list(range(1, workload.n + 1)),
            "lab-shp1g": list(range(1, workload.n + 1)),
        }, workload.name
    for (workload_name, metric), (low, high) in PLAUSIBLE.items():
        values = [v for pairs in samples(db, workload_name, metric).values() for _, v in pairs]
        assert values and all(low < v < high for v in values), (workload_name, metric, values)
    # the build really happened on the NFS export of the host
    out = pair.lab("ssh", "thp", "findmnt", "-n", "-o", "FSTYPE", "--target", "/mnt/lab-nfs").stdout
    assert out.strip().startswith("nfs")
    out = pair.lab("compare", "--db", str(db), "--format", "json").stdout
    assert '"sysbench-memory"' in out and '"iperf3"' in out
    with sqlite3.connect(db) as conn:
        text, digest = conn.execute(
            "SELECT study_file, study_hash FROM study WHERE name = ?", (study.name,)
        ).fetchone()
    assert digest == hashlib.sha256(DEMO.read_bytes()).hexdigest() and text == DEMO.read_text()
    page = (tmp_path / f"report-{study.name}" / "index.html").read_text()
    assert "paired by iteration (synchronised runs)" in page  # demo-build ran with sync
    assert f"Study file of {study.name}" in page and digest in page
    assert "Base image" in page
    with sqlite3.connect(db) as conn:  # one placement swap: iterations 3 and 4 on the other CPUs
        labels = conn.execute(
            "SELECT g.name, p.iteration, p.label FROM placement p JOIN guest g ON g.id = p.guest_id"
            " ORDER BY g.name, p.iteration"
        ).fetchall()
    for name in ("lab-thp", "lab-shp1g"):
        assert [label for n, _, label in labels if n == name] == [
            "own", "own", "swapped", "swapped", "own"
        ]  # fmt: skip
    assert "Placement" in page
    # demo-build ran with sync: perf counted each guest's vCPU threads over every iteration
    clock = samples(db, "demo-build", "perf.task_clock")
    faults = samples(db, "demo-build", "perf.page_faults")
    for name in ("lab-thp", "lab-shp1g"):
        assert [i for i, _ in clock[name]] == list(range(1, 6)), clock
        assert all(v > 0 for _, v in clock[name]) and len(faults[name]) == 5
    assert "perf.task_clock" in page
    # what backed each twin's memory after every iteration, on the host and in the guest
    hugetlb = samples(db, "demo-build", "backing.qemu_hugetlb_kib")
    anon_huge = samples(db, "demo-build", "backing.qemu_anon_huge_kib")
    assert [v for _, v in hugetlb["lab-shp1g"]] == [1024 * 1024] * 5  # all its RAM in 1 GiB
    assert [v for _, v in hugetlb["lab-thp"]] == [0] * 5
    assert all(v > 64 * 1024 for _, v in anon_huge["lab-thp"])  # THP backs the thp twin
    # and not the other: TCG's translation buffer (hundreds of MiB of THP) is not its RAM's
    assert all(v < 16 * 1024 for _, v in anon_huge["lab-shp1g"]), anon_huge["lab-shp1g"]
    for name in ("lab-thp", "lab-shp1g"):  # the guest kernel's own counters, every iteration
        faults_in_guest = samples(db, "demo-build", "backing.guest_thp_fault_alloc")[name]
        assert [i for i, _ in faults_in_guest] == list(range(1, 6))
    assert "lab-thp over 5 iterations: guest_anon_huge_kib" in page
    # the host's free 1 GiB pages after every iteration: the shp1g twin holds one all along
    pool = samples(db, "demo-build", "backing.host_free_pages_1g_node0")
    free = free_1g_pages()
    assert {name: [v for _, v in pool[name]] for name in pool} == {
        "lab-thp": [free] * 5, "lab-shp1g": [free] * 5}  # fmt: skip
    # sysbench-memory ran concurrent: the host side is sampled as the journals are read,
    # as the last iteration each look found, so the last iteration has one
    hugetlb = samples(db, "sysbench-memory", "backing.qemu_hugetlb_kib")
    assert hugetlb["lab-shp1g"][-1][0] == 5, hugetlb
    assert {v for _, v in hugetlb["lab-shp1g"]} == {1024 * 1024}
    assert {v for _, v in hugetlb["lab-thp"]} == {0}

    # Running it again resumes: every run is complete, so nothing is added, and the pair is
    # not brought up again for it (the keys the study looks for are the controller's own).
    again = pair.lab("study", "run", str(DEMO), "--db", str(db), timeout=1800)
    said = " ".join(again.stderr.split())  # as wrapped to the terminal's width
    assert "every run is done in" in said and "not brought up again" in said, said[-2000:]
    for workload in study.workloads:
        got = samples(db, workload.name, FIRST_METRIC[workload.name])
        assert {name: len(v) for name, v in got.items()} == {
            "lab-thp": workload.n,
            "lab-shp1g": workload.n,
        }
