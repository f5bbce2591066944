"""Variants beyond the host's memory backing, on one real pair of cells (issue 41: levels of
factors composed, tests/unit/test_factors.py shows each builds the XML of the plug-in it
spells): guest-thp-never.prealloc-off (the guest-thp-never variant) and
guest-thp-always.prealloc-on (thp-prealloc, its guest's THP on "always" declared).

After the session's pair is down (conftest's ORDER), `lab up` brings this pair up (one
bring-up for both) and verifies each the way its levels declare:

- guest-thp-never: in the guest over SSH, THP is off there; `lab diff` shows the kernel
  command line as its one delta, in the domain XML and as QEMU's -append;
- prealloc-on: its QEMU's resident memory covers its RAM right after boot; the
  guest-thp-never twin beside it, which faults its RAM in, shows the check tells the two
  apart; `lab diff --live` shows the preallocation as its delta.

Beside them, libvirt itself refuses the cell the lab refuses, 1 GiB pages on demand.
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
# one block of guest-thp × prealloc in mirror blocks (each cell beside its opposite): the
# factorial study at the end runs it on this pair and brings the other block up
NEVER, PREALLOC = "guest-thp-never.prealloc-off", "guest-thp-always.prealloc-on"


@pytest.fixture(scope="module")
def variants_pair(prepared_host: Lab) -> Iterator[Lab]:
    lab = prepared_host
    lab("down")  # the session's pair (down already, in a full session) or one left behind
    lab("up", "--pair", f"{NEVER},{PREALLOC}", *SIZING)
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
        f"lab-{NEVER}": "running",
        f"lab-{PREALLOC}": "running",
    }


def test_thp_is_off_in_the_guest_that_declares_it_and_only_there(variants_pair: Lab) -> None:
    facts = {g["name"]: g["facts"] for g in variants_pair.state()["guests"]}
    assert facts[f"lab-{NEVER}"]["thp_enabled"] == "never"
    assert facts[f"lab-{PREALLOC}"]["thp_enabled"] in ("always", "madvise")
    assert "[never]" in variants_pair("ssh", NEVER, "cat", THP_ENABLED).stdout
    booted = variants_pair("ssh", NEVER, "cat", "/proc/cmdline").stdout.split()
    assert booted[-1] == "transparent_hugepage=never"
    other = variants_pair("ssh", PREALLOC, "cat", "/proc/cmdline").stdout
    assert "transparent_hugepage=never" not in other


def test_lab_diff_shows_the_kernel_command_line_as_the_one_delta(variants_pair: Lab) -> None:
    # against the cell of the same preallocation: its guest's THP the one level apart
    changes = json.loads(variants_pair("diff", "prealloc-off", NEVER, "--json", *SIZING).stdout)
    delta = [c for c in changes if c["kind"] != "identity"]
    assert [(c["kind"], c["path"], c["by"]) for c in delta] == [
        ("variant", "/domain/os/cmdline/text()", NEVER)
    ]
    assert delta[0]["b"] == delta[0]["a"] + " transparent_hugepage=never"


def test_the_preallocated_twin_holds_all_its_ram_and_the_other_does_not(
    variants_pair: Lab,
) -> None:
    assert resident_kib(f"lab-{PREALLOC}") >= GUEST_KIB
    assert resident_kib(f"lab-{NEVER}") < GUEST_KIB  # faults its RAM in as it goes


def test_qemu_was_told_each_variant_s_delta_and_libvirt_holds_the_preallocation(
    variants_pair: Lab,
) -> None:
    xml = subprocess.run(
        ["virsh", "-c", "qemu:///system", "dumpxml", f"lab-{PREALLOC}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "<allocation mode='immediate'/>" in xml
    done = variants_pair("diff", "--live", NEVER, PREALLOC, "--json", check=False)
    found = json.loads(done.stdout)
    assert [d for d in found if d["kind"] == "unexplained"] == [], done.stdout
    variant = {d["option"]: (d["a"], d["b"]) for d in found if d["kind"] == "variant"}
    assert set(variant) == {"-append", "-object pc.ram prealloc"}
    assert variant["-object pc.ram prealloc"] == ("(absent)", "true")
    assert variant["-append"][0].endswith(" transparent_hugepage=never")
    consequences = {d["option"] for d in found if d["kind"] == "consequence"}
    assert consequences <= {"-object pc.ram prealloc-context", "-object thread-context tc-pc.ram"}
    assert done.returncode == 0


def test_libvirt_refuses_the_cell_the_lab_refuses(variants_pair: Lab, tmp_path: Path) -> None:
    # the lab's reason for refusing page-1g.prealloc-off is libvirt's own: the domain the
    # levels compose, handed to libvirt, is refused with the words the lab quotes
    refused = variants_pair("xml", "--variant", "page-1g.prealloc-off", *SIZING, check=False)
    assert refused.returncode == 2 and "hugepages are not allowed" in refused.stderr
    xml = variants_pair("xml", "--variant", "page-1g.prealloc-on", *SIZING).stdout
    path = tmp_path / "ondemand.xml"
    path.write_text(xml.replace('mode="immediate"', 'mode="ondemand"'))
    native = subprocess.run(
        ["virsh", "-c", "qemu:///system", "domxml-to-native", "qemu-argv", "--xml", str(path)],
        capture_output=True,
        text=True,
    )
    assert native.returncode != 0
    assert "hugepages are not allowed with memory allocation ondemand" in native.stderr


FACTORIAL = """name = "guest-thp-by-prealloc"
vcpus = 1
memory = "1G"
reserve_host_cpus = 0

