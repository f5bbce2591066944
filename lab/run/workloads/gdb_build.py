"""gdb-build: ``make -jN`` of GDB on NFS, cleaned (untimed) before each iteration.

As in the study: the source tarball (``apt-get source --download-only gdb`` gives
``gdb_13.1.orig.tar.xz``) is unpacked once into the host's NFS export; each guest mounts the
export, configures its own build tree once (untimed) and then times ``make -jN TARGET``.
``target=all-libdecnumber`` builds one small directory (its configure and a dozen
files), for short runs.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from lab.core.errors import UsageError
from lab.core.hostexec import Host
from lab.inguest.spec import Spec
from lab.run.sources import EVERY_GUEST, tarball_revision
from lab.run.workload import GuestInfo, Param, Workload
from lab.run.workloads._build import NfsBuild, build_dir, setup_argv, source_dir

ARCHIVE_SUFFIXES = (".orig.tar.xz", ".orig.tar.gz", ".tar.xz", ".tar.gz", ".tar.bz2", ".tgz")
MARKER = ".lab-unpacked"
SOURCE_HINT = (
    "Pass --param source=PATH to a GDB source tarball; with a deb-src entry for bookworm,"
    " `apt-get source --download-only gdb` gives gdb_13.1.orig.tar.xz"
)


def tree_name(source: str | Path) -> str:
    """``gdb_13.1.orig.tar.xz`` -> ``gdb_13.1``: the tree's directory in the export."""
    name = Path(source).name
    for suffix in ARCHIVE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    raise UsageError(f"{source} is not a .tar.xz, .tar.gz or .tar.bz2 archive", hint=SOURCE_HINT)


def unpack_source(host: Host, source: str | Path, export_dir: Path) -> Path:
    """Unpack ``source`` once into ``export_dir/src/<tree>``; return that directory."""
    if "://" in str(source):
        raise UsageError(f"{source} is a URL", hint="Download it on the host first. " + SOURCE_HINT)
    dest = export_dir / "src" / tree_name(source)
    if host.exists(dest / MARKER):
        return dest
    if not host.exists(source):
        raise UsageError(f"no GDB source archive at {source}", hint=SOURCE_HINT)
    host.run(["rm", "-rf", str(dest)])  # what an interrupted unpack left
    host.run(["mkdir", "-p", str(dest)])
    host.run(["tar", "-xf", str(source), "-C", str(dest), "--strip-components=1"],
             hint=f"Check that {source} is a complete tarball")  # fmt: skip
    if not host.exists(dest / "configure"):
        raise UsageError(f"{source} has no configure script at its top", hint=SOURCE_HINT)
    host.write_text(dest / MARKER, f"{source}\n")
    return dest


class GdbBuild(NfsBuild):
    name = "gdb-build"
    description = "make -jN of GDB in the guest's own build tree on NFS (wall time)"
    parameters = MappingProxyType(
        {
            "source": Param(None, "path on the host of a GDB source tarball (required)", str),
            "target": Param("all", "what make builds, e.g. all-libdecnumber for a short run", str),
            "jobs": Param(None, "make -j (default: the guest's vCPUs)", int),
            "configure_args": Param("", "extra arguments to configure, shell-quoted", str),
        }
    )

    def _source(self, params: Mapping[str, object]) -> tuple[dict[str, Any], str]:
        p = self.resolve(params)
        if not p["source"]:
            raise UsageError("gdb-build needs its source", hint=SOURCE_HINT)
        return p, str(p["source"])

    def host_prepare(self, params: Mapping[str, object], host: Host, export_dir: Path) -> None:
        unpack_source(host, self._source(params)[1], export_dir)

    def source_versions(
        self, params: Mapping[str, object], host: Host, export_dir: Path
    ) -> dict[str, dict[str, str]]:
        """The tarball every guest builds: its file name and SHA-256."""
        return {EVERY_GUEST: tarball_revision(host, self._source(params)[1])}

    def spec(self, params: Mapping[str, object], guest: GuestInfo) -> Spec:
        p, source = self._source(params)
        try:
            configure_args = shlex.split(str(p["configure_args"]))
        except ValueError as err:
            raise UsageError(f"gdb-build: configure_args: {err}") from None
        tree = tree_name(source)
        build = build_dir(guest, tree)
        if configure_args:  # another configuration, another build tree
            digest = hashlib.sha256(shlex.join(configure_args).encode()).hexdigest()[:8]
            build = f"{build}-{digest}"
        configure = [f"{source_dir(tree)}/configure", *configure_args]
        return self._spec(
            guest,
            ["make", f"-j{p['jobs'] or guest.vcpus}", str(p["target"])],
            clean_argv=["make", "clean"],
            setup_argv=setup_argv(guest, build, configure),
            cwd=build,
        )


WORKLOAD: Workload = GdbBuild()
