"""Base guest images: one folder per content hash, found through a name symlink.

``<image_dir>/debian12-<hash12>/`` holds ``base.qcow2``, ``vmlinuz``, ``initrd.img`` and
``manifest.json``; ``<image_dir>/debian12`` is a symlink to the current one. A folder is
published by renaming a finished temporary folder, so a killed build never looks complete.
Built images boot their own kernel (direct kernel boot); imported images boot from disk.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.core.clock import Clock
from lab.core.errors import LabError, RequirementError, UsageError
from lab.core.hostexec import Host
from lab.core.names import check_name
from lab.core.paths import IMAGES_DIR
from lab.domainxml.boot import Boot, DiskBoot, KernelBoot

MANIFEST = "manifest.json"
DISK = "base.qcow2"
KERNEL = "vmlinuz"
INITRD = "initrd.img"
MANIFEST_FORMAT = 1
DEFAULT_RECIPE = "debian12"

Log = Callable[[str], None]


class ImageNotBuiltError(RequirementError):
    """The image a guest needs is not in the image directory."""

    def __init__(self, name: str, image_dir: Path) -> None:
        self.name = name
        self.image_dir = image_dir
        if name == DEFAULT_RECIPE:
            hint = "Run: lab image build"
        elif (IMAGES_DIR / name).is_dir():
            hint = f"Run: lab image build --recipe {name}"
        else:
            hint = f"Run: lab image import PATH --name {name} (or add a recipe images/{name})"
        super().__init__(f"image {name!r} is not built", hint=hint)


class ImageError(LabError):
    """An image that cannot be built, imported or read."""


@dataclass(frozen=True)
class BaseImage:
    """A finished base image: the disk every guest's linked clone is backed by."""

    name: str
    directory: Path
    disk: Path
    kernel: Path | None
    initrd: Path | None
    cmdline: str | None
    manifest: dict[str, Any]

    @property
    def boot(self) -> Boot:
        if self.kernel is not None:
            return KernelBoot(
                kernel=str(self.kernel), initrd=str(self.initrd or ""), cmdline=self.cmdline or ""
            )
        return DiskBoot()

    @property
    def hash(self) -> str:
        return str(self.manifest.get("hash", ""))


