"""Guest files on another host as libvirt storage volumes, over the libvirt connection.

The base image goes to the host once: its disk, kernel and initrd are uploaded as volumes
of the ``lab-images`` pool (``<state_dir>/images`` there), named after the image folder,
whose name holds the recipe hash. A ``.complete`` volume is made last, so an upload cut
short is found and made again. Each guest gets a pool of its own, ``<state_dir>/guests/
NAME`` there (the same paths as on this machine): a qcow2 volume backed by the base
(a linked clone made by libvirt) and the uploaded seed; QEMU writes the console log beside.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

import libvirt
from lxml import etree

from lab.core.context import Context
from lab.core.errors import LabError
from lab.domainxml.boot import KernelBoot
from lab.guests.files import PlacedImage, tail_lines
from lab.guests.seed import SeedData, write_seed_iso

if TYPE_CHECKING:
    from lab.guests.twins import Guest
    from lab.images.image import BaseImage

IMAGE_POOL = "lab-images"
CHUNK = 4 * 1024 * 1024


class PoolError(LabError):
    """A storage pool or volume on a host could not be made, filled or removed."""

    exit_code = 3


def pool_xml(name: str, path: str) -> str:
    pool = etree.Element("pool", type="dir")
    etree.SubElement(pool, "name").text = name
    target = etree.SubElement(pool, "target")
    etree.SubElement(target, "path").text = path
    return str(etree.tostring(pool, encoding="unicode"))


def volume_xml(
    name: str, capacity: int, fmt: str, backing: str | None = None, mode: str = "0644"
) -> str:
    volume = etree.Element("volume")
    etree.SubElement(volume, "name").text = name
    etree.SubElement(volume, "capacity", unit="bytes").text = str(capacity)
    target = etree.SubElement(volume, "target")
    etree.SubElement(target, "format", type=fmt)
    permissions = etree.SubElement(target, "permissions")
    etree.SubElement(permissions, "mode").text = mode
    if backing is not None:
        store = etree.SubElement(volume, "backingStore")
        etree.SubElement(store, "path").text = backing
        etree.SubElement(store, "format", type="qcow2")
    return str(etree.tostring(volume, encoding="unicode"))


class UploadProgress:
    """Bytes sent, told as "uploading image 40 % of 812 MiB" each time another tenth is done
    (so a log gets ten lines, not one per chunk)."""

    def __init__(self, total: int, report: Callable[[str], None], steps: int = 10) -> None:
        self.total = max(total, 1)
        self.report = report
        self.steps = steps
        self.done = 0
        self.told = 0  # the start is told by the note that names the image

    def sent(self, nbytes: int) -> None:
        self.done += nbytes
        step = min(self.done * self.steps // self.total, self.steps)
        if step > self.told:
            self.told = step
            percent = 100 * step // self.steps
            self.report(f"uploading image {percent} % of {self.total / 2**20:.0f} MiB")


class PoolFiles:
    def __init__(self, ctx: Context, note: Callable[[str], None] | None = None) -> None:
        self.ctx = ctx
        self.note = note or ctx.note
        self.state_dir = PurePosixPath(ctx.config.state_dir)

    @property
    def host_label(self) -> str:
        return getattr(self.ctx.host, "name", self.ctx.config.libvirt_uri)

    def _pool(self, name: str, path: str) -> Any:
        """The running pool ``name`` at ``path``, defined, built and started if need be."""

        conn = self.ctx.libvirt
        try:
            pool = conn.storagePoolLookupByName(name)
        except libvirt.libvirtError:
            try:
                pool = conn.storagePoolDefineXML(pool_xml(name, path), 0)
                pool.build(0)
            except libvirt.libvirtError as err:
                raise PoolError(
                    f"cannot make storage pool {name} at {path} on {self.host_label}:"
                    f" {err.get_error_message()}",
                    hint="Check the host's libvirt (virsh pool-list --all) and free disk space",
                ) from None
        if not pool.isActive():
            pool.create(0)
        pool.setAutostart(1)
        pool.refresh(0)
        return pool

    def _upload(
        self,
        pool: Any,
        name: str,
        local: Path,
        fmt: str,
        mode: str = "0644",
        sent: Callable[[int], None] = lambda _n: None,
    ) -> Any:
        size = local.stat().st_size
        volume = pool.createXML(volume_xml(name, size, fmt, mode=mode), 0)
        stream = self.ctx.libvirt.newStream(0)
        volume.upload(stream, 0, size, 0)

        def source(_stream: Any, nbytes: int, handle: BinaryIO) -> bytes:
            data = handle.read(min(nbytes, CHUNK))
            sent(len(data))
            return data

        with open(local, "rb") as handle:
            stream.sendAll(source, handle)
        stream.finish()
        return volume

    def place_image(
        self, image: BaseImage, progress: Callable[[str], None] = lambda _text: None
    ) -> PlacedImage:

        pool = self._pool(IMAGE_POOL, str(self.state_dir / "images"))
        folder = image.directory.name  # holds the recipe hash
        files = {f"{folder}.qcow2": (image.disk, "qcow2")}
        if image.kernel is not None:
            files[f"{folder}.vmlinuz"] = (image.kernel, "raw")
            files[f"{folder}.initrd"] = (Path(image.initrd or ""), "raw")
        names = set(pool.listVolumes())
        if f"{folder}.complete" not in names:
            total = sum(path.stat().st_size for path, _ in files.values())
            self.note(f"{self.host_label}: uploading image {folder} ({total / 2**20:.0f} MiB)")
            counter = UploadProgress(total, progress)
            for name, (path, fmt) in files.items():
                if name in names:  # an upload cut short
                    pool.storageVolLookupByName(name).delete(0)
                try:
                    self._upload(pool, name, path, fmt, sent=counter.sent)
                except libvirt.libvirtError as err:
                    raise PoolError(
                        f"uploading {path} to {self.host_label} failed: {err.get_error_message()}",
                        hint="Free space on the host, then run `lab up` again (the upload"
                        " starts over)",
                    ) from None
            pool.createXML(volume_xml(f"{folder}.complete", 0, "raw"), 0)
        paths = {name: pool.storageVolLookupByName(name).path() for name in files}
        disk = paths[f"{folder}.qcow2"]
        boot = image.boot
        if isinstance(boot, KernelBoot):
            boot = KernelBoot(paths[f"{folder}.vmlinuz"], paths[f"{folder}.initrd"], boot.cmdline)
        return PlacedImage(boot, disk)

    def make(self, guest: Guest, base: PlacedImage, seed: SeedData) -> None:
        pool = self._pool(guest.name, str(guest.directory))
        virtual = self._virtual_size(base.disk)
        disk = PurePosixPath(guest.spec.disk.path).name
        pool.createXML(volume_xml(disk, virtual, "qcow2", backing=base.disk, mode="0600"), 0)
        assert guest.spec.seed is not None
        with tempfile.TemporaryDirectory(prefix="lab-seed-") as tmp:
            local = Path(tmp) / "seed.iso"
            write_seed_iso(seed, local)
            self._upload(pool, PurePosixPath(guest.spec.seed.path).name, local, "raw", "0600")

    def _virtual_size(self, disk: str) -> int:
        volume = self.ctx.libvirt.storageVolLookupByPath(disk)
        return int(volume.info()[1])  # [type, capacity, allocation]

    def remove(self, name: str, directory: str) -> None:
        """Every volume of the guest's pool, then the pool and its folder."""

        try:
            pool = self.ctx.libvirt.storagePoolLookupByName(name)
        except libvirt.libvirtError:
            return
        if not pool.isActive():
            pool.create(0)
        pool.refresh(0)  # the console log QEMU wrote is a volume too now
        for volume in pool.listAllVolumes(0):
            volume.delete(0)
        pool.destroy()
        pool.delete(0)  # the (now empty) folder
        pool.undefine()

    def console_tail(self, directory: str, lines: int = 15) -> str:
        path = f"{directory}/console.log"
        try:
            return tail_lines(self.ctx.host.read_text(path), lines)
        except (OSError, LabError):
            return f"(no console log at {self.host_label}:{path})"
