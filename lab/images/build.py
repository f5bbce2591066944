"""Building a base image from a recipe folder (``images/NAME/recipe.toml`` + ``files/``).

No downloads beyond Debian's archive and no loop mounts: ``mmdebstrap`` installs the
packages into a directory, ``mkfs.ext4 -d`` turns that directory into a file system on a
sparse raw file, ``qemu-img convert`` makes it a qcow2, and the kernel and initrd are
copied out for direct kernel boot. The result is cached by a hash of the recipe folder
and of :data:`BUILDER_VERSION`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.core.clock import Clock
from lab.core.errors import ConfigError, HostCommandError
from lab.core.hostexec import Host
from lab.core.units import parse_size_kib
from lab.images.image import (
    DISK,
    INITRD,
    KERNEL,
    MANIFEST,
    MANIFEST_FORMAT,
    BaseImage,
    ImageError,
    Log,
    image_dir_lock,
    iso_time,
    load_image,
    partial_dir,
    point_name_at,
    publish,
)

# Part of every recipe hash: bump it when a change here changes what an image contains.
BUILDER_VERSION = "1"

RECIPE_FILE = "recipe.toml"
FILES_DIR = "files"
MIB = 1024**2
# Free space on top of the installed system, and the granularity of disk sizes.
DISK_MARGIN_BYTES = 512 * MIB
DISK_ALIGN_BYTES = 64 * MIB

_RECIPE_KEYS = {
    "name": str,
    "description": str,
    "suite": str,
    "variant": str,
    "mirrors": list,
    "packages": list,
    "customize": list,
    "disk_size": str,
    "cmdline": str,
    "trim": list,
}
_REQUIRED = ("name", "suite", "packages")


@dataclass(frozen=True)
class Trim:
    """One thing a lean guest leaves out, with the reason; ``run`` is a customize hook."""

    why: str
    run: str = ""


@dataclass(frozen=True)
class Recipe:
    """What ``recipe.toml`` declares; ``files/`` is copied over the root file system."""

    directory: Path
    name: str
    suite: str
    mirrors: tuple[str, ...]
    packages: tuple[str, ...]
    customize: tuple[str, ...] = ()
    variant: str = "apt"
    disk_bytes: int = 2 * 1024 * MIB
    cmdline: str = "root=/dev/vda rw console=ttyS0"
    description: str = ""
    trims: tuple[Trim, ...] = ()

    @property
    def files(self) -> list[Path]:
        """Files to place in the root file system, relative to ``files/``."""
        root = self.directory / FILES_DIR
        if not root.is_dir():
            return []
        return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())


def load_recipe(recipe_dir: Path) -> Recipe:
    path = Path(recipe_dir) / RECIPE_FILE
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"no recipe at {path}", hint="Recipes are folders images/NAME with a recipe.toml"
        ) from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML ({err})") from None
    for key, value in data.items():
        if key not in _RECIPE_KEYS:
            raise ConfigError(
                f"{path}: unknown key {key!r}",
                hint=f"Known keys: {', '.join(sorted(_RECIPE_KEYS))}",
            )
        expected = _RECIPE_KEYS[key]
        if not isinstance(value, expected):
            raise ConfigError(f"{path}: key {key!r} must be a {expected.__name__}")
        if key == "trim":
            continue
        if expected is list and not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{path}: key {key!r} must be a list of strings")
    missing = [key for key in _REQUIRED if not data.get(key)]
    if missing:
        raise ConfigError(f"{path}: missing {', '.join(missing)}")
    if data["name"] != Path(recipe_dir).name:
        raise ConfigError(
            f"{path} names itself {data['name']!r}",
            hint=f"Name the folder {data['name']} or the recipe {Path(recipe_dir).name!r}",
        )
    return Recipe(
        directory=Path(recipe_dir),
        name=data["name"],
        suite=data["suite"],
        mirrors=tuple(data.get("mirrors", ())),
        packages=tuple(data["packages"]),
        customize=tuple(data.get("customize", ())),
        variant=data.get("variant", "apt"),
        disk_bytes=parse_size_kib(data.get("disk_size", "2G")) * 1024,
        cmdline=data.get("cmdline", Recipe.cmdline),
        description=data.get("description", ""),
        trims=_trims(path, data.get("trim", [])),
    )


def _trims(path: Path, entries: list[object]) -> tuple[Trim, ...]:
    """``[[trim]]`` tables: a ``why`` (required) and an optional ``run`` hook."""
    trims = []
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("why"), str):
            raise ConfigError(f'{path}: [[trim]] number {number} needs a why = "..." string')
        unknown = sorted(set(entry) - {"why", "run"})
        if unknown or not isinstance(entry.get("run", ""), str):
            raise ConfigError(
                f"{path}: [[trim]] number {number}: only string keys why and run are known"
            )
        trims.append(Trim(why=entry["why"], run=entry.get("run", "")))
    return tuple(trims)


def recipe_hash(recipe_dir: Path, builder_version: str = BUILDER_VERSION) -> str:
    """sha256 over every file of the recipe folder (sorted paths and contents) + builder."""
    root = Path(recipe_dir)
    digest = hashlib.sha256(f"lab-image-builder {builder_version}\0".encode())
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root)
        if "__pycache__" in relative.parts:
            continue
        digest.update(str(relative).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def parse_dpkg_status(text: str) -> dict[str, str]:
    """Installed package -> version, from ``/var/lib/dpkg/status``."""
    packages: dict[str, str] = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line[:1].isspace() or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key] = value.strip()
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            packages[fields["Package"]] = fields.get("Version", "")
    return dict(sorted(packages.items()))


def disk_size_bytes(rootfs_bytes: int, minimum_bytes: int) -> int:
    """Room for the root file system, ext4's own overhead and some free space."""
    wanted = max(minimum_bytes, math.ceil(rootfs_bytes * 1.15) + DISK_MARGIN_BYTES)
    return math.ceil(wanted / DISK_ALIGN_BYTES) * DISK_ALIGN_BYTES