[factors]
guest-thp = ["always", "never"]
prealloc = ["off", "on"]

[design]
blocks = "mirror"

[[workload]]
name = "sysbench-memory"
params = { time = 1, total_size = "64M", block_size = "1M" }
n = 4
schedule = "sync"
"""


def test_a_factorial_study_runs_its_blocks_and_compare_gives_each_factor(
    variants_pair: Lab, tmp_path: Path
) -> None:
    # issue 41 in CI: a 2 × 2 in mirror blocks is two bring-ups, and this pair is one of them
    study, db = tmp_path / "factorial.toml", str(tmp_path / "factorial.db")
    study.write_text(FACTORIAL)
    plan = json.loads(variants_pair("study", "check", str(study), "--json").stdout)["design"]
    assert plan["blocking"] == "mirror" and plan["confounded_with_blocks"] == ["guest-thp:prealloc"]
    assert sorted(plan["blocks"][0]) == sorted([NEVER, PREALLOC])  # the lab that is up first
    done = variants_pair("study", "run", str(study), "--db", db, timeout=1800)
    assert "using the lab that is up" in done.stderr and "block 2 of 2" in done.stderr
    (host,) = json.loads(variants_pair("status", "--json").stdout)["hosts"]
    assert sorted(g["name"] for g in host["guests"]) == sorted(
        f"lab-{c}" for c in plan["blocks"][1]
    )  # the second block is up now, verified as its levels declare
    assert host["verified"] is True

    found = json.loads(variants_pair("compare", "--db", db, "--format", "json").stdout)
    (answer,) = [x for x in found if "effects" in x and x["metric"] == "throughput_mib_s"]
    assert answer["cells"] and len(answer["cells"]) == 4 and answer["blocks"] == 2
    effects = {e["term"]: e for e in answer["effects"]}
    assert set(effects) == {"guest-thp", "prealloc"}  # the interaction is the blocks'
    assert answer["confounded"] == ["guest-thp:prealloc"]
    for effect in effects.values():
        low, high = effect["ratio_ci"]
        assert 0 < low <= effect["ratio"] <= high
    stored = json.loads(variants_pair("study", "show", "guest-thp-by-prealloc", "--db", db,
                                      "--json").stdout)["design"]  # fmt: skip
    assert stored["blocks"] == plan["blocks"] and stored["blocking"] == "mirror"
