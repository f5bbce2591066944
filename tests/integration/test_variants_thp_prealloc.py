"""Preallocated THP memory on a real pair: thp,thp-prealloc.

`lab up` verifies the thp-prealloc twin preallocated: its QEMU's resident memory covers its
RAM right after boot. The thp twin beside it, which faults its RAM in, shows the check
tells the two apart.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.host.qemuproc import parse_smaps, qemu_pid
from tests.integration.conftest import Lab

pytestmark = pytest.mark.integration

SIZING = ("--vcpus", "1", "--memory", "1G", "--reserve-host-cpus", "0")
GUEST_KIB = 1024**2


@pytest.fixture(scope="module")
def prealloc_pair(prepared_host: Lab) -> Iterator[Lab]:
    lab = prepared_host
    lab("down")  # the session's pair (down already, in a full session) or one left behind
    lab("up", "--pair", "thp,thp-prealloc", *SIZING)
    yield lab
    lab("down", check=False)


def resident_kib(name: str) -> int:
    """What guest ``name``'s QEMU process holds resident now (smaps_rollup's Rss)."""
    pid = qemu_pid(lambda path: Path(path).read_text(), name)
    return parse_smaps(Path(f"/proc/{pid}/smaps_rollup").read_text())["Rss"]


def test_the_preallocated_twin_came_up_verified_holding_all_its_ram(prealloc_pair: Lab) -> None:
    (host,) = json.loads(prealloc_pair("status", "--json").stdout)["hosts"]
    assert host["verified"] is True
    assert resident_kib("lab-thp-prealloc") >= GUEST_KIB


def test_the_thp_twin_faults_its_ram_in_so_the_check_tells_them_apart(prealloc_pair: Lab) -> None:
    assert resident_kib("lab-thp") < GUEST_KIB


def test_libvirt_holds_the_preallocation_and_told_qemu(prealloc_pair: Lab) -> None:
    xml = subprocess.run(
        ["virsh", "-c", "qemu:///system", "dumpxml", "lab-thp-prealloc"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "<allocation mode='immediate'/>" in xml
    found = json.loads(
        prealloc_pair("diff", "--live", "thp", "thp-prealloc", "--json", check=False).stdout
    )
    prealloc = [d for d in found if d["option"] == "-object pc.ram prealloc"]
    assert [(d["a"], d["b"]) for d in prealloc] == [("(absent)", "true")], found
