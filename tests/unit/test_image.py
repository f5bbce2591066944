"""Image recipes, the content-hash cache, atomic publishing, import, and the lead's API."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from lab.core.clock import ManualClock
from lab.core.errors import ConfigError, UsageError
from lab.core.hostexec import Host, Result
from lab.core.paths import IMAGES_DIR
from lab.domainxml.boot import DiskBoot, KernelBoot
from lab.images.build import (
    BUILDER_VERSION,
    build_image,
    disk_size_bytes,
    load_recipe,
    mmdebstrap_argv,
    parse_dpkg_status,
    recipe_hash,
)
from lab.images.image import (
    ImageError,
    ImageNotBuiltError,
    find_image,
    import_image,
    list_images,
)

MIB = 1024**2
DPKG_STATUS = """\
Package: cloud-init
Status: install ok installed
Priority: optional
Version: 22.4.2-1+deb12u4
Description: initialization system
 for infrastructure cloud instances

Package: removed-thing
Status: deinstall ok config-files
Version: 1.0

Package: sysbench
Status: install ok installed
Version: 1.0.20+ds-3+b1
"""


class ToolHost(Host):
    """Plays mmdebstrap, mkfs.ext4, qemu-img, cp and rm on the files they would touch."""

    def __init__(self, fail: str | None = None, image_format: str = "qcow2") -> None:
        self.commands: list[tuple[str, ...]] = []
        self.fail = fail
        self.image_format = image_format

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        input: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        hint: str | None = None,
    ) -> Result:
        args = tuple(str(a) for a in argv)
        self.commands.append(args)
        if args[0] == self.fail:
            from lab.core.errors import HostCommandError

            raise HostCommandError(list(args), 1, "E: simulated failure")
        getattr(self, "_" + args[0].replace(".", "_").replace("-", "_"), lambda a: None)(args)
        out = ""
        if args[:2] == ("qemu-img", "info"):
            out = json.dumps({"format": self.image_format, "virtual-size": 2 * 1024 * MIB})
        return Result(args, 0, out, "")

    def _mmdebstrap(self, args: tuple[str, ...]) -> None:
        logfile = next(a.split("=", 1)[1] for a in args if a.startswith("--logfile="))
        Path(logfile).write_text("I: success\n")
        rootfs = Path(args[args.index("bookworm") + 1])
        (rootfs / "boot").mkdir(parents=True)
        (rootfs / "boot/vmlinuz-6.1.0-99-cloud-amd64").write_bytes(b"kernel")
        (rootfs / "boot/initrd.img-6.1.0-99-cloud-amd64").write_bytes(b"initrd")
        (rootfs / "var/lib/dpkg").mkdir(parents=True)
        (rootfs / "var/lib/dpkg/status").write_text(DPKG_STATUS)

    def _truncate(self, args: tuple[str, ...]) -> None:
        Path(args[-1]).write_bytes(b"")

    def _qemu_img(self, args: tuple[str, ...]) -> None:
        if args[1] == "convert":
            Path(args[-1]).write_bytes(b"QFI\xfb" + b"\0" * 60)

    def _cp(self, args: tuple[str, ...]) -> None:
        shutil.copy(args[-2], args[-1])

    def _rm(self, args: tuple[str, ...]) -> None:
        for path in args[2:]:
            p = Path(path)
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    directory = tmp_path / "recipes" / "mini"
    (directory / "files/etc/network").mkdir(parents=True)
    (directory / "files/etc/network/interfaces").write_text("auto lo\n")
    (directory / "recipe.toml").write_text(
        'name = "mini"\nsuite = "bookworm"\n'
        'mirrors = ["deb http://mirror.invalid/debian bookworm main"]\n'
        'packages = ["linux-image-cloud-amd64", "cloud-init"]\n'
        "customize = ['rm -f \"$1\"/etc/ssh/ssh_host_*']\n"
    )
    return directory


def test_the_debian12_recipe_has_what_the_lab_needs() -> None:
    recipe = load_recipe(IMAGES_DIR / "debian12")
    assert recipe.name == "debian12"
    assert recipe.suite == "bookworm"
    for package in (
        "cloud-init",
        "openssh-server",
        "sysbench",
        "iperf3",
        "nfs-common",
        "gcc",
        "g++",
        "make",
        "libgmp-dev",
        "libmpfr-dev",
        "e2fsprogs",
        "linux-image-cloud-amd64",
        "python3",
    ):
        assert package in recipe.packages
    assert recipe.cmdline == "root=/dev/vda rw console=ttyS0 quiet"
    assert recipe.disk_bytes == 2048 * MIB
    files = {str(p) for p in recipe.files}
    network = "etc/systemd/network/20-lab.network"
    assert {"etc/cloud/cloud.cfg.d/90_lab.cfg", network, "etc/fstab"} <= files
    cloud = (IMAGES_DIR / "debian12/files/etc/cloud/cloud.cfg.d/90_lab.cfg").read_text()
    assert "datasource_list: [ NoCloud, None ]" in cloud
    assert "DHCP=ipv4" in (IMAGES_DIR / "debian12/files" / network).read_text()
    sshd = (IMAGES_DIR / "debian12/files/etc/ssh/sshd_config.d/lab.conf").read_text()
    assert "PasswordAuthentication no" in sshd


def test_every_cloud_init_module_the_seed_needs_stays_in_the_lean_image() -> None:
    """The seed's keys are handled by these modules; a trim must not drop one."""
    cloud = (IMAGES_DIR / "debian12/files/etc/cloud/cloud.cfg.d/90_lab.cfg").read_text()
    modules = cloud.split("cloud_init_modules:")[1].split("cloud_config_modules")[0]
    needed = {"users-groups": "users", "ssh": "ssh_keys", "update_etc_hosts": "hosts"}
    for module in needed:
        assert f"  - {module}\n" in modules


