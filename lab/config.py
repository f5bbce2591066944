"""User defaults from ``lab.toml``: every key documented, unknown keys and wrong types refused.

Looked up in order: ``--config PATH``, ``$LAB_CONFIG``, ``./lab.toml``,
``~/.config/lab/lab.toml``. Missing file: the defaults below. ``lab config`` prints them.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from lab.errors import ConfigError
from lab.paths import RESULTS_DIR


def _doc(text: str) -> dict[str, str]:
    return {"doc": text}


@dataclass(frozen=True)
class Config:
    libvirt_uri: str = field(default="qemu:///system", metadata=_doc("libvirt connection URI"))
    state_dir: str = field(
        default="/var/lib/lab",
        metadata=_doc("where guest disks, seeds, console logs and the lab's SSH keys live"),
    )
    image_dir: str = field(
        default="/var/cache/lab/images",
        metadata=_doc("where built base images are cached, one folder per recipe hash"),
    )
    image: str = field(default="debian12", metadata=_doc("base image recipe (images/NAME)"))
    network: str = field(default="lab", metadata=_doc("name of the lab's isolated libvirt network"))
    subnet: str = field(
        default="198.18.0.0/24",
        metadata=_doc("IPv4 subnet of the lab network; the host takes the first address"),
    )
    vcpus: int = field(default=1, metadata=_doc("vCPUs per guest"))
    memory: str = field(default="1G", metadata=_doc("memory per guest (binary suffixes)"))
    reserve_host_cpus: int = field(
        default=1, metadata=_doc("host CPUs kept free of vCPUs for the host and emulator threads")
    )
    accelerator: str = field(
        default="auto",
        metadata=_doc("'auto' (KVM when it can run guests, else TCG), 'kvm' or 'qemu' (TCG)"),
    )
    store: str = field(
        default=str(RESULTS_DIR / "lab.db"), metadata=_doc("the SQLite result store")
    )
    boot_timeout: int = field(
        default=600, metadata=_doc("seconds a guest may take to become ready")
    )

    def describe(self) -> list[tuple[str, str, str]]:
        """(key, value, documentation) for every key."""
        return [(f.name, repr(getattr(self, f.name)), f.metadata["doc"]) for f in fields(self)]


def find_config_file(explicit: str | None, cwd: Path | None = None) -> Path | None:
    if explicit:
        return Path(explicit)
    env = os.environ.get("LAB_CONFIG")
    if env:
        return Path(env)
    for candidate in ((cwd or Path.cwd()) / "lab.toml", Path.home() / ".config/lab/lab.toml"):
        if candidate.is_file():
            return candidate
    return None


def load_config(path: Path | None) -> Config:
    """Read ``path`` (None: defaults). Unknown keys and wrong types name the file and key."""
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML ({err})") from None
    return config_from_mapping(data, source=str(path))


def config_from_mapping(data: dict[str, Any], source: str = "config") -> Config:
    known = {f.name: f for f in fields(Config)}
    changes: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(
                f"{source}: unknown key {key!r}", hint=f"Known keys: {', '.join(sorted(known))}"
            )
        expected = type(known[key].default)
        if type(value) is not expected:
            raise ConfigError(
                f"{source}: key {key!r} must be a {expected.__name__},"
                f" not {type(value).__name__} ({value!r})"
            )
        changes[key] = value
    return replace(Config(), **changes)
