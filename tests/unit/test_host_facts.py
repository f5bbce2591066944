"""The host-fact parsers on files captured from real machines (expected values read off them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.core.errors import UsageError
from lab.host.facts import (
    Pool,
    hugetlbfs_mounts,
    numa_nodes,
    parse_hugepages_option,
    parse_meminfo,
    parse_mounts,
    parse_proc_filesystems,
    parse_qemu_conf_hugetlbfs,
    parse_thp_mode,
    pool_sizes,
    read_hugepage_pools,
)

HOST = Path(__file__).parent.parent / "fixtures" / "host"


def fake_sysfs(root: Path, tree_text: str) -> Path:
    """Rebuild a sysfs tree from ``path: value`` lines (the capture's format) under ``root``."""
    for line in tree_text.splitlines():
        path, _, value = line.partition(": ")
        target = root / path.removeprefix("/sys/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(value.rstrip(":") + "\n")
    return root


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    return fake_sysfs(tmp_path / "sys", (HOST / "sysfs-hugepages-tree.txt").read_text())


def test_meminfo_of_host_with_a_1g_page_in_use() -> None:
    info = parse_meminfo((HOST / "host-proc-meminfo-with-1g-pool.txt").read_text())
    assert info["MemTotal"] == 24684084
    assert info["MemAvailable"] == 20572372
    assert info["Hugetlb"] == 1048576  # the one 1 GiB page
    assert info["HugePages_Total"] == 0  # counts the default (2 MiB) size only
    assert info["Hugepagesize"] == 2048
    assert info["AnonHugePages"] == 2226176
    assert info["DirectMap1G"] == 25165824


def test_meminfo_of_guest() -> None:
    info = parse_meminfo((HOST / "guest-proc-meminfo.txt").read_text())
    assert info["MemTotal"] == 996592
    assert info["AnonHugePages"] == 4096
    assert info["Hugetlb"] == 0


def test_meminfo_keys_with_parentheses() -> None:
    info = parse_meminfo((HOST / "host-proc-meminfo-with-1g-pool.txt").read_text())
    assert info["Active(anon)"] == 1540
    assert info["Inactive(file)"] == 89364


def test_hugepage_pools_from_captured_sysfs_tree(sysfs: Path) -> None:
    pools = read_hugepage_pools(sysfs)
    assert pools == [
        Pool(node=None, page_kib=2048, total=0, free=0, surplus=0),
        Pool(node=None, page_kib=1048576, total=1, free=0, surplus=0),
        Pool(node=0, page_kib=2048, total=0, free=0, surplus=0),
        Pool(node=0, page_kib=1048576, total=1, free=0, surplus=0),
    ]
    assert pools[1].used == 1
    assert pool_sizes(pools) == [2048, 1048576]
    assert numa_nodes(pools) == [0]


def test_hugepage_pools_of_a_host_without_node_directories(sysfs: Path) -> None:
    import shutil

    shutil.rmtree(sysfs / "devices")
    pools = read_hugepage_pools(sysfs)
    assert {p.node for p in pools} == {None}
    assert numa_nodes(pools) == []


def test_hugepage_pools_of_missing_tree(tmp_path: Path) -> None:
    assert read_hugepage_pools(tmp_path) == []


@pytest.mark.parametrize(
    ("fixture", "mode"), [("host-thp-enabled.txt", "madvise"), ("host-thp-defrag.txt", "madvise")]
)
def test_thp_mode_of_captured_files(fixture: str, mode: str) -> None:
    assert parse_thp_mode((HOST / fixture).read_text()) == mode


@pytest.mark.parametrize(
    ("text", "mode"),
    [("[always] madvise never\n", "always"), ("always madvise [never]", "never")],
)
def test_thp_mode_table(text: str, mode: str) -> None:
    assert parse_thp_mode(text) == mode


def test_thp_mode_without_selection_is_an_error() -> None:
    with pytest.raises(ValueError, match="no \\[selected\\]"):
        parse_thp_mode("always madvise never")


def test_mounts_find_the_1g_hugetlbfs_mount() -> None:
    mounts = parse_mounts((HOST / "host-proc-mounts-hugetlbfs-1g.txt").read_text())
    huge = [m for m in mounts if m.fstype == "hugetlbfs"]
    assert len(huge) == 1
    assert huge[0].target == "/dev/hugepages1G"
    assert huge[0].options["pagesize"] == "1024M"
    assert huge[0].page_kib == 1048576
    assert hugetlbfs_mounts(mounts) == {1048576: ["/dev/hugepages1G"]}
    root = next(m for m in mounts if m.target == "/")
    assert (root.source, root.fstype) == ("/dev/vda", "ext4")


def test_mounts_of_two_page_sizes() -> None:
    text = (
        "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n"
        "none /dev/hugepages1G hugetlbfs rw,relatime,pagesize=1024M 0 0\n"
        "none /mnt/with\\040space tmpfs rw 0 0\n"
    )
    mounts = parse_mounts(text)
    assert hugetlbfs_mounts(mounts) == {2048: ["/dev/hugepages"], 1048576: ["/dev/hugepages1G"]}
    assert mounts[2].target == "/mnt/with space"


def test_qemu_conf_of_debian_default_has_no_active_hugetlbfs_mount() -> None:
    text = (HOST / "libvirt-9.0-qemu.conf-debian-default").read_text()
    assert "#hugetlbfs_mount" in text
    assert parse_qemu_conf_hugetlbfs(text) == []


def test_qemu_conf_prepared_by_the_lab() -> None:
    text = (HOST / "libvirt-9.0-qemu.conf-lab-prepared").read_text()
    assert parse_qemu_conf_hugetlbfs(text) == ["/dev/hugepages1G"]


@pytest.mark.parametrize(
    ("text", "mounts"),
    [
        ('hugetlbfs_mount = "/dev/hugepages"\n', ["/dev/hugepages"]),
        (
            'hugetlbfs_mount = ["/dev/hugepages2M", "/dev/hugepages1G"]',
            ["/dev/hugepages2M", "/dev/hugepages1G"],
        ),
        ('hugetlbfs_mount = [\n  "/a",  # first\n  "/b"\n]\n', ["/a", "/b"]),
        ('hugetlbfs_mount = "/a"\nhugetlbfs_mount = "/b"\n', ["/b"]),
        ('  #hugetlbfs_mount = "/a"\n', []),
    ],
)
def test_qemu_conf_hugetlbfs_table(text: str, mounts: list[str]) -> None:
    assert parse_qemu_conf_hugetlbfs(text) == mounts


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("1G:2", [(1048576, 2, None)]),
        ("1G:2,2M:0", [(1048576, 2, None), (2048, 0, None)]),
        ("1G:1@1", [(1048576, 1, 1)]),
        (" 2M:512 ,", [(2048, 512, None)]),
    ],
)
def test_hugepages_option(text: str, wanted: list[tuple[int, int, int | None]]) -> None:
    assert parse_hugepages_option(text) == wanted


@pytest.mark.parametrize("text", ["1G", "1G:x", "1G:1@", "G:1", "1G:-1"])
def test_hugepages_option_refuses_nonsense(text: str) -> None:
    with pytest.raises(UsageError, match=r"SIZE:COUNT|cannot read"):
        parse_hugepages_option(text)


def test_proc_filesystems_of_this_kind_of_machine_lacks_nfsd() -> None:
    types = parse_proc_filesystems((HOST / "host-proc-filesystems-no-nfsd.txt").read_text())
    assert "hugetlbfs" in types
    assert "ext4" in types
    assert "nfsd" not in types