def test_every_trim_of_the_lean_image_says_why() -> None:
    recipe = load_recipe(IMAGES_DIR / "debian12")
    assert len(recipe.trims) >= 5
    assert all(len(trim.why) > 30 for trim in recipe.trims)
    argv = mmdebstrap_argv(recipe, Path("/r"), Path("/l"))
    for trim in recipe.trims:
        if trim.run:
            assert f"--customize-hook={trim.run}" in argv
    # The initramfs is rebuilt after its configuration files are in place.
    uploads = [i for i, a in enumerate(argv) if "initramfs-tools/modules" in a]
    rebuild = argv.index('--customize-hook=chroot "$1" update-initramfs -u -k all')
    assert uploads and max(uploads) < rebuild


def test_a_trim_without_a_reason_is_refused(recipe: Path) -> None:
    path = recipe / "recipe.toml"
    path.write_text(path.read_text() + "[[trim]]\nrun = 'true'\n")
    with pytest.raises(ConfigError, match="needs a why"):
        load_recipe(recipe)
    path.write_text(path.read_text().replace("run = 'true'", "why = 'x'\nhow = 'y'"))
    with pytest.raises(ConfigError, match="only string keys why and run"):
        load_recipe(recipe)


def test_recipe_hash_follows_every_file_and_the_builder(recipe: Path) -> None:
    first = recipe_hash(recipe)
    assert first == recipe_hash(recipe)
    assert recipe_hash(recipe, builder_version=BUILDER_VERSION + "x") != first
    (recipe / "files/etc/network/interfaces").write_text("auto lo\n# changed\n")
    assert recipe_hash(recipe) != first


def test_recipe_hash_sees_a_renamed_file(recipe: Path) -> None:
    first = recipe_hash(recipe)
    (recipe / "files/etc/network/interfaces").rename(recipe / "files/etc/network/other")
    assert recipe_hash(recipe) != first


def test_recipe_with_an_unknown_key_is_refused(recipe: Path) -> None:
    path = recipe / "recipe.toml"
    path.write_text(path.read_text() + 'pacakges = ["x"]\n')
    with pytest.raises(ConfigError, match="unknown key 'pacakges'"):
        load_recipe(recipe)


