"""Where a host's guests get their files: the base image, linked clones, seeds, console logs.

On this machine (:class:`LocalFiles`) the base image is used from the image folder and each
guest gets ``<state_dir>/guests/NAME`` with a ``qemu-img`` linked clone and a seed ISO.
On another host (:class:`lab.guests.storagepool.PoolFiles`) the same files are libvirt storage
volumes, uploaded and cloned over the libvirt connection.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lab.core.hostexec import Host
from lab.domainxml.boot import Boot
from lab.guests.seed import SeedData, write_seed_iso

if TYPE_CHECKING:
    from lab.guests.twins import Guest
    from lab.images.image import BaseImage


@dataclass(frozen=True)
class PlacedImage:
    """A base image as the guests of one host use it: their boot and their backing disk."""

    boot: Boot
    disk: str


class GuestFiles(Protocol):
    def place_image(
        self, image: BaseImage, progress: Callable[[str], None] = ...
    ) -> PlacedImage: ...

    def make(self, guest: Guest, base: PlacedImage, seed: SeedData) -> None: ...

    def remove(self, name: str, directory: str) -> None: ...

    def console_tail(self, directory: str, lines: int = 15) -> str: ...


class LocalFiles:
    def __init__(self, host: Host, state_dir: Path) -> None:
        self.host = host
        self.guests_dir = state_dir / "guests"

    def place_image(
        self, image: BaseImage, progress: Callable[[str], None] = lambda _text: None
    ) -> PlacedImage:
        return PlacedImage(image.boot, str(image.disk))  # already here: nothing to send

    def make(self, guest: Guest, base: PlacedImage, seed: SeedData) -> None:
        directory = guest.directory
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o755)
        # A linked clone: the base image stays shared and read-only.
        self.host.run(
            ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", base.disk,
             guest.spec.disk.path]
        )  # fmt: skip
        assert guest.spec.seed is not None
        write_seed_iso(seed, Path(guest.spec.seed.path))

    def remove(self, name: str, directory: str) -> None:
        folder = Path(directory)
        if folder.is_dir() and folder.parent == self.guests_dir:
            shutil.rmtree(folder)

    def console_tail(self, directory: str, lines: int = 15) -> str:
        path = Path(directory) / "console.log"
        try:
            text = path.read_text(errors="replace")
        except OSError:
            return f"(no console log at {path})"
        return tail_lines(text, lines)


def tail_lines(text: str, lines: int) -> str:
    tail = [line for line in text.splitlines() if line.strip()][-lines:]
    return "last console lines:\n  " + "\n  ".join(tail)
