"""lab.app.guestshell: a guest of the lab that is up, by name, its console log and the
OpenSSH command line that logs in to it (``lab console``, ``lab ssh``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.app.guestshell import console_lines, login_argv
from lab.core.config import Config
from lab.core.context import Context
from lab.core.errors import LabError
from lab.guests.labstate import GuestRecord, LabState, save_state


def _lab(tmp_path: Path) -> Context:
    state_dir = tmp_path / "state"
    guests = [
        GuestRecord("lab-thp", "thp", "52:54:00:00:00:01", str(tmp_path / "thp"), [0], 0,
                    "ssh-ed25519 AAAAthp", ip="10.0.0.2"),
        GuestRecord("lab-shp1g", "shp1g", "52:54:00:00:00:02", str(tmp_path / "shp1g"), [1], 0,
                    "ssh-ed25519 AAAAshp", ip="10.0.0.3"),
    ]  # fmt: skip
    save_state(state_dir, LabState(guests, "tcg", "r", "img", "h", "lab", "10.0.0.1", [2], 0.0))
    return Context(config=Config(state_dir=str(state_dir)))


def test_the_console_is_the_guest_s_log_or_its_last_lines(tmp_path: Path) -> None:
    ctx = _lab(tmp_path)
    (tmp_path / "shp1g").mkdir()
    (tmp_path / "shp1g" / "console.log").write_bytes(b"boot\nlogin: \xff\nready\n")
    assert console_lines(ctx, "lab-shp1g") == ["boot\n", "login: \ufffd\n", "ready\n"]
    assert console_lines(ctx, "lab-shp1g", last=1) == ["ready\n"]


def test_logging_in_trusts_only_that_guest_s_key(tmp_path: Path) -> None:
    ctx = _lab(tmp_path)
    argv = login_argv(ctx, "lab-shp1g")
    known = tmp_path / "state" / "ssh" / "known_hosts.lab-shp1g"
    assert known.read_text() == "10.0.0.3 ssh-ed25519 AAAAshp\n"
    assert argv[:3] == ["ssh", "-i", str(tmp_path / "state" / "ssh" / "id_ed25519")]
    assert f"UserKnownHostsFile={known}" in argv and "StrictHostKeyChecking=yes" in argv
    assert argv[-1] == "lab@10.0.0.3" and not any("ProxyCommand" in a for a in argv)


def test_a_guest_that_is_not_up_is_refused(tmp_path: Path) -> None:
    ctx = _lab(tmp_path)
    with pytest.raises(LabError, match="lab-nope"):
        login_argv(ctx, "lab-nope")
    assert not (tmp_path / "state" / "ssh" / "known_hosts.lab-nope").exists()
