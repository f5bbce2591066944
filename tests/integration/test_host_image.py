"""`lab host prepare` and `lab image build` for real: pages, hugetlbfs, network, NFS, image."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from lab.core.config import Config
from lab.host.facts import (
    hugetlbfs_mounts,
    parse_mounts,
    parse_qemu_conf_hugetlbfs,
    read_hugepage_pools,
)
from lab.host.network import parse_network_xml
from lab.host.nfs import is_serving
from lab.images.image import find_image
from tests.integration.conftest import Lab

pytestmark = pytest.mark.integration

GIB = 1024**2
CONFIG = Config()


def virsh(*args: str) -> str:
    return subprocess.run(
        ["virsh", "-c", "qemu:///system", *args], capture_output=True, text=True, check=True
    ).stdout


def test_prepare_reserved_two_1g_pages_per_node(prepared_host: Lab) -> None:
    pools = [p for p in read_hugepage_pools(Path("/sys")) if p.page_kib == GIB]
    assert pools, "this host has no 1 GiB pool"
    per_node = [p for p in pools if p.node is not None] or pools
    assert all(p.total >= 2 for p in per_node)


def test_prepare_mounted_hugetlbfs_and_told_libvirt(prepared_host: Lab) -> None:
    mounts = hugetlbfs_mounts(parse_mounts(Path("/proc/mounts").read_text()))
    assert "/dev/hugepages1G" in mounts[GIB]
    conf = parse_qemu_conf_hugetlbfs(Path("/etc/libvirt/qemu.conf").read_text())
    assert "/dev/hugepages1G" in conf


def test_prepare_made_an_isolated_lab_network(prepared_host: Lab) -> None:
    info, forwards = parse_network_xml(virsh("net-dumpxml", CONFIG.network))
    assert not forwards
    assert info.subnet == CONFIG.subnet
    assert info.host_ip == "198.18.0.1"
    assert CONFIG.network in virsh("net-list", "--name").split()  # active ones only


def test_prepare_serves_nfs_to_the_lab_network(prepared_host: Lab) -> None:
    assert is_serving("198.18.0.1")
    export = Path(CONFIG.state_dir) / "nfs"
    assert export.stat().st_mode & 0o1777 == 0o1777


def test_prepare_again_changes_nothing(prepared_host: Lab) -> None:
    done = prepared_host("host", "prepare", "--hugepages", "1G:2")
    assert "nothing changed" in done.stderr


def test_image_is_built_with_a_manifest(prepared_host: Lab) -> None:
    image = find_image(Path(CONFIG.image_dir), CONFIG.image)
    assert image.disk.stat().st_size > 100 * 1024**2
    assert image.kernel is not None and image.kernel.stat().st_size > 1024**2
    info = json.loads(
        subprocess.run(
            ["qemu-img", "info", "--output=json", str(image.disk)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert info["format"] == "qcow2"
    manifest = image.manifest
    assert manifest["packages"]["cloud-init"].startswith("22.")
    assert "sysbench" in manifest["packages"]
    assert manifest["kernel_version"].endswith("-cloud-amd64")
    assert len(manifest["hash"]) == 64
    listed = json.loads(prepared_host("image", "list", "--json").stdout)
    assert {
        "name": image.name,
        "hash": manifest["hash"],
        "folder": str(image.directory),
    }.items() <= (next(i for i in listed if i["name"] == CONFIG.image).items())


def test_a_second_build_is_a_cached_no_op(prepared_host: Lab) -> None:
    started = time.monotonic()
    done = prepared_host("image", "build")
    assert "nothing to build" in done.stderr
    assert time.monotonic() - started < 30


def test_host_check_says_a_pair_can_come_up(prepared_host: Lab) -> None:
    done = prepared_host("host", "check", "--json", "--reserve-host-cpus", "0", check=False)
    report = json.loads(done.stdout)
    missing = [r for r in report["rows"] if r["state"] == "missing"]
    assert missing == []
    assert report["ready"] is True
    assert done.returncode == 0


def test_release_then_prepare_round_trip(prepared_host: Lab) -> None:
    if virsh("list", "--name").strip():
        pytest.skip("guests are running; release would pull the host from under them")
    prepared_host("host", "release")
    assert not (Path(CONFIG.state_dir) / "host-changes.json").exists()
    assert "/dev/hugepages1G" not in Path("/proc/mounts").read_text()
    prepared_host("host", "prepare", "--hugepages", "1G:2")
    record = json.loads((Path(CONFIG.state_dir) / "host-changes.json").read_text())
    kinds = {c["kind"] for c in record["changes"]}
    assert {"hugepages", "mount", "qemu_conf", "network"} <= kinds
    assert "/dev/hugepages1G" in Path("/proc/mounts").read_text()
