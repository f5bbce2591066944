"""The NoCloud seed, the lab's keys, the state file and the waiting loop."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml

from lab.core.clock import ManualClock
from lab.core.errors import GuestError, UnknownNameError
from lab.core.waiting import wait_for
from lab.guests.keys import KeyPair, lab_client_key
from lab.guests.labstate import GuestRecord, LabState, clear_state, load_state, save_state
from lab.guests.seed import SeedData, cloud_config_text, read_seed_iso, write_seed_iso


def seed_data() -> SeedData:
    client, host = KeyPair.generate("lab-controller"), KeyPair.generate("root@lab-thp")
    return SeedData(
        "lab-thp-1", "lab-thp", client.public_openssh, host.private_openssh, host.public_openssh
    )


def test_seed_iso_is_labelled_cidata_and_holds_parseable_cloud_config(tmp_path: Path) -> None:
    data = seed_data()
    write_seed_iso(data, tmp_path / "seed.iso")
    files = read_seed_iso(tmp_path / "seed.iso")
    assert files["volume-label"] == "cidata"
    assert files["user-data"].startswith("#cloud-config\n")
    config = yaml.safe_load(files["user-data"])
    assert config["ssh_pwauth"] is False and config["disable_root"] is True
    assert config["ssh_genkeytypes"] == []  # the guest keeps the key we made, no new ones
    assert config["ssh_keys"]["ed25519_private"] == data.host_private_key
    assert config["users"][0]["ssh_authorized_keys"] == [data.authorized_key]
    assert config["users"][0]["lock_passwd"] is True
    assert yaml.safe_load(files["meta-data"]) == {
        "instance-id": "lab-thp-1",
        "local-hostname": "lab-thp",
    }


def test_cloud_config_survives_quotes_and_newlines_in_values() -> None:
    data = seed_data()
    odd = SeedData("x", "h", 'ssh-ed25519 AAAA "quoted" $(id); \n#not-a-comment', "k", "p")
    assert yaml.safe_load(cloud_config_text(odd))["users"][0]["ssh_authorized_keys"] == [
        odd.authorized_key
    ]
    assert "BEGIN OPENSSH PRIVATE KEY" in data.host_private_key


def test_client_key_is_private_and_stable(tmp_path: Path) -> None:
    ssh = tmp_path / "state" / "ssh"
    key, public = lab_client_key(ssh)
    assert stat.S_IMODE(ssh.stat().st_mode) == 0o700
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert public.startswith("ssh-ed25519 ")
    assert lab_client_key(ssh) == (key, public)


def test_state_round_trip_and_guest_lookup(tmp_path: Path) -> None:
    record = GuestRecord(
        "lab-thp", "thp", "52:54:00:00:00:01", "/d", [0], 0, "ssh-ed25519 A", ip="198.18.0.100"
    )
    state = LabState([record], "qemu", "tcg", "debian12", "abc", "lab", "198.18.0.1", [0, 1], 1.0)
    save_state(tmp_path, state)
    loaded = load_state(tmp_path)
    assert loaded == state
    assert loaded.guest("thp").ip == "198.18.0.100"
    with pytest.raises(UnknownNameError, match="Known guests: lab-thp"):
        loaded.guest("shp1g")
    data = json.loads((tmp_path / "lab.json").read_text())
    assert data["version"] == 1
    clear_state(tmp_path)
    assert load_state(tmp_path) is None


def test_wait_for_polls_until_true_and_times_out_with_context() -> None:
    clock = ManualClock()
    answers = iter([None, None, "198.18.0.100"])
    assert wait_for("lease", lambda: next(answers), timeout=10, clock=clock) == "198.18.0.100"
    assert clock.t == 1_000_001.0  # two half-second waits
    with pytest.raises(GuestError) as err:
        wait_for("SSH", lambda: False, timeout=3, clock=clock, on_timeout=lambda: "console: panic")
    assert "timed out after 3 s waiting for SSH" in str(err.value)
    assert "console: panic" in str(err.value)
