"""Secrets never leak: the lab's SSH private keys stay in their own files.

A lab state is built as `lab up` builds it (the lab's client key, a host key pair per guest
handed over in its seed), a short run with the real runner stores samples together with the
guests' domain XML and facts, and `lab export` and `lab report` write what they write. No
file the lab writes for results holds a private key: neither the PEM armour nor any line of
the key's base64 body.
"""

from __future__ import annotations

import html
import os
import re
import stat
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab.cli import main
from lab.core.config import Config
from lab.core.context import Context
from lab.guests.cpuplan import plan_cpus
from lab.guests.keys import KeyPair, lab_client_key
from lab.guests.labstate import GuestRecord, LabState, save_state
from lab.guests.seed import SeedData, write_seed_iso
from lab.guests.twins import build_twins
from lab.guests.variants import load_variants
from lab.run.controller import Controller, RunPlan
from lab.store import Store
from tests.unit.helpers import settings, topology
from tests.unit.test_controller import FastClock, LocalShell, ShellWorkload


class Domains:
    """Just enough of a libvirt connection for the controller to store each domain's XML."""

    def __init__(self, xml: dict[str, str]) -> None:
        self.xml = xml

    def lookupByName(self, name: str) -> Any:  # libvirt's name
        return SimpleNamespace(XMLDesc=lambda flags: self.xml[name])


def key_pieces(private_openssh: str) -> list[str]:
    """What would give a private key away: its armour and every line of its base64 body."""
    body = [line for line in private_openssh.splitlines() if line and "-----" not in line]
    assert body, private_openssh
    return ["PRIVATE KEY", "".join(body), *body]


def build_lab(root: Path) -> tuple[Path, LabState, list[str], dict[str, str]]:
    """A lab state with real keys and seeds; returns it, the secrets and the domain XML."""
    state_dir = root / "state"
    key_path, client_public = lab_client_key(state_dir / "ssh")
    secrets = [key_path.read_text()]
    variants = load_variants()
    plan = plan_cpus(topology(1, 4), 2, 1, reserve_host_cpus=0)
    guests = build_twins(
        [variants["thp"], variants["shp1g"]], replace(settings(), state_dir=state_dir), plan
    )
    records = []
    for guest in guests:
        host_key = KeyPair.generate(f"root@{guest.name}")
        secrets.append(host_key.private_openssh)
        guest.directory.mkdir(parents=True)
        assert guest.spec.seed is not None
        data = SeedData(
            f"{guest.name}-1",
            guest.name,
            client_public,
            host_key.private_openssh,
            host_key.public_openssh,
        )
        write_seed_iso(data, Path(guest.spec.seed.path))
        records.append(
            GuestRecord(
                guest.name,
                guest.variant.name,
                guest.spec.network.mac,
                str(guest.directory),
                list(guest.placement.vcpu_cpus),
                guest.placement.node,
                host_key.public_openssh,
                ip="127.0.0.1",
                facts={"kernel": "6.1.0", "cpus": 1, "thp_enabled": "madvise"},
            )
        )
    state = LabState(records, "qemu", "test", "debian12", "abc", "lab", "198.18.0.1", [3], 0.0)
    save_state(state_dir, state)
    return state_dir, state, secrets, {g.name: g.spec.to_string() for g in guests}


def test_no_private_key_in_the_store_the_exports_or_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state_dir, state, secrets, xml = build_lab(tmp_path)
    db = tmp_path / "results" / "lab.db"
    ctx = Context(config=Config(state_dir=str(state_dir), store=str(db)), clock=FastClock())
    ctx.__dict__["libvirt"] = Domains(xml)
    workload = ShellWorkload(["true"], name="null")
    plan = RunPlan("secrets", workload, {}, 3, "concurrent", 10, 0.05, str(tmp_path / "runner"))
    db.parent.mkdir()
    with Store.open(db) as store:
        Controller(ctx, store, state, state.guests, plan, lambda r: LocalShell(r.name)).run()

    config = tmp_path / "lab.toml"
    config.write_text(f'state_dir = "{state_dir}"\nstore = "{db}"\n')
    monkeypatch.setenv("LAB_CONFIG", str(config))
    out = tmp_path / "out"
    out.mkdir()
    assert main(["export", "--out", str(out / "samples.csv")]) == 0
    assert main(["export", "--format", "jsonl", "--out", str(out / "samples.jsonl")]) == 0
    assert main(["report", "--out", str(out / "report")]) == 0
    capsys.readouterr()

    written = [
        *(p for p in db.parent.iterdir()),  # the store and its -wal/-shm
        *(p for p in out.rglob("*") if p.is_file()),
        state_dir / "lab.json",
    ]
    report = html.unescape((out / "report" / "index.html").read_text())
    assert "lab-shp1g" in report and "<memoryBacking>" in report  # the domain XML is in it
    assert any(len(line.split(",")) > 10 for line in (out / "samples.csv").read_text().splitlines())
    for path in written:
        data = path.read_bytes().decode("latin-1")
        for secret in secrets:
            for piece in key_pieces(secret):
                assert piece not in data, f"{path} holds a piece of a private key"
    # The pieces are where they belong, so the search above would have found them.
    assert key_pieces(secrets[0])[1] in (state_dir / "ssh" / "id_ed25519").read_text().replace(
        "\n", ""
    )


def test_the_private_key_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    old_umask = os.umask(0)  # modes must not depend on the caller's umask
    try:
        state_dir, _, _, _ = build_lab(tmp_path)
    finally:
        os.umask(old_umask)
    ssh = state_dir / "ssh"
    assert stat.S_IMODE(ssh.stat().st_mode) == 0o700
    assert stat.S_IMODE((ssh / "id_ed25519").stat().st_mode) == 0o600
    # The state directory itself must stay traversable: QEMU (libvirt-qemu) opens the guests'
    # disks under it. Nobody but its owner may write into it.
    assert stat.S_IMODE(state_dir.stat().st_mode) & 0o022 == 0
    assert stat.S_IMODE((state_dir / "lab.json").stat().st_mode) & 0o022 == 0


def test_a_key_written_over_a_loose_file_becomes_private(tmp_path: Path) -> None:
    ssh = tmp_path / "ssh"
    ssh.mkdir(mode=0o755)
    (ssh / "id_ed25519").write_text("old")
    (ssh / "id_ed25519").chmod(0o644)
    loose = (ssh / "id_ed25519").stat().st_ino
    key, _ = lab_client_key(ssh)
    assert stat.S_IMODE(ssh.stat().st_mode) == 0o700
    assert key.stat().st_ino != loose  # a new file: the key was never in the loose one
    # an existing private key without its public half is replaced, and private again
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert re.match(r"-----BEGIN OPENSSH PRIVATE KEY-----", key.read_text())


def test_the_seed_with_the_guest_host_key_is_not_world_readable(tmp_path: Path) -> None:
    _, state, _, _ = build_lab(tmp_path)
    for record in state.guests:
        seed = Path(record.directory) / "seed.iso"
        assert stat.S_IMODE(seed.stat().st_mode) & 0o077 == 0
