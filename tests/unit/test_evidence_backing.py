"""What backed each guest's memory, per iteration, under the concurrent schedule too: the
controller drives real runners (local shells) while the host it reads is a canned one,
whose QEMU smaps (captured from a real lab-shp1g) and huge page pools change between
two starts of the run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lab.core.errors import HostCommandError
from lab.core.hostexec import RecordingHost
from lab.host.facts import Pool
from lab.run import evidence
from lab.run.evidence import pool_metrics
from tests.unit.test_controller import make

CAPTURES = Path(__file__).parents[1] / "fixtures" / "captures"
SMAPS = (CAPTURES / "qemu-shp1g-smaps-hugetlb.txt").read_text()
FREE_1G = "/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/free_hugepages"
POOLS = [Pool(None, 2048, 0, 0, 0), Pool(None, 1048576, 2, 1, 0),
         Pool(0, 2048, 0, 0, 0), Pool(0, 1048576, 2, 1, 0)]  # fmt: skip


def rollup(hugetlb_kib: int) -> str:
    """A smaps_rollup whose hugetlb total is ``hugetlb_kib`` (the capture's other fields)."""
    fields = [line for line in SMAPS.splitlines() if line.split(":")[0] in
              ("Rss", "AnonHugePages", "Private_Hugetlb")]  # fmt: skip
    return "\n".join(["00400000-7fff00000000 ---p 00000000 00:00 0 [rollup]", *fields,
                      f"Shared_Hugetlb:  {hugetlb_kib} kB"]) + "\n"  # fmt: skip


HOST_CAPTURES = Path(__file__).parents[1] / "fixtures" / "host"
BUDDYINFO = (HOST_CAPTURES / "host-proc-buddyinfo.txt").read_text()
VMSTAT = (HOST_CAPTURES / "host-proc-vmstat.txt").read_text()


def canned_host(hugetlb_kib: int, free_1g: int) -> RecordingHost:
    files = {FREE_1G: f"{free_1g}\n", "/proc/buddyinfo": BUDDYINFO, "/proc/vmstat": VMSTAT}
    for pid, name in ((4001, "lab-thp"), (4002, "lab-shp1g")):
        files[f"/run/libvirt/qemu/{name}.pid"] = str(pid)
        files[f"/proc/{pid}/smaps"] = rollup(hugetlb_kib)
    return RecordingHost(files=files)


def backing(db: Path, metric: str) -> dict[str, dict[int, float]]:
    """Guest -> iteration -> value of an evidence metric (read as SQL: evidence is not a
    series the analysis reads)."""
    found: dict[str, dict[int, float]] = {}
    with sqlite3.connect(db) as conn:
        for guest, iteration, value in conn.execute(
            "SELECT g.name, s.iteration, s.value FROM sample s JOIN guest g ON g.id = s.guest_id"
            " WHERE s.metric = ?", (metric,)
        ):  # fmt: skip
            found.setdefault(guest, {})[iteration] = value
    return found


def test_pools_become_one_metric_each_per_node_or_global_without_nodes() -> None:
    assert pool_metrics(POOLS) == {"backing.host_free_pages_1g_node0": FREE_1G}
    assert pool_metrics([Pool(None, 2048, 8, 3, 0), Pool(None, 1048576, 0, 0, 0)]) == {
        "backing.host_free_pages_2m":
            "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"}  # fmt: skip


def test_a_concurrent_run_samples_the_host_side_as_it_goes_and_a_resume_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evidence, "read_hugepage_pools", lambda root: POOLS)
    slow = tmp_path / "slow"  # once it exists an iteration takes longer
    argv = ["sh", "-c", f"if [ -e {slow} ]; then sleep 0.3; else sleep 0.05; fi"]
    controller, store = make(tmp_path, argv, n=6)
    controller.ctx.host = canned_host(1048576, 1)
    controller.begin()
    controller.advance(3)  # a first start that stops after 3 (as a killed run would)
    controller.end()
    first = backing(tmp_path / "lab.db", "backing.qemu_hugetlb_kib")
    assert set(first) == {"lab-thp", "lab-shp1g"}
    for guest, found in first.items():
        assert 3 in found  # the last look found the last iteration
        assert set(found.values()) == {1048576.0}, guest
    pools = backing(tmp_path / "lab.db", "backing.host_free_pages_1g_node0")
    assert {g: set(v.values()) for g, v in pools.items()} == {"lab-thp": {1.0},
                                                              "lab-shp1g": {1.0}}  # fmt: skip
    (run,) = store.runs()
    units = {m.name: (m.unit, m.direction) for m in run.metrics}
    assert units["backing.host_free_pages_1g_node0"] == ("pages", None)
    # issue 42: the host's THP supply beside the iterations, as the captured files give it
    # (the index computed by hand: free pages below order 9 over all free pages)
    free = unusable = 0
    for line in BUDDYINFO.splitlines():
        for order, count in enumerate(int(c) for c in line.split()[4:]):
            free, unusable = (
                free + (count << order),
                unusable + (count << order if order < 9 else 0),
            )
    index = backing(tmp_path / "lab.db", "backing.host_thp_unusable_index")
    assert {g: set(v.values()) for g, v in index.items()} == {
        "lab-thp": {unusable / free}, "lab-shp1g": {unusable / free}}  # fmt: skip
    fallback = dict(line.split() for line in VMSTAT.splitlines())["thp_fault_fallback"]
    found = backing(tmp_path / "lab.db", "backing.host_thp_fault_fallback")
    assert set(found["lab-thp"].values()) == {float(fallback)}
    assert units["backing.host_thp_unusable_index"] == ("ratio", None)

    # The same run resumed on a host whose twins now have no hugetlb memory: iterations 4-6
    # say so, the samples of 1-3 are the ones taken then.
    slow.write_text("")  # so the resumed run's first look finds no new iteration
    again, _ = make(tmp_path, argv, n=6)
    assert again.run_id == controller.run_id
    again.ctx.host = canned_host(0, 2)
    again.run()
    second = backing(tmp_path / "lab.db", "backing.qemu_hugetlb_kib")
    for guest, found in second.items():
        assert {i: v for i, v in found.items() if i <= 3} == first[guest]
        later = {i: v for i, v in found.items() if i > 3}
        assert 6 in later and set(later.values()) == {0.0}, guest


class UnreachableHost(RecordingHost):
    """A host whose SSH fails on every read, as a remote one that dropped off does."""

    def read_text(self, path: str | Path) -> str:
        raise HostCommandError(["ssh", "loop"], 255, "Connection closed by remote host")


def test_a_host_that_cannot_be_read_costs_the_samples_not_the_run(tmp_path: Path) -> None:
    controller, _ = make(tmp_path, ["true"], n=4)
    controller.begin()  # its environment recorded, the host then drops off
    controller.ctx.host = UnreachableHost()
    controller.advance()
    assert {g.record.name: sorted(g.completed) for g in controller.guests} == {
        "lab-thp": [1, 2, 3, 4], "lab-shp1g": [1, 2, 3, 4]}  # fmt: skip
    assert backing(tmp_path / "lab.db", "backing.qemu_hugetlb_kib") == {}
