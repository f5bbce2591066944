"""The cloud-init NoCloud seed: an ISO9660 volume labelled ``cidata``, built in-process.

user-data is a ``#cloud-config`` document written as JSON (valid YAML), never by
pasting strings together: the lab user with the lab's key, no passwords, and the
guest's pre-generated SSH host key.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pycdlib

GUEST_USER = "lab"


@dataclass(frozen=True)
class SeedData:
    instance_id: str
    hostname: str
    authorized_key: str  # the lab controller's public key
    host_private_key: str  # the guest's own ed25519 host key, OpenSSH PEM
    host_public_key: str

    def user_data(self) -> dict[str, Any]:
        return {
            "users": [
                {
                    "name": GUEST_USER,
                    "uid": 1000,
                    "shell": "/bin/bash",
                    "lock_passwd": True,
                    "sudo": "ALL=(ALL) NOPASSWD:ALL",
                    "ssh_authorized_keys": [self.authorized_key],
                }
            ],
            "disable_root": True,
            "ssh_pwauth": False,
            "ssh_deletekeys": True,
            "ssh_genkeytypes": [],
            "ssh_keys": {
                "ed25519_private": self.host_private_key,
                "ed25519_public": self.host_public_key,
            },
            "ssh_quiet_keygen": True,
            "growpart": {"mode": "off"},
            "resize_rootfs": False,
        }

    def meta_data(self) -> dict[str, str]:
        return {"instance-id": self.instance_id, "local-hostname": self.hostname}


def cloud_config_text(data: SeedData) -> str:
    return "#cloud-config\n" + json.dumps(data.user_data(), indent=2) + "\n"


def write_seed_iso(data: SeedData, path: Path) -> None:
    """Write the seed ISO (Joliet + Rock Ridge, so cloud-init sees the real file names)."""
    files = {
        "user-data": cloud_config_text(data).encode(),
        "meta-data": json.dumps(data.meta_data(), indent=2).encode(),
    }
    iso = pycdlib.PyCdlib()
    iso.new(interchange_level=3, joliet=3, rock_ridge="1.09", vol_ident="cidata")
    for name, content in files.items():
        iso_name = "/" + name.replace("-", "").upper()[:8] + ".;1"
        iso.add_fp(
            io.BytesIO(content), len(content), iso_name, rr_name=name, joliet_path="/" + name
        )
    tmp = path.with_suffix(".tmp")
    # It holds the guest's private host key: readable by root only. libvirt hands the
    # file to QEMU's user when the guest starts (its DAC driver changes the owner).
    tmp.touch(mode=0o600)
    tmp.chmod(0o600)
    iso.write(str(tmp))
    iso.close()
    tmp.replace(path)


def read_seed_iso(path: Path) -> dict[str, str]:
    """The files of a seed ISO by their Joliet names (for tests and `lab status`)."""
    iso = pycdlib.PyCdlib()
    iso.open(str(path))
    try:
        out = {}
        for name in ("user-data", "meta-data"):
            buf = io.BytesIO()
            iso.get_file_from_iso_fp(buf, joliet_path="/" + name)
            out[name] = buf.getvalue().decode()
        label = iso.pvd.volume_identifier.decode().strip()
        out["volume-label"] = label
        return out
    finally:
        iso.close()
