"""`lab up` on real guests: ready, pinned and backed as declared; `lab ssh`; `lab status`."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.integration.conftest import STATE_DIR, Pair, free_1g_pages

pytestmark = pytest.mark.integration


def virsh(*args: str) -> str:
    return subprocess.run(
        ["virsh", "-c", "qemu:///system", *args], capture_output=True, text=True, check=True
    ).stdout


def test_up_chose_an_accelerator_visibly(pair: Pair) -> None:
    state = pair.lab.state()
    assert state["accelerator"] in ("kvm", "qemu")
    if state["accelerator"] == "qemu":
        assert "accelerator TCG" in pair.up_output
        assert "timings measure the emulator" in pair.up_output


def test_shp1g_guest_took_one_1g_page(pair: Pair) -> None:
    assert free_1g_pages() == pair.free_before_up - 1
    xml = virsh("dumpxml", "lab-shp1g")
    assert "<page size='1048576' unit='KiB'/>" in xml
    assert "<memoryBacking>" not in virsh("dumpxml", "lab-thp")


def test_each_vcpu_pinned_as_planned(pair: Pair) -> None:
    state = pair.lab.state()
    for guest in state["guests"]:
        out = virsh("vcpupin", guest["name"])
        pins = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
        assert [(int(v), int(c)) for v, c in pins] == list(enumerate(guest["vcpu_cpus"]))
    cpus = [g["vcpu_cpus"] for g in state["guests"]]
    assert not set(cpus[0]) & set(cpus[1])


def test_guest_facts_recorded(pair: Pair) -> None:
    for guest in pair.lab.state()["guests"]:
        facts = guest["facts"]
        assert facts["cpus"] == 1
        assert 800_000 < facts["mem_total_kib"] <= 1_048_576
        assert facts["kernel"].endswith("-cloud-amd64")
        assert facts["thp_enabled"] in ("always", "madvise", "never")


def test_lab_ssh_runs_in_each_guest(pair: Pair) -> None:
    for name in ("thp", "shp1g"):
        out = pair.lab("ssh", name, "hostname").stdout.strip()
        assert out == f"lab-{name}"
    # arguments reach the guest literally, never through a host shell
    out = pair.lab("ssh", "thp", "echo", "a;b", "$(id)", "'q'").stdout
    assert out.strip() == "a;b $(id) 'q'"


def test_status_lists_both_guests_running(pair: Pair) -> None:
    out = pair.lab("status").stdout
    assert "lab-thp" in out and "lab-shp1g" in out
    assert out.count("running") == 2
    doc = json.loads(pair.lab("status", "--json").stdout)
    (host,) = doc["hosts"]
    assert host["host"] == "local" and host["verified"] is True
    assert {g["name"]: g["state"] for g in host["guests"]} == {
        "lab-thp": "running",
        "lab-shp1g": "running",
    }
    assert all(g["address"].startswith("198.18.") for g in host["guests"])


def test_state_file_is_private_enough(pair: Pair) -> None:
    state = json.loads((STATE_DIR / "lab.json").read_text())
    assert "PRIVATE KEY" not in json.dumps(state)
    assert oct((STATE_DIR / "ssh").stat().st_mode & 0o777) == "0o700"