def test_recipe_named_unlike_its_folder_is_refused(recipe: Path) -> None:
    path = recipe / "recipe.toml"
    path.write_text(path.read_text().replace('name = "mini"', 'name = "other"'))
    with pytest.raises(ConfigError, match="names itself 'other'"):
        load_recipe(recipe)


def test_dpkg_status_lists_installed_packages_only() -> None:
    assert parse_dpkg_status(DPKG_STATUS) == {
        "cloud-init": "22.4.2-1+deb12u4",
        "sysbench": "1.0.20+ds-3+b1",
    }


@pytest.mark.parametrize(
    ("rootfs", "minimum", "size"),
    [(800 * MIB, 2048 * MIB, 2048 * MIB), (2000 * MIB, 2048 * MIB, 2816 * MIB)],
)
def test_disk_size(rootfs: int, minimum: int, size: int) -> None:
    assert disk_size_bytes(rootfs, minimum) == size
    assert size % (64 * MIB) == 0


def test_mmdebstrap_argv(recipe: Path, tmp_path: Path) -> None:
    argv = mmdebstrap_argv(load_recipe(recipe), tmp_path / "rootfs", tmp_path / "log")
    assert argv[:4] == ["mmdebstrap", "--variant=apt", "--mode=root", "--format=directory"]
    assert "--include=linux-image-cloud-amd64,cloud-init" in argv
    assert f"--logfile={tmp_path / 'log'}" in argv
    upload = f"--customize-hook=upload {recipe.resolve()}/files/etc/network/interfaces"
    assert f"{upload} /etc/network/interfaces" in argv
    assert argv[-3:] == [
        "bookworm",
        str(tmp_path / "rootfs"),
        "deb http://mirror.invalid/debian bookworm main",
    ]


def test_build_publishes_atomically_and_caches(recipe: Path, tmp_path: Path) -> None:
    images = tmp_path / "images"
    host = ToolHost()
    said: list[str] = []
    image = build_image(recipe, images, host, said.append, clock=ManualClock())
    folder = f"mini-{recipe_hash(recipe)[:12]}"
    assert image.directory == images / folder
    assert (images / "mini").is_symlink() and (images / "mini").resolve() == images / folder
    assert image.disk == images / folder / "base.qcow2"
    assert image.kernel == images / folder / "vmlinuz"
    assert image.kernel.read_bytes() == b"kernel"
    assert image.initrd is not None and image.initrd.read_bytes() == b"initrd"
    assert not (images / folder / "rootfs").exists()
    assert not (images / folder / "disk.raw").exists()
    assert not list(images.glob(".*.partial"))
    manifest = json.loads((images / folder / "manifest.json").read_text())
    assert manifest["hash"] == recipe_hash(recipe)
    assert manifest["packages"]["cloud-init"] == "22.4.2-1+deb12u4"
    assert manifest["kernel_version"] == "6.1.0-99-cloud-amd64"
    assert manifest["boot"] == "kernel"
    assert manifest["sizes"]["disk_virtual_bytes"] == 2048 * MIB
    assert [c[0] for c in host.commands][:4] == ["mmdebstrap", "truncate", "mkfs.ext4", "qemu-img"]
    assert any("[1/4]" in line for line in said)

    again = ToolHost()
    said.clear()
    assert build_image(recipe, images, again, said.append) == image
    assert again.commands == []
    assert any("nothing to build" in line for line in said)


def test_a_failed_build_leaves_nothing_that_looks_complete(recipe: Path, tmp_path: Path) -> None:
    images = tmp_path / "images"
    with pytest.raises(ImageError) as err:
        build_image(recipe, images, ToolHost(fail="mkfs.ext4"))
    assert "mkfs.ext4 failed" in str(err.value)
    assert not (images / "mini").exists()
    assert not list(images.glob("mini-*"))
    assert not list(images.glob(".mini-*"))
    with pytest.raises(ImageNotBuiltError):
        find_image(images, "mini")


