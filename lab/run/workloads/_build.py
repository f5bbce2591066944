"""What the build workloads share: sources in the host's NFS export, a build tree per guest.

The host exports a directory (``export_dir``) that each guest mounts at :data:`NFS_MOUNT`.
Sources are unpacked once into ``export_dir/src/<tree>``; guest ``g`` builds in
``export_dir/build/<g>/<tree>``, so twins never share object files, as in the study, where
both source and build trees lived on NFS served by the virtualization host.
"""

from __future__ import annotations

import shlex

from lab.run.workload import GuestInfo, Metric, Workload

NFS_MOUNT = "/mnt/lab-nfs"
NFS_OPTIONS = "vers=4.1"


def source_dir(tree: str) -> str:
    """Where the guest sees the source tree ``tree``."""
    return f"{NFS_MOUNT}/src/{tree}"


def build_dir(guest: GuestInfo, tree: str) -> str:
    """Where ``guest`` builds ``tree``: its own directory on the export."""
    return f"{NFS_MOUNT}/build/{guest.name}/{tree}"


def setup_argv(
    guest: GuestInfo, build: str, configure: list[str] | None = None, make: bool = True
) -> list[str]:
    """Untimed, once per runner start: mount the export (again after a reboot), make the
    build tree (``make``; else require it: the host made it), and configure it unless an
    earlier start already did (config.status)."""
    mount = NFS_MOUNT
    lines = [
        "set -e",
        'sudo=; [ "$(id -u)" -eq 0 ] || sudo="sudo -n"',
        f"$sudo mkdir -p {mount}",
        f"mountpoint -q {mount} || $sudo mount -t nfs4 -o {NFS_OPTIONS}"
        f" {shlex.quote(guest.nfs_export)} {mount}",
        f"mkdir -p {shlex.quote(build)}" if make else
        f"[ -d {shlex.quote(build)} ] || {{ echo 'lab: {build} is not on the NFS export: the host"
        " made it, so the guest sees an older listing' >&2; exit 1; }",
    ]  # fmt: skip
    if configure:
        lines += [f"cd {shlex.quote(build)}", f"[ -f config.status ] || {shlex.join(configure)}"]
    return ["sh", "-c", "\n".join(lines)]


class NfsBuild(Workload):
    """A build timed by the runner itself: wall time, and user/sys of make and its children."""

    uses_nfs = True
    metrics = (
        Metric("wall_s", "s", "lower"),
        Metric("user_s", "s", "lower"),
        Metric("sys_s", "s", "lower"),
    )
