"""`lab up --hosts`: one outcome per host, as Fabric's GroupResult, with fake bring-ups.

No libvirt, SSH or guest is touched: the bring-up and the memory check are handed in, and
the hosts of lab.toml are only names here.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from lab.app.up import HostOutcome, UpOutcome, UpRequest, up
from lab.commands.show import print_up
from lab.core.config import Config
from lab.core.context import Context
from lab.core.errors import GuestError, LabError, RequirementError
from lab.guests.bringup import UpResult
from lab.guests.labstate import GuestRecord, LabState, save_state
from lab.guests.plan import TwinRequest
from lab.guests.sites import Site

TWINS = TwinRequest(["thp", "shp1g"], 1, "1G", 0)
HOSTS = {"rack2": "qemu+ssh://root@rack2/system", "rack3": "qemu+ssh://root@rack3/system"}


def context(tmp_path: Path) -> tuple[Context, io.StringIO]:
    out = io.StringIO()
    config = Config(state_dir=str(tmp_path / "state"), hosts=HOSTS)
    quiet = Console(file=io.StringIO())
    return Context(config=config, out=Console(file=out, width=200), err=quiet), out


def pair(host: str) -> UpResult:
    guests = [
        GuestRecord(f"lab-{host}-{v}", v, "52:54:00:00:00:01", "/d", [0], 0, "key", host=host)
        for v in ("thp", "shp1g")
    ]
    state = LabState(guests, "qemu", "test", "debian12", "h", "lab", "198.18.0.1", [0], 0.0,
                     host=host)  # fmt: skip
    return UpResult(state, {g.name: {"verified": 1.0} for g in guests})


class FakeBringUp:
    """Brings a pair up on every site but those in ``fail``, which raise their error."""

    def __init__(self, fail: dict[str, LabError] | None = None) -> None:
        self.fail = fail or {}
        self.sites: list[str] = []
        self.memory_checked = 0

    def __call__(
        self, ctx: Context, request: TwinRequest, phase: object, site: Site, over: bool
    ) -> UpResult:
        self.sites.append(site.name)
        if site.name in self.fail:
            raise self.fail[site.name]
        return pair(site.name)

    def check_memory(self, ctx: Context, request: TwinRequest) -> None:
        self.memory_checked += 1


def test_every_host_up_is_one_ok_outcome_each_in_the_order_asked(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path)
    fake = FakeBringUp()
    got = up(ctx, UpRequest(TWINS, hosts="local,rack2,rack3"), fake, fake.check_memory)
    assert [(h.host, h.ok) for h in got.hosts] == [("local", True), ("rack2", True),
                                                   ("rack3", True)]  # fmt: skip
    assert got.ok and got.failed == ()
    assert got.hosts[1].result == pair("rack2")
    assert sorted(fake.sites) == ["local", "rack2", "rack3"]
    assert fake.memory_checked == 1  # this machine's memory, once, before anything


def test_a_failed_host_is_its_own_outcome_and_the_others_stay_up(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path)
    lost = GuestError("host rack2: ssh: connect to host rack2 port 22: No route to host")
    fake = FakeBringUp({"rack2": lost})
    got = up(ctx, UpRequest(TWINS, hosts="rack2,rack3"), fake, fake.check_memory)
    assert [(h.host, h.ok) for h in got.hosts] == [("rack2", False), ("rack3", True)]
    assert got.failed == (HostOutcome("rack2", error=lost),)
    assert got.hosts[1].result == pair("rack3")
    assert fake.memory_checked == 0  # no pair on this machine: its memory is not asked


def test_with_one_host_its_error_is_raised_as_it_is(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path)
    short = RequirementError("shp1g needs 1 free 1 GiB page on node 0; 0 free")
    fake = FakeBringUp({"rack2": short})
    with pytest.raises(RequirementError) as raised:
        up(ctx, UpRequest(TWINS, hosts="rack2"), fake, fake.check_memory)
    assert raised.value is short


def test_pairs_skip_the_hosts_with_a_lab_up(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path)
    save_state(tmp_path / "state", pair("local").state)  # a lab is up here already
    fake = FakeBringUp()
    got = up(ctx, UpRequest(TWINS, pairs=2), fake, fake.check_memory)
    assert [h.host for h in got.hosts] == ["rack2", "rack3"] and got.skipped == ("local",)


def test_the_command_prints_one_row_per_host_and_fails_when_one_did(tmp_path: Path) -> None:
    ctx, out = context(tmp_path)
    outcome = UpOutcome((HostOutcome("rack2", error=GuestError("rack2 [unreachable]")),
                         HostOutcome("rack3", result=pair("rack3"))))  # fmt: skip
    with pytest.raises(LabError, match=r"1 of 2 hosts failed: rack2 \(their errors") as failed:
        print_up(ctx, outcome)
    assert "lab up --hosts NAME" in str(failed.value)
    rows = [
        [cell.strip() for cell in line.strip("│").split("│")]
        for line in out.getvalue().splitlines()
        if line.startswith("│ rack")
    ]
    assert rows[-2:] == [
        ["rack2", "failed", "rack2 [unreachable]"],
        ["rack3", "up", "lab-rack3-thp (thp), lab-rack3-shp1g (shp1g)"],
    ]
    assert "verified" not in out.getvalue()


def test_the_command_prints_no_host_table_for_one_host(tmp_path: Path) -> None:
    ctx, out = context(tmp_path)
    print_up(ctx, UpOutcome((HostOutcome("local", result=pair("local")),)))
    text = out.getvalue()
    assert "lab up: hosts" not in text and "lab-local-thp" in text
    assert text.rstrip().endswith("Next: lab run WORKLOAD")