def tree_bytes(root: Path) -> int:
    """Bytes the files under ``root`` occupy (like ``du -s``), symlinks not followed."""
    total = 0
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except FileNotFoundError:
                continue
    return total


def mmdebstrap_argv(recipe: Recipe, rootfs: Path, logfile: Path) -> list[str]:
    argv = [
        "mmdebstrap",
        f"--variant={recipe.variant}",
        "--mode=root",
        "--format=directory",
        f"--logfile={logfile}",
        f"--include={','.join(recipe.packages)}",
    ]
    files_root = (recipe.directory / FILES_DIR).resolve()
    for relative in recipe.files:
        parent = "/" + str(relative.parent) if str(relative.parent) != "." else "/"
        argv.append(f'--customize-hook=mkdir -p "$1{parent}"')
        # upload: the file lands root-owned, whoever owns the checkout.
        argv.append(f"--customize-hook=upload {files_root / relative} /{relative}")
    argv.extend(f"--customize-hook={command}" for command in recipe.customize)
    argv.extend(f"--customize-hook={trim.run}" for trim in recipe.trims if trim.run)
    argv.extend([recipe.suite, str(rootfs), *(recipe.mirrors or host_apt_sources())])
    return argv


def host_apt_sources(root: Path = Path("/")) -> list[str]:
    """The host's own apt source files, which mmdebstrap accepts in place of mirror lines.

    A recipe without ``mirrors`` builds from whatever archive the host itself uses, so
    the lab names no mirror of its own and follows the host's proxy or local mirror.
    """
    etc = root / "etc/apt"
    files = sorted((etc / "sources.list.d").glob("*.sources"))
    files += sorted((etc / "sources.list.d").glob("*.list"))
    if (etc / "sources.list").is_file() and (etc / "sources.list").read_text().strip():
        files.append(etc / "sources.list")
    return [str(f) for f in files]


def find_kernel(rootfs: Path) -> tuple[Path, Path, str]:
    """The one kernel installed in ``rootfs/boot``, its initrd and its version."""
    kernels = sorted((rootfs / "boot").glob("vmlinuz-*"))
    if len(kernels) != 1:
        raise ImageError(
            f"expected one kernel in {rootfs / 'boot'}, found {len(kernels)}",
            hint="List exactly one linux-image-* package in the recipe",
        )
    version = kernels[0].name.removeprefix("vmlinuz-")
    initrd = rootfs / "boot" / f"initrd.img-{version}"
    if not initrd.is_file():
        raise ImageError(
            f"kernel {version} has no initrd in {rootfs / 'boot'}",
            hint="Keep initramfs-tools in the image (a dependency of the kernel)",
        )
    return kernels[0], initrd, version


