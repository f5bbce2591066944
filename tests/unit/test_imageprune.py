"""`lab image prune`: old image folders go, the current ones and those a guest uses stay.

The domain XML is a real one captured from libvirt here, moved into a temporary folder; the
disks are real qcow2 files, and the backing chains are read by the real qemu-img.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from lxml import etree

from lab.core.hostexec import Host
from lab.images.image import MANIFEST
from lab.images.prune import domain_files, files_in_use, prune_images

CAPTURED = Path(__file__).parent.parent / "fixtures" / "captures_lead"
DOMAIN_XML = (CAPTURED / "libvirt-9.0-live-domain-shp1g-tcg.xml").read_text()

pytestmark = pytest.mark.skipif(shutil.which("qemu-img") is None, reason="needs qemu-img")


@dataclass
class FakeDomain:
    xml: str

    def XMLDesc(self, flags: int) -> str:
        return self.xml


@dataclass
class FakeLibvirt:
    domains: list[FakeDomain]

    def listAllDomains(self, flags: int) -> list[FakeDomain]:
        return self.domains


def image_folder(image_dir: Path, name: str) -> Path:
    folder = image_dir / name
    folder.mkdir(parents=True)
    (folder / MANIFEST).write_text(json.dumps({"name": name.split("-")[0]}))
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(folder / "base.qcow2"), "64M"],
                   check=True)  # fmt: skip
    (folder / "vmlinuz").write_bytes(b"\0" * 4096)
    (folder / "initrd.img").write_bytes(b"\0" * 4096)
    return folder


def guest_of(
    tmp_path: Path, name: str, base: Path, boot_from: Path | None, live: bool = True
) -> FakeDomain:
    """The captured domain, its disk a real linked clone of ``base``, booting ``boot_from``'s
    kernel (or, for ``None``, a kernel outside the image folders). A domain that is not
    running (``live=False``) has no ``<backingStore>`` in its XML: only the disk says."""
    disk = tmp_path / "guests" / name / "disk.qcow2"
    disk.parent.mkdir(parents=True)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(base),
                    str(disk)], check=True)  # fmt: skip
    kernel_dir = boot_from or disk.parent
    xml = (
        DOMAIN_XML.replace("/var/lib/lab/demo/vmlinuz", str(kernel_dir / "vmlinuz"))
        .replace("/var/lib/lab/demo/initrd.img", str(kernel_dir / "initrd.img"))
        .replace("/var/lib/lab/demo/shp1g.qcow2", str(disk))
        .replace("/var/lib/lab/demo/base.qcow2", str(base))
    )
    if not live:
        root = etree.fromstring(xml.encode())
        for store in root.findall("devices/disk/backingStore"):
            store.getparent().remove(store)
        xml = etree.tostring(root, encoding="unicode")
        assert str(base) not in xml
    return FakeDomain(xml)


def test_domain_files_of_a_captured_domain() -> None:
    boot, disks = domain_files(DOMAIN_XML)
    assert boot == ["/var/lib/lab/demo/vmlinuz", "/var/lib/lab/demo/initrd.img"]
    # the disk and its backing store (live XML lists it); the seed cdrom is no disk
    assert disks == ["/var/lib/lab/demo/shp1g.qcow2", "/var/lib/lab/demo/base.qcow2"]


def test_prune_keeps_named_and_used_folders_and_removes_the_rest(tmp_path: Path) -> None:
    images = tmp_path / "images"
    current = image_folder(images, "debian12-cccccccccccc")
    (images / "debian12").symlink_to(current.name)
    booted = image_folder(images, "debian12-bbbbbbbbbbbb")  # an old guest boots its kernel
    backing = image_folder(images, "debian12-aaaaaaaaaaaa")  # only a disk's backing file
    old = image_folder(images, "debian12-000000000000")
    partial = images / ".debian12-dddddddddddd.partial"
    partial.mkdir()
    (partial / "base.qcow2").write_bytes(b"\0" * 8192)
    (images / "logs").mkdir()
    libvirt = FakeLibvirt([
        guest_of(tmp_path, "old-guest", booted / "base.qcow2", booted),
        guest_of(tmp_path, "imported", backing / "base.qcow2", None, live=False),
    ])  # fmt: skip

    used = files_in_use(libvirt, Host())
    assert backing / "base.qcow2" in used and booted / "vmlinuz" in used

    gone, kept = prune_images(images, libvirt, Host(), dry_run=True)
    assert sorted(f.path.name for f in gone) == [".debian12-dddddddddddd.partial", old.name]
    assert all(f.bytes > 0 for f in gone)
    assert old.exists() and partial.exists()  # a dry run removes nothing

    gone, kept = prune_images(images, libvirt, Host())
    assert not old.exists() and not partial.exists()
    assert sorted(p.name for p in kept) == [backing.name, booted.name, current.name]
    assert all(p.exists() for p in kept) and (images / "logs").is_dir()
    assert (images / "debian12" / MANIFEST).is_file()


def test_prune_with_no_guests_keeps_only_what_a_name_points_at(tmp_path: Path) -> None:
    images = tmp_path / "images"
    current = image_folder(images, "debian12-cccccccccccc")
    (images / "debian12").symlink_to(current.name)
    imported = image_folder(images, "ubuntu-111111111111")
    (images / "ubuntu").symlink_to(imported.name)
    old = image_folder(images, "ubuntu-222222222222")
    gone, kept = prune_images(images, FakeLibvirt([]), Host())
    assert [f.path for f in gone] == [old]
    assert sorted(p.name for p in kept) == [current.name, imported.name]


def test_lab_image_list_and_prune_ask_the_app_about_lab_toml_s_image_dir(tmp_path: Path) -> None:
    from lab.app.image import images as named
    from lab.app.image import prune
    from lab.core.config import Config
    from lab.core.context import Context

    image_dir = tmp_path / "images"
    current = image_folder(image_dir, "debian12-cccccccccccc")
    (image_dir / "debian12").symlink_to(current.name)
    old = image_folder(image_dir, "debian12-000000000000")
    ctx = Context(config=Config(image_dir=str(image_dir)), connect=lambda uri: FakeLibvirt([]))
    assert [(i.name, i.directory) for i in named(ctx)] == [("debian12", current)]
    pruned = prune(ctx, dry_run=True)
    assert [f.path for f in pruned.gone] == [old] and pruned.kept == [current]
    assert old.exists()
    assert [f.path for f in prune(ctx).gone] == [old] and not old.exists()
