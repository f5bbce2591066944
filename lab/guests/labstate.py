"""What is up: the lab's guests as `lab up` left them, in ``<state_dir>/lab.json``.

Written atomically (temp file + rename), so a crash never leaves half a record;
read by status, ssh, console, run and down.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lab.core.errors import UnknownNameError, UsageError

STATE_VERSION = 1


@dataclass(frozen=True)
class GuestRecord:
    name: str
    variant: str
    mac: str
    directory: str
    vcpu_cpus: list[int]
    node: int
    host_public_key: str
    ip: str | None = None
    facts: dict[str, object] = field(default_factory=dict)
    host: str = "local"  # the inventory's name of the host it runs on (lab.core.inventory)


@dataclass(frozen=True)
class LabState:
    guests: list[GuestRecord]
    accelerator: str
    accel_reason: str
    image: str
    image_hash: str
    network: str
    host_ip: str
    emulator_cpus: list[int]
    created: float
    ready: bool = False
    version: int = STATE_VERSION
    host: str = "local"

    def guest(self, name: str) -> GuestRecord:
        return guest_named(self.guests, name)


def guest_named(guests: Sequence[GuestRecord], name: str) -> GuestRecord:
    """The guest called ``name`` or ``lab-NAME`` among ``guests`` (of one host or all)."""
    for guest in guests:
        if guest.name in (name, f"lab-{name}"):
            return guest
    raise UnknownNameError("guest", name, [g.name for g in guests])


def no_lab_up() -> UsageError:
    return UsageError("no lab is up", hint="Bring a pair up first: lab up --pair thp,shp1g")


def state_path(state_dir: Path) -> Path:
    return state_dir / "lab.json"


def save_state(state_dir: Path, state: LabState) -> None:
    path = state_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2, sort_keys=True) + "\n")
    # Public keys and addresses only, but nobody else may change what `lab down` destroys.
    tmp.chmod(0o644)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    tmp.replace(path)


def load_state(state_dir: Path) -> LabState | None:
    path = state_path(state_dir)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    if data.get("version") != STATE_VERSION:
        raise UsageError(
            f"{path} was written by another lab version (state version {data.get('version')})",
            hint="Run `lab down` with that version, or remove the file after destroying the guests",
        )
    guests = [GuestRecord(**g) for g in data.pop("guests")]
    return LabState(guests=guests, **data)


def require_state(state_dir: Path) -> LabState:
    state = load_state(state_dir)
    if state is None:
        raise no_lab_up()
    return state


def clear_state(state_dir: Path) -> None:
    state_path(state_dir).unlink(missing_ok=True)
