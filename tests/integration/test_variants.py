"""Variants beyond the host's memory backing, on one real pair: guest-thp-never,thp-prealloc.

After the session's pair is down (conftest's ORDER), `lab up` brings this pair up (one
bring-up for both variants) and verifies each the way it declares:

- guest-thp-never: in the guest over SSH, THP is off there; `lab diff` shows the kernel
  command line as its one delta, in the domain XML and as QEMU's -append;
- thp-prealloc: its QEMU's resident memory covers its RAM right after boot; the
  guest-thp-never twin beside it, which faults its RAM in, shows the check tells the two
  apart; `lab diff --live` shows the preallocation as thp-prealloc's delta.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.host.qemuproc import read_qemu_memory
from tests.integration.conftest import Lab

pytestmark = pytest.mark.integration

SIZING = ("--vcpus", "1", "--memory", "1G", "--reserve-host-cpus", "0")
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"
GUEST_KIB = 1024**2


@pytest.fixture(scope="module")
def variants_pair(prepared_host: Lab) -> Iterator[Lab]:
    lab = prepared_host
    lab("down")  # the session's pair (down already, in a full session) or one left behind
    lab("up", "--pair", "guest-thp-never,thp-prealloc", *SIZING)
    yield lab
    lab("down", check=False)


def resident_kib(name: str) -> int:
    """What guest ``name``'s QEMU process holds resident now, less TCG's translation buffer
    (which under emulation can hold hundreds of MiB of its own)."""
    return read_qemu_memory(lambda path: Path(path).read_text(), name)["Rss"]


def test_the_pair_came_up_verified(variants_pair: Lab) -> None:
    (host,) = json.loads(variants_pair("status", "--json").stdout)["hosts"]
    assert host["verified"] is True
    assert {g["name"]: g["state"] for g in host["guests"]} == {
        "lab-guest-thp-never": "running",
        "lab-thp-prealloc": "running",
    }


def test_thp_is_off_in_the_guest_that_declares_it_and_only_there(variants_pair: Lab) -> None:
    facts = {g["name"]: g["facts"] for g in variants_pair.state()["guests"]}
    assert facts["lab-guest-thp-never"]["thp_enabled"] == "never"
    assert facts["lab-thp-prealloc"]["thp_enabled"] in ("always", "madvise")
    assert "[never]" in variants_pair("ssh", "guest-thp-never", "cat", THP_ENABLED).stdout
    booted = variants_pair("ssh", "guest-thp-never", "cat", "/proc/cmdline").stdout.split()
    assert booted[-1] == "transparent_hugepage=never"
    other = variants_pair("ssh", "thp-prealloc", "cat", "/proc/cmdline").stdout
    assert "transparent_hugepage=never" not in other


def test_lab_diff_shows_the_kernel_command_line_as_the_one_delta(variants_pair: Lab) -> None:
    changes = json.loads(variants_pair("diff", "thp", "guest-thp-never", "--json", *SIZING).stdout)
    delta = [c for c in changes if c["kind"] != "identity"]
    assert [(c["kind"], c["path"], c["by"]) for c in delta] == [
        ("variant", "/domain/os/cmdline/text()", "guest-thp-never")
    ]
    assert delta[0]["b"] == delta[0]["a"] + " transparent_hugepage=never"


def test_the_preallocated_twin_holds_all_its_ram_and_the_other_does_not(
    variants_pair: Lab,
) -> None:
    assert resident_kib("lab-thp-prealloc") >= GUEST_KIB
    assert resident_kib("lab-guest-thp-never") < GUEST_KIB  # faults its RAM in as it goes


def test_qemu_was_told_each_variant_s_delta_and_libvirt_holds_the_preallocation(
    variants_pair: Lab,
) -> None:
    xml = subprocess.run(
        ["virsh", "-c", "qemu:///system", "dumpxml", "lab-thp-prealloc"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "<allocation mode='immediate'/>" in xml
    done = variants_pair("diff", "--live", "guest-thp-never", "thp-prealloc", "--json", check=False)
    found = json.loads(done.stdout)
    assert [d for d in found if d["kind"] == "unexplained"] == [], done.stdout
    variant = {d["option"]: (d["a"], d["b"]) for d in found if d["kind"] == "variant"}
    assert set(variant) == {"-append", "-object pc.ram prealloc"}
    assert variant["-object pc.ram prealloc"] == ("(absent)", "true")
    assert variant["-append"][0].endswith(" transparent_hugepage=never")
    consequences = {d["option"] for d in found if d["kind"] == "consequence"}
    assert consequences <= {"-object pc.ram prealloc-context", "-object thread-context tc-pc.ram"}
    assert done.returncode == 0