def load_image(directory: Path, name: str | None = None) -> BaseImage:
    """Read a published image folder (its manifest says what is in it)."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError) as err:
        raise ImageError(
            f"image folder {directory} has no readable {MANIFEST} ({err})",
            hint="Remove the folder and build or import the image again",
        ) from None
    kernel = directory / KERNEL if manifest.get("boot") == "kernel" else None
    initrd = directory / INITRD if kernel is not None else None
    return BaseImage(
        name=name or str(manifest.get("name", directory.name)),
        directory=directory,
        disk=directory / DISK,
        kernel=kernel,
        initrd=initrd,
        cmdline=manifest.get("cmdline") if kernel is not None else None,
        manifest=manifest,
    )


def find_image(image_dir: Path, name: str) -> BaseImage:
    """The current image called ``name`` (the folder its symlink points at)."""
    link = Path(image_dir) / name
    if not (link / MANIFEST).is_file() or not (link / DISK).is_file():
        raise ImageNotBuiltError(name, Path(image_dir))
    return load_image(link.resolve(), name)


def list_images(image_dir: Path) -> list[BaseImage]:
    """Every named image (symlink) in ``image_dir`` whose folder is complete."""
    found = []
    directory = Path(image_dir)
    if not directory.is_dir():
        return []
    for link in sorted(directory.iterdir()):
        if link.is_symlink() and (link / MANIFEST).is_file():
            found.append(load_image(link.resolve(), link.name))
    return found


@contextlib.contextmanager
def image_dir_lock(image_dir: Path) -> Iterator[None]:
    """One build or import at a time per image directory."""
    image_dir.mkdir(parents=True, exist_ok=True)
    image_dir.chmod(0o755)  # QEMU (libvirt-qemu) reads base images through it
    with open(image_dir / ".lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ImageError(
                f"another build or import is running in {image_dir}",
                hint="Wait for it to finish, then retry",
            ) from None
        yield


def partial_dir(image_dir: Path, folder: str) -> Path:
    """Where a build or import writes until it is complete."""
    return image_dir / f".{folder}.partial"


def publish(host: Host, partial: Path, image_dir: Path, name: str, folder: str) -> BaseImage:
    """Make a finished ``partial`` folder the current image ``name``, atomically."""
    final = image_dir / folder
    for path in [partial, *partial.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    if final.exists():
        host.run(["rm", "-rf", str(final)])
    os.rename(partial, final)
    point_name_at(image_dir, name, folder)
    return load_image(final, name)


def point_name_at(image_dir: Path, name: str, folder: str) -> None:
    link = image_dir / name
    if link.is_symlink() and os.readlink(link) == folder:
        return
    if link.exists() and not link.is_symlink():
        raise ImageError(
            f"{link} is not a symlink the lab made",
            hint=f"Move it away, then retry (the image is in {image_dir / folder})",
        )
    tmp = image_dir / f".{name}.link"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(folder)
    os.replace(tmp, link)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def qemu_img_info(host: Host, path: Path) -> dict[str, Any]:
    result = host.run(
        ["qemu-img", "info", "--output=json", str(path)],
        hint=f"Is {path} a disk image? Check it with: qemu-img info {path}",
    )
    try:
        info: dict[str, Any] = json.loads(result.stdout)
    except ValueError:
        raise ImageError(f"qemu-img info {path} printed no JSON") from None
    return info


QCOW2_MAGIC = b"QFI\xfb"
# What a file that is not qcow2 probably is, for the message (qemu-img calls the rest raw).
_OTHER_MAGIC = ((b"KDMV", "vmdk"), (b"conectix", "vpc"), (b"vhdxfile", "vhdx"),
                (b"<<< ", "vdi"), (b"\x89PNG", "PNG"), (b"\x7fELF", "ELF"))  # fmt: skip


def check_importable(path: Path, name: str) -> None:
    """Refuse, before anything runs or is written, a path that is no qcow2 file or a bad name."""

    if not path.is_file():
        raise UsageError(
            f"{path} does not exist or is not a file",
            hint="Give the path of a qcow2 cloud image, e.g. debian-12-genericcloud-amd64.qcow2",
        )
    try:
        with open(path, "rb") as handle:
            magic = handle.read(len(QCOW2_MAGIC))
    except OSError as err:
        raise UsageError(
            f"cannot read {path}: {err.strerror}", hint="Check its permissions"
        ) from None
    if magic != QCOW2_MAGIC:
        kind = next((k for m, k in _OTHER_MAGIC if magic == m[:4]), "raw")
        raise UsageError(
            f"{path} is a {kind} image, not qcow2 (a qcow2 file starts with QFI\\xfb)",
            hint=f"Convert it first: qemu-img convert -O qcow2 {path} {path.stem}.qcow2",
        )
    check_name("image", name, "--name")


def import_image(
    path: Path,
    image_dir: Path,
    name: str,
    host: Host,
    log: Log | None = None,
    clock: Clock | None = None,
) -> BaseImage:
    """Copy a user's qcow2 cloud image into the image directory; guests boot it from disk.

    The copy is made with ``qemu-img convert``, so a backing chain is flattened and the
    user's file is never written to.
    """
    say = log or (lambda _message: None)
    path = Path(path)
    image_dir = Path(image_dir)
    check_importable(path, name)
    info = qemu_img_info(host, path)
    if info.get("format") != "qcow2":
        raise UsageError(
            f"{path} is a {info.get('format', 'unknown')} image, not qcow2",
            hint=f"Convert it first: qemu-img convert -O qcow2 {path} {path.stem}.qcow2",
        )
    say(f"hashing {path}")
    digest = file_sha256(path)
    folder = f"{name}-{digest[:12]}"
    with image_dir_lock(image_dir):
        if (image_dir / folder / MANIFEST).is_file():
            point_name_at(image_dir, name, folder)
            say(f"{path} is already imported as {name} ({folder}): nothing to do")
            return load_image(image_dir / folder, name)
        partial = partial_dir(image_dir, folder)
        if partial.exists():
            host.run(["rm", "-rf", str(partial)])
        partial.mkdir()
        say(f"copying {path} into {image_dir / folder}")
        host.run(
            ["qemu-img", "convert", "-O", "qcow2", str(path), str(partial / DISK)], timeout=3600
        )
        copied = qemu_img_info(host, partial / DISK)
        manifest = {
            "format": MANIFEST_FORMAT,
            "name": name,
            "hash": digest,
            "kind": "imported",
            "boot": "disk",
            "source": str(path.resolve()),
            "source_sha256": digest,
            "imported_at": iso_time((clock or Clock()).now()),
            "sizes": {
                "disk_virtual_bytes": int(copied.get("virtual-size", 0)),
                "disk_file_bytes": (partial / DISK).stat().st_size,
            },
            "cmdline": None,
        }
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        image = publish(host, partial, image_dir, name, folder)
    say(f"imported {path} as image {name} ({image.directory})")
    return image


def iso_time(epoch: float) -> str:

    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).isoformat(timespec="seconds")
