"""Whether needs fit the pools (each refusal message), and reserving pages with read-back."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.core.errors import RequirementError
from lab.core.hostexec import Host
from lab.host.facts import Pool, read_hugepage_pools
from lab.host.hugepages import HugePageNeed, check_needs, pool_file, reserve, size_text
from tests.unit.test_host_facts import HOST, fake_sysfs

GIB = 1024**2
NODE0_1G_EMPTY = [
    Pool(None, 2048, 0, 0, 0),
    Pool(None, GIB, 0, 0, 0),
    Pool(0, 2048, 0, 0, 0),
    Pool(0, GIB, 0, 0, 0),
]


def test_the_issue_s_refusal_message() -> None:
    problems = check_needs({"shp1g": [HugePageNeed(GIB, 1, 0)]}, NODE0_1G_EMPTY)
    assert problems == [
        "shp1g needs 1 free 1 GiB page on node 0; 0 free. Run: lab host prepare --hugepages 1G:1"
    ]


def test_enough_free_pages_is_no_problem() -> None:
    pools = [Pool(None, GIB, 2, 2, 0), Pool(0, GIB, 2, 2, 0)]
    assert check_needs({"shp1g": [HugePageNeed(GIB, 1, 0)]}, pools) == []
    assert check_needs([], pools) == []


def test_pages_in_use_raise_the_count_to_reserve() -> None:
    # One page is taken by another guest: the pool must grow to 1 used + 2 wanted.
    pools = [Pool(None, GIB, 1, 0, 0), Pool(0, GIB, 1, 0, 0)]
    problems = check_needs({"shp1g": [HugePageNeed(GIB, 2, 0)]}, pools)
    assert problems == [
        "shp1g needs 2 free 1 GiB pages on node 0; 0 free. Run: lab host prepare --hugepages 1G:3"
    ]


def test_an_a_a_pair_adds_its_needs_on_one_node() -> None:
    pools = [Pool(None, GIB, 1, 1, 0), Pool(0, GIB, 1, 1, 0)]
    needs = {"lab-shp1g-a": [HugePageNeed(GIB, 1, 0)], "lab-shp1g-b": [HugePageNeed(GIB, 1, 0)]}
    assert check_needs(needs, pools) == [
        "lab-shp1g-a and lab-shp1g-b need 2 free 1 GiB pages on node 0; 1 free."
        " Run: lab host prepare --hugepages 1G:2"
    ]


def test_a_flat_list_of_needs_names_the_guests() -> None:
    problems = check_needs([HugePageNeed(2048, 512, 0)], NODE0_1G_EMPTY)
    assert problems == [
        "the guests need 512 free 2 MiB pages on node 0; 0 free."
        " Run: lab host prepare --hugepages 2M:512"
    ]


def test_on_a_numa_host_the_fix_names_the_node() -> None:
    pools = [Pool(None, GIB, 2, 2, 0), Pool(0, GIB, 2, 2, 0), Pool(1, GIB, 0, 0, 0)]
    problems = check_needs({"shp1g": [HugePageNeed(GIB, 1, 1)]}, pools)
    assert problems == [
        "shp1g needs 1 free 1 GiB page on node 1; 0 free. Run: lab host prepare --hugepages 1G:1@1"
    ]


def test_a_host_without_the_page_size() -> None:
    pools = [Pool(None, 2048, 0, 0, 0), Pool(0, 2048, 0, 0, 0)]
    (problem,) = check_needs({"shp1g": [HugePageNeed(GIB, 1, 0)]}, pools)
    assert problem.startswith("shp1g needs 1 GiB huge pages on node 0; this host has no 1 GiB pool")
    assert "pdpe1gb" in problem


def test_without_node_directories_the_global_pool_counts() -> None:
    pools = [Pool(None, GIB, 1, 1, 0)]
    assert check_needs({"shp1g": [HugePageNeed(GIB, 1, 0)]}, pools) == []


def test_captured_pool_with_its_page_in_use(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path / "sys", (HOST / "sysfs-hugepages-tree.txt").read_text())
    problems = check_needs({"shp1g": [HugePageNeed(GIB, 1, 0)]}, read_hugepage_pools(sysfs))
    assert problems == [
        "shp1g needs 1 free 1 GiB page on node 0; 0 free. Run: lab host prepare --hugepages 1G:2"
    ]


@pytest.mark.parametrize(("kib", "text"), [(GIB, "1 GiB"), (2048, "2 MiB"), (64, "64 KiB")])
def test_size_text(kib: int, text: str) -> None:
    assert size_text(kib) == text


class StingyKernel(Host):
    """Writes to a fake sysfs; like the kernel, gives at most ``limit`` pages of a pool."""

    def __init__(self, limit: int, compact_frees: int = 0) -> None:
        self.limit = limit
        self.compact_frees = compact_frees
        self.writes: list[tuple[str, str]] = []

    def write_text(self, path: str | Path, text: str) -> None:
        self.writes.append((str(path), text))
        if str(path).endswith("compact_memory"):
            self.limit += self.compact_frees
            return
        Path(path).write_text(f"{min(int(text), self.limit)}\n")


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    return fake_sysfs(tmp_path / "sys", (HOST / "sysfs-hugepages-tree.txt").read_text())


def test_reserve_writes_the_node_pool_and_returns_the_old_count(sysfs: Path) -> None:
    host = StingyKernel(limit=8)
    before = reserve(host, sysfs, GIB, 2, 0, proc_root=sysfs / "no-proc")
    assert before == 1
    assert pool_file(sysfs, GIB, 0).read_text() == "2\n"
    assert host.writes == [(str(pool_file(sysfs, GIB, 0)), "2\n")]


def test_reserve_of_the_count_already_there_writes_nothing(sysfs: Path) -> None:
    host = StingyKernel(limit=8)
    assert reserve(host, sysfs, GIB, 1, 0) == 1
    assert host.writes == []


def test_reserve_short_restores_and_says_asked_and_got(sysfs: Path, tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "sys/vm").mkdir(parents=True)
    (proc / "sys/vm/compact_memory").write_text("")
    host = StingyKernel(limit=1)
    with pytest.raises(RequirementError) as err:
        reserve(host, sysfs, GIB, 3, 0, proc_root=proc)
    assert "asked the kernel for 3 1 GiB huge pages on node 0 and got 1" in str(err.value)
    assert "hugepagesz=1G hugepages=3" in str(err.value)
    # compaction was tried once, and the pool is back where it was
    assert (str(proc / "sys/vm/compact_memory"), "1\n") in host.writes
    assert pool_file(sysfs, GIB, 0).read_text() == "1\n"


def test_reserve_succeeds_after_compaction(sysfs: Path, tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "sys/vm").mkdir(parents=True)
    (proc / "sys/vm/compact_memory").write_text("")
    host = StingyKernel(limit=1, compact_frees=2)
    assert reserve(host, sysfs, GIB, 3, 0, proc_root=proc) == 1
    assert pool_file(sysfs, GIB, 0).read_text() == "3\n"


def test_reserve_global_pool(sysfs: Path) -> None:
    reserve(StingyKernel(limit=64), sysfs, 2048, 16, None)
    assert (sysfs / "kernel/mm/hugepages/hugepages-2048kB/nr_hugepages").read_text() == "16\n"


def test_reserve_of_a_size_the_host_lacks(sysfs: Path) -> None:
    with pytest.raises(RequirementError, match="no 16 GiB huge page pool"):
        reserve(StingyKernel(limit=8), sysfs, 16 * GIB, 1, 0)