class ImageBuilder:
    """One build of one recipe into one image directory."""

    def __init__(
        self,
        recipe_dir: Path,
        image_dir: Path,
        host: Host,
        log: Log | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.recipe = load_recipe(recipe_dir)
        self.image_dir = image_dir
        self.host = host
        self.say: Log = log or (lambda _message: None)
        self.clock = clock or Clock()
        self.hash = recipe_hash(recipe_dir)
        self.folder = f"{self.recipe.name}-{self.hash[:12]}"
        self.logfile = image_dir / "logs" / f"{self.folder}.log"

    def build(self, force: bool = False) -> BaseImage:
        name = self.recipe.name
        with image_dir_lock(self.image_dir):
            final = self.image_dir / self.folder
            if (final / MANIFEST).is_file() and not force:
                point_name_at(self.image_dir, name, self.folder)
                self.say(f"image {name} is up to date ({self.folder}): nothing to build")
                return load_image(final, name)
            partial = partial_dir(self.image_dir, self.folder)
            if partial.exists():  # left by a killed build; the lock says nobody else uses it
                self.host.run(["rm", "-rf", str(partial)])
            partial.mkdir()
            self.logfile.parent.mkdir(exist_ok=True)
            try:
                manifest = self._build_into(partial)
            except BaseException:
                self.host.run(["rm", "-rf", str(partial)], check=False)
                raise
            (partial / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
            image = publish(self.host, partial, self.image_dir, name, self.folder)
        self.say(f"built image {name} in {manifest['build_seconds']:.0f} s: {image.directory}")
        return image

    def _build_into(self, out: Path) -> dict[str, Any]:
        recipe = self.recipe
        started = self.clock.monotonic()
        rootfs = out / "rootfs"
        raw = out / "disk.raw"
        self.say(
            f"[1/4] installing {len(recipe.packages)} packages and their dependencies"
            f" from Debian {recipe.suite} with mmdebstrap (log: {self.logfile})"
        )
        self._run(mmdebstrap_argv(recipe, rootfs, self.logfile), "mmdebstrap", timeout=3600)
        kernel, initrd, kernel_version = find_kernel(rootfs)
        packages = parse_dpkg_status((rootfs / "var/lib/dpkg/status").read_text())
        rootfs_bytes = tree_bytes(rootfs)
        size = disk_size_bytes(rootfs_bytes, recipe.disk_bytes)

        self.say(
            f"[2/4] making a {size // MIB} MiB ext4 file system from the root"
            f" ({rootfs_bytes // MIB} MiB)"
        )
        self._run(["truncate", "-s", str(size), str(raw)], "truncate")
        self._run(
            ["mkfs.ext4", "-q", "-F", "-L", "root", "-m", "1", "-d", str(rootfs), str(raw)],
            "mkfs.ext4",
            timeout=1800,
        )

        self.say("[3/4] converting it to qcow2")
        self._run(
            ["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(out / DISK)],
            "qemu-img",
            timeout=1800,
        )
        self._run(["cp", str(kernel), str(out / KERNEL)], "cp")
        self._run(["cp", str(initrd), str(out / INITRD)], "cp")

        self.say("[4/4] writing the manifest and cleaning up")
        self._run(["rm", "-rf", str(rootfs), str(raw)], "rm")
        self._run(["cp", str(self.logfile), str(out / "build.log")], "cp")
        return {
            "format": MANIFEST_FORMAT,
            "name": recipe.name,
            "description": recipe.description,
            "kind": "built",
            "hash": self.hash,
            "builder_version": BUILDER_VERSION,
            "built_at": iso_time(self.clock.now()),
            "build_seconds": round(self.clock.monotonic() - started, 1),
            "suite": recipe.suite,
            "mirrors": list(recipe.mirrors) or [Path(f).read_text() for f in host_apt_sources()],
            "requested_packages": list(recipe.packages),
            "packages": packages,
            "kernel_version": kernel_version,
            "boot": "kernel",
            "cmdline": recipe.cmdline,
            "sizes": {
                "rootfs_bytes": rootfs_bytes,
                "disk_virtual_bytes": size,
                "disk_file_bytes": (out / DISK).stat().st_size,
                "kernel_bytes": (out / KERNEL).stat().st_size,
                "initrd_bytes": (out / INITRD).stat().st_size,
            },
            "files": [f"/{p}" for p in recipe.files],
            "customize": list(recipe.customize),
            "trims": [
                {"why": "apt package lists and .deb cache removed", "run": "mmdebstrap cleanup"},
                *({"why": t.why, "run": t.run} for t in recipe.trims),
            ],
        }

    def _run(self, argv: list[str], what: str, timeout: float = 600) -> None:
        try:
            # input="": mmdebstrap reads sources from stdin when it is not a terminal.
            self.host.run(argv, input="", timeout=timeout)
        except HostCommandError as err:
            raise ImageError(
                f"building image {self.recipe.name}: {what} failed ({err.message})",
                hint=f"Full log: {self.logfile}"
                if what == "mmdebstrap"
                else f"Command was: {' '.join(argv)}",
            ) from None


def build_image(
    recipe_dir: Path,
    image_dir: Path,
    host: Host,
    log: Log | None = None,
    *,
    force: bool = False,
    clock: Clock | None = None,
) -> BaseImage:
    """Build (or find in the cache) the image described by ``recipe_dir``."""
    return ImageBuilder(Path(recipe_dir), Path(image_dir), host, log, clock).build(force=force)