def test_a_failed_mmdebstrap_points_at_its_log(recipe: Path, tmp_path: Path) -> None:
    with pytest.raises(ImageError) as err:
        build_image(recipe, tmp_path / "images", ToolHost(fail="mmdebstrap"))
    assert "Full log: " in str(err.value)
    assert str(tmp_path / "images" / "logs") in str(err.value)


def test_a_stale_partial_folder_is_replaced(recipe: Path, tmp_path: Path) -> None:
    images = tmp_path / "images"
    stale = images / f".mini-{recipe_hash(recipe)[:12]}.partial"
    (stale / "rootfs").mkdir(parents=True)
    build_image(recipe, images, ToolHost())
    assert not stale.exists()
    assert find_image(images, "mini").disk.exists()


def test_find_image_of_an_unbuilt_image(tmp_path: Path) -> None:
    with pytest.raises(ImageNotBuiltError) as err:
        find_image(tmp_path, "debian12")
    assert str(err.value) == "image 'debian12' is not built. Run: lab image build"
    assert err.value.exit_code == 3


def test_find_image_of_an_unknown_name_suggests_import(tmp_path: Path) -> None:
    with pytest.raises(ImageNotBuiltError, match="lab image import PATH --name ubuntu"):
        find_image(tmp_path, "ubuntu")


def test_boot_of_built_and_imported_images(recipe: Path, tmp_path: Path) -> None:
    built = build_image(recipe, tmp_path / "images", ToolHost())
    assert built.boot == KernelBoot(
        kernel=str(built.directory / "vmlinuz"),
        initrd=str(built.directory / "initrd.img"),
        cmdline="root=/dev/vda rw console=ttyS0",
    )
    cloud = tmp_path / "cloud.qcow2"
    cloud.write_bytes(b"QFI\xfb" + b"\1" * 100)
    imported = import_image(cloud, tmp_path / "images", "cloud", ToolHost())
    assert imported.boot == DiskBoot()
    assert imported.kernel is None and imported.cmdline is None
    assert imported.manifest["kind"] == "imported"
    assert imported.disk.exists()
    assert {i.name for i in list_images(tmp_path / "images")} == {"mini", "cloud"}


def test_import_refuses_a_raw_image(tmp_path: Path) -> None:
    raw = tmp_path / "disk.img"
    raw.write_bytes(b"\0" * 512)
    with pytest.raises(UsageError, match="is a raw image, not qcow2") as err:
        import_image(raw, tmp_path / "images", "disk", ToolHost(image_format="raw"))
    assert "qemu-img convert -O qcow2" in str(err.value)


def test_import_of_the_same_file_twice_is_a_no_op(tmp_path: Path) -> None:
    cloud = tmp_path / "cloud.qcow2"
    cloud.write_bytes(b"QFI\xfb" + b"\2" * 100)
    first = import_image(cloud, tmp_path / "images", "cloud", ToolHost())
    host = ToolHost()
    assert import_image(cloud, tmp_path / "images", "cloud", host) == first
    assert [c[1] for c in host.commands] == ["info"]  # validated, not copied again


def test_recipe_without_mirrors_builds_from_the_hosts_apt_sources(tmp_path: Path) -> None:
    from lab.images.build import host_apt_sources

    (tmp_path / "etc/apt/sources.list.d").mkdir(parents=True)
    (tmp_path / "etc/apt/sources.list.d/debian.sources").write_text("Types: deb\n")
    (tmp_path / "etc/apt/sources.list").write_text("")
    assert host_apt_sources(tmp_path) == [str(tmp_path / "etc/apt/sources.list.d/debian.sources")]
    (tmp_path / "etc/apt/sources.list").write_text(
        "deb http://mirror.invalid/debian bookworm main\n"
    )
    assert host_apt_sources(tmp_path)[-1] == str(tmp_path / "etc/apt/sources.list")
