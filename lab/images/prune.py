"""Old base images: which image folders a defined guest still needs, and removing the rest.

Every recipe change publishes a new folder (``<name>-<hash12>``) and moves the name's symlink;
the old folder stays, since a guest may still be a linked clone of it. A folder may go when
no name points at it and no libvirt domain uses a file in it: a kernel or initrd it boots,
or a disk whose backing chain reaches it (read with ``qemu-img info -U``, which works on
the disks of running guests too). Unfinished ``.partial`` folders of killed builds go too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

from lab.core.hostexec import Host
from lab.images.build import tree_bytes
from lab.images.image import MANIFEST, image_dir_lock


@dataclass(frozen=True)
class ImageFolder:
    path: Path
    bytes: int  # what removing it frees (allocated blocks, so sparse disks count as they are)


def domain_files(xml: str) -> tuple[list[str], list[str]]:
    """(files a domain boots from, disk files) named in its XML."""
    root = etree.fromstring(xml.encode())
    boot = [(e.text or "").strip() for e in root.iterfind("os/kernel")]
    boot += [(e.text or "").strip() for e in root.iterfind("os/initrd")]
    disks = [
        source.get("file", "")
        for disk in root.iterfind("devices/disk[@device='disk']")
        for source in disk.iter("source")
    ]
    return [p for p in boot if p], [p for p in disks if p]


def backing_chain(host: Host, disk: str) -> list[str]:
    """Every file of ``disk``'s backing chain, itself first."""
    result = host.run(
        ["qemu-img", "info", "-U", "--backing-chain", "--output=json", disk], check=False
    )
    if not result.ok:  # a missing or unreadable disk holds nothing of ours
        return [disk]
    try:
        chain: Any = json.loads(result.stdout)
    except ValueError:
        return [disk]
    layers = chain if isinstance(chain, list) else [chain]
    return [disk] + [str(layer["filename"]) for layer in layers if "filename" in layer]


def files_in_use(libvirt: Any, host: Host) -> set[Path]:
    """Every file a defined libvirt domain (running or not) boots from or reads as a disk."""
    used: set[Path] = set()
    for domain in libvirt.listAllDomains(0):
        boot, disks = domain_files(domain.XMLDesc(0))
        used.update(Path(p).resolve() for p in boot)
        for disk in disks:
            used.update(Path(p).resolve() for p in backing_chain(host, disk))
    return used


def prunable(image_dir: Path, in_use: set[Path]) -> tuple[list[ImageFolder], list[Path]]:
    """(folders that may go, folders kept) in ``image_dir``."""
    entries = sorted(image_dir.iterdir()) if image_dir.is_dir() else []
    named = {entry.resolve() for entry in entries if entry.is_symlink()}
    gone, kept = [], []
    for entry in entries:
        if entry.is_symlink() or not entry.is_dir():
            continue
        partial = entry.name.startswith(".") and entry.name.endswith(".partial")
        if not partial and not (entry / MANIFEST).is_file():
            continue  # not an image folder (logs, or something the lab did not make)
        folder = entry.resolve()
        used = folder in named or any(folder in path.parents for path in in_use)
        if used and not partial:
            kept.append(entry)
        else:
            gone.append(ImageFolder(entry, tree_bytes(entry)))
    return gone, kept


def prune_images(
    image_dir: Path, libvirt: Any, host: Host, dry_run: bool = False
) -> tuple[list[ImageFolder], list[Path]]:
    """Remove the image folders nothing uses; returns (removed or to remove, kept)."""
    with image_dir_lock(image_dir):  # no build or import publishes meanwhile
        gone, kept = prunable(image_dir, files_in_use(libvirt, host))
        if not dry_run:
            for folder in gone:
                host.run(["rm", "-rf", "--one-file-system", str(folder.path)])
    return gone, kept
