"""A variant that changes the guest itself, on a real pair: thp,guest-thp-never.

After the session's pair is down (conftest's ORDER), `lab up` brings this pair up and
verifies, in the guest over SSH, that THP is off there; `lab diff` shows the kernel command
line as the one delta, in the domain XML and as QEMU's -append.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.integration.conftest import Lab

pytestmark = pytest.mark.integration

SIZING = ("--vcpus", "1", "--memory", "1G", "--reserve-host-cpus", "0")
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"


@pytest.fixture(scope="module")
def never_pair(prepared_host: Lab) -> Iterator[Lab]:
    lab = prepared_host
    lab("down")  # the session's pair (down already, in a full session) or one left behind
    lab("up", "--pair", "thp,guest-thp-never", *SIZING)
    yield lab
    lab("down", check=False)


def test_the_pair_came_up_verified(never_pair: Lab) -> None:
    (host,) = json.loads(never_pair("status", "--json").stdout)["hosts"]
    assert host["verified"] is True
    assert {g["name"]: g["state"] for g in host["guests"]} == {
        "lab-thp": "running",
        "lab-guest-thp-never": "running",
    }


def test_thp_is_off_in_the_guest_that_declares_it_and_only_there(never_pair: Lab) -> None:
    facts = {g["name"]: g["facts"] for g in never_pair.state()["guests"]}
    assert facts["lab-guest-thp-never"]["thp_enabled"] == "never"
    assert facts["lab-thp"]["thp_enabled"] in ("always", "madvise")
    assert "[never]" in never_pair("ssh", "guest-thp-never", "cat", THP_ENABLED).stdout
    booted = never_pair("ssh", "guest-thp-never", "cat", "/proc/cmdline").stdout.split()
    assert booted[-1] == "transparent_hugepage=never"
    assert (
        "transparent_hugepage=never" not in never_pair("ssh", "thp", "cat", "/proc/cmdline").stdout
    )


def test_lab_diff_shows_the_kernel_command_line_as_the_one_delta(never_pair: Lab) -> None:
    changes = json.loads(never_pair("diff", "thp", "guest-thp-never", "--json", *SIZING).stdout)
    delta = [c for c in changes if c["kind"] != "identity"]
    assert [(c["kind"], c["path"], c["by"]) for c in delta] == [
        ("variant", "/domain/os/cmdline/text()", "guest-thp-never")
    ]
    assert delta[0]["b"] == delta[0]["a"] + " transparent_hugepage=never"


def test_qemu_was_told_the_same_delta(never_pair: Lab) -> None:
    done = never_pair("diff", "--live", "thp", "guest-thp-never", "--json", check=False)
    found = json.loads(done.stdout)
    assert [d for d in found if d["kind"] == "unexplained"] == [], done.stdout
    assert [(d["kind"], d["option"]) for d in found if d["kind"] != "identity"] == [
        ("variant", "-append")
    ]
    assert done.returncode == 0
