"""``lab status`` asks lab.app.status, which asks each host's libvirt (here its test driver,
whose domain 'test' runs) for the state of the guests the lab's record names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.app.status import lab_status
from lab.cli import main
from lab.core.config import Config
from lab.core.context import Context
from lab.core.errors import LabError
from lab.guests.labstate import GuestRecord, LabState, save_state


def _record(state_dir: Path) -> None:
    guests = [
        GuestRecord("test", "thp", "52:54:00:00:00:01", "/d", [0], 0, "k", ip="10.0.0.2"),
        GuestRecord("lab-gone", "shp1g", "52:54:00:00:00:02", "/d", [1], 0, "k"),
    ]
    state = LabState(guests, "tcg", "r", "debian12", "h", "lab", "10.0.0.1", [2, 3], 0.0, True)
    save_state(state_dir, state)


def test_each_guest_has_the_state_libvirt_gives_it(tmp_path: Path) -> None:
    _record(tmp_path)
    ctx = Context(config=Config(state_dir=str(tmp_path), libvirt_uri="test:///default"))
    (host,) = lab_status(ctx)
    assert (host.host, host.accelerator, host.emulator_cpus, host.verified) == (
        "local", "tcg", (2, 3), True,
    )  # fmt: skip
    assert host.error is None
    assert [(g.name, g.state, g.address) for g in host.guests] == [
        ("test", "running", "10.0.0.2"),
        ("lab-gone", "missing", None),
    ]


def test_a_host_whose_libvirt_cannot_be_reached_is_listed_with_why(tmp_path: Path) -> None:
    _record(tmp_path)

    def refuse(uri: str) -> None:
        raise LabError(f"cannot connect to libvirt at {uri}", hint="Start libvirtd")

    ctx = Context(config=Config(state_dir=str(tmp_path)), connect=refuse)
    (host,) = lab_status(ctx)
    assert host.error is not None and "cannot connect to libvirt" in host.error.message
    assert [g.state for g in host.guests] == ["unreachable", "unreachable"]


def test_lab_status_json_is_the_action_s_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _record(tmp_path / "state")
    config = tmp_path / "lab.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\nlibvirt_uri = "test:///default"\n')
    assert main(["--config", str(config), "status", "--json"]) == 0
    (host,) = json.loads(capsys.readouterr().out)["hosts"]
    assert (host["host"], host["emulator_cpus"], host["verified"]) == ("local", [2, 3], True)
    assert host["guests"][0] == {
        "name": "test", "variant": "thp", "state": "running", "address": "10.0.0.2",
        "vcpu_cpus": [0],
    }  # fmt: skip
    assert (host["guests"][1]["state"], host["guests"][1]["address"]) == ("missing", None)
