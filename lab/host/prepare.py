"""``lab host prepare`` and ``lab host release``: make the host ready, and undo exactly that.

Every step is idempotent (it looks before it changes) and records what it changed in
:class:`lab.host.changes.ChangeLog`; release walks that record backwards.
"""

from __future__ import annotations

import hashlib
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.core.errors import LabError
from lab.core.hostexec import Host
from lab.host import daemons, nfs, tune
from lab.host.changes import Change, ChangeLog
from lab.host.facts import (
    Pool,
    hugetlbfs_mounts,
    numa_nodes,
    parse_mounts,
    parse_qemu_conf_hugetlbfs,
    read_hugepage_pools,
)
from lab.host.hugepages import option_text, pool_file, reserve
from lab.host.network import ensure_network, remove_network

if TYPE_CHECKING:
    from lab.core.context import Context
    from lab.host.site import HostSite

QEMU_CONF_MARK = "# Added by `lab host prepare`; `lab host release` restores the file."


@dataclass(frozen=True)
class HostLayout:
    """Where the host keeps the files prepare reads and changes (tests point it elsewhere)."""

    root: Path = Path("/")
    sysfs: Path = Path("/sys")
    proc: Path = Path("/proc")
    dev: Path = Path("/dev")
    qemu_conf: Path = Path("/etc/libvirt/qemu.conf")

    @property
    def dev_kvm(self) -> Path:
        return self.dev / "kvm"

    def hugetlbfs_dir(self, page_kib: int) -> Path:
        return self.dev / f"hugepages{option_text(page_kib)}"

    def path(self, path: str) -> Path:
        """Where a /sys, /proc or other absolute ``path`` is in this layout."""
        for prefix, base in (("/sys/", self.sysfs), ("/proc/", self.proc)):
            if path.startswith(prefix):
                return base / path.removeprefix(prefix)
        return self.root / path.lstrip("/")


@dataclass(frozen=True)
class PrepareRequest:
    hugepages: list[tuple[int, int, int | None]] = field(default_factory=list)
    subnet: str = "198.18.0.0/24"
    nfs: bool = True
    tune: bool = False  # also write the quiet value of the knobs that make timings noisy


def prepare_host(
    ctx: Context,
    request: PrepareRequest,
    layout: HostLayout = HostLayout(),
    site: HostSite | None = None,
) -> list[Change]:
    """Make the host ready for a pair; returns the changes made by this call.

    With a remote ``site`` the same steps run on that host, over its SSH and its libvirt
    connection, and their record is kept on this machine (``site.state_dir``). Its libvirtd
    runs (the lab reached it), so no daemon is started there, and NFS is not set up: the
    workloads that need a server on the host run on this machine only.
    """
    remote = site.remote_name if site is not None else None
    if site is not None:
        ctx = site.ctx
    host = ctx.host
    state_dir = Path(ctx.config.state_dir)  # on the host being prepared
    log = ChangeLog.load(site.state_dir if site is not None else state_dir)
    systemd = daemons.has_systemd(layout.root, host)
    make_directories(host, log, [state_dir] if remote else [state_dir, Path(ctx.config.image_dir)])
    pools = site.hugepage_pools() if site is not None and remote else None
    reserve_pools(host, log, layout, request.hugepages, pools)
    mount_hugetlbfs(host, log, layout, request.hugepages)
    backup = "qemu.conf.before-lab"
    if remote:  # apart from the backup of a prepare made on that host itself, as 'local'
        backup += f"-from-{socket.gethostname()}"
    conf_changed = configure_qemu_conf(host, log, layout, state_dir / backup)
    fix_dev_kvm(host, log, layout)
    if remote is None:
        start_daemons(ctx, log, layout, systemd, restart_libvirtd=conf_changed)
    elif conf_changed:
        _restart_remote_libvirtd(ctx, remote, systemd)
    steps: list[str] = []
    info = ensure_network(ctx.libvirt, ctx.config.network, request.subnet, steps)
    if steps:
        log.add("network", name=ctx.config.network, steps=steps)
    where = f" on host {remote}" if remote else ""
    ctx.note(
        f"lab network {info.name}{where}: bridge {info.bridge}, host {info.host_ip}/{info.prefix}"
        ", isolated (no forward)"
    )
    if request.nfs and remote:
        ctx.note(f"NFS: not set up on host {remote}; workloads that need it run on local")
    elif request.nfs:
        export = _nfs(ctx, log, layout, state_dir, info.host_ip, info.subnet, systemd)
        ctx.note(
            f"NFS ({export.server}): guests mount {export.source} (export {export.export_dir})"
        )
    if request.tune:
        tune.tune_host(ctx, log, layout.path, systemd)
    for change in log.added:
        ctx.note(f"changed{where}: {change.describe()}")
    return log.added


def start_daemons(
    ctx: Context, log: ChangeLog, layout: HostLayout, systemd: bool, restart_libvirtd: bool
) -> None:
    """virtlogd and libvirtd on this machine, started when they do not run; libvirtd
    restarted when ``restart_libvirtd`` (qemu.conf changed) and it was running already."""
    for daemon in daemons.BASE_DAEMONS:
        _start(ctx, log, daemon, systemd, layout)
    started_now = {c.detail["name"] for c in log.added if c.kind == "daemon"}
    if not restart_libvirtd or daemons.LIBVIRTD.name in started_now:
        return
    ctx.note("restarting libvirtd so it reads the new hugetlbfs_mount (guests keep running)")
    pid = daemons.restart(
        ctx.host, daemons.LIBVIRTD, systemd=systemd, clock=ctx.clock, proc_root=layout.proc
    )
    ours = log.find("daemon", name=daemons.LIBVIRTD.name)
    if ours is not None and pid:  # started by an earlier prepare: follow its new pid
        ours.detail["pid"] = pid
        log.save()


def _restart_remote_libvirtd(
    ctx: Context, name: str, systemd: bool, why: str = "it reads the new hugetlbfs_mount"
) -> None:
    """Another host's libvirtd rereads qemu.conf only when restarted: through systemd there;
    without it the lab cannot tell how it was started, so it says what to run."""
    if not systemd:
        ctx.warn(
            f"host {name} has no systemd: restart its libvirtd by hand so {why} (guests keep"
            " running), e.g. `kill $(cat /run/libvirtd.pid); libvirtd -d` there"
        )
        return
    ctx.note(f"restarting libvirtd on host {name} so {why}")
    ctx.host.run(["systemctl", "restart", daemons.LIBVIRTD.unit])
    # The connection made before the restart is gone: the next use opens a new one.
    ctx.__dict__.pop("libvirt", None)


def make_directories(host: Host, log: ChangeLog, paths: list[Path]) -> None:
    for path in paths:
        if not host.is_dir(path):
            host.run(["mkdir", "-p", str(path)])
            log.add("mkdir", path=str(path))
        # QEMU runs as libvirt-qemu and must reach guest disks and base images.
        if host.file_mode(path).mode & 0o005 != 0o005:
            host.run(["chmod", "go+rx", str(path)])


def reserve_pools(
    host: Host,
    log: ChangeLog,
    layout: HostLayout,
    wanted: list[tuple[int, int, int | None]],
    pools: list[Pool] | None = None,
) -> None:
    """Reserve ``wanted`` on every NUMA node; ``pools`` are the host's as read (None: read
    them under ``layout.sysfs`` here)."""
    if pools is None:
        pools = read_hugepage_pools(layout.sysfs)
    nodes: list[int | None] = list(numa_nodes(pools)) or [None]
    for page_kib, count, node in wanted:
        for target in [node] if node is not None else nodes:
            before = reserve(host, layout.sysfs, page_kib, count, target, layout.proc)
            if before != count:
                log.add(
                    "hugepages",
                    page_kib=page_kib,
                    node=target,
                    before=before,
                    after=count,
                    path=str(pool_file(layout.sysfs, page_kib, target)),
                )


def mount_hugetlbfs(
    host: Host, log: ChangeLog, layout: HostLayout, wanted: list[tuple[int, int, int | None]]
) -> None:
    mounted = hugetlbfs_mounts(parse_mounts(host.read_text(layout.proc / "mounts")))
    for page_kib in sorted({size for size, count, _ in wanted if count > 0}):
        if mounted.get(page_kib):
            continue
        target = layout.hugetlbfs_dir(page_kib)
        if not host.is_dir(target):
            host.run(["mkdir", "-p", str(target)])
            log.add("mkdir", path=str(target))
        size = option_text(page_kib)
        host.run(["mount", "-t", "hugetlbfs", "-o", f"pagesize={size}", "none", str(target)])
        log.add("mount", target=str(target), pagesize=size)


def qemu_conf_with_mounts(text: str, mounts: list[str]) -> str:
    """``text`` with its active ``hugetlbfs_mount`` lines commented out and ours appended."""
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith("hugetlbfs_mount"):
            line = "#" + line + "  # disabled by `lab host prepare`"
        lines.append(line)
    listed = ", ".join(f'"{m}"' for m in mounts)
    return "\n".join([*lines, "", QEMU_CONF_MARK, f"hugetlbfs_mount = [{listed}]", ""])


def configure_qemu_conf(host: Host, log: ChangeLog, layout: HostLayout, backup: Path) -> bool:
    """List every hugetlbfs mount in libvirt's qemu.conf, keeping the original as ``backup``;
    True when the file changed."""
    mounted = hugetlbfs_mounts(parse_mounts(host.read_text(layout.proc / "mounts")))
    wanted = sorted({path for paths in mounted.values() for path in paths})
    if not wanted:
        return False
    text = host.read_text(layout.qemu_conf)
    current = parse_qemu_conf_hugetlbfs(text)
    if set(wanted) <= set(current):
        return False
    new = qemu_conf_with_mounts(text, sorted(set(current) | set(wanted)))
    earlier = log.find("qemu_conf", path=str(layout.qemu_conf))
    if earlier is None:  # cp -p: the copy keeps qemu.conf's mode (0600) and owner
        host.run(["cp", "-p", str(layout.qemu_conf), str(backup)])
    host.write_text(layout.qemu_conf, new)
    if earlier is not None:
        earlier.detail["written_sha256"] = _sha(new)
        log.save()
    else:
        log.add(
            "qemu_conf", path=str(layout.qemu_conf), backup=str(backup), written_sha256=_sha(new)
        )
    return True


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def fix_dev_kvm(host: Host, log: ChangeLog, layout: HostLayout) -> None:
    """QEMU (user libvirt-qemu, group kvm) must open /dev/kvm, or KVM is unusable."""
    path = layout.dev_kvm
    if not host.exists(path):
        return
    if not host.run(["getent", "group", "kvm"], check=False).ok:
        return  # no kvm group: libvirt's packages were not installed the usual way
    st = host.file_mode(path)
    if st.group == "kvm" and st.mode & 0o060 == 0o060:
        return
    host.run(["chgrp", "kvm", str(path)])
    host.run(["chmod", "660", str(path)])
    log.add("dev_kvm", path=str(path), mode=st.mode, gid=st.gid)


def _start(
    ctx: Context, log: ChangeLog, daemon: daemons.Daemon, systemd: bool, layout: HostLayout
) -> None:
    if daemons.is_running(daemon, layout.proc):
        return
    pid = daemons.ensure_running(
        ctx.host, daemon, systemd=systemd, clock=ctx.clock, proc_root=layout.proc
    )
    earlier = log.find("daemon", name=daemon.name)
    if earlier is not None:  # restarted by this prepare after an earlier one started it
        earlier.detail["pid"] = pid
        log.save()
        return
    log.add(
        "daemon",
        name=daemon.name,
        pid=pid,
        systemd=systemd,
        argv=list(daemon.argv),
        comm=daemon.comm,
        unit=daemon.unit,
        pidfile=daemon.pidfile,
    )


def _nfs(
    ctx: Context,
    log: ChangeLog,
    layout: HostLayout,
    state_dir: Path,
    host_ip: str,
    subnet: str,
    systemd: bool,
) -> nfs.NfsExport:
    host = ctx.host
    server = nfs.choose_server(host.read_text(layout.proc / "filesystems"))
    export_dir = state_dir / "nfs"
    # Ganesha registers with rpcbind; so does the kernel server's rpc.mountd.
    _start(ctx, log, daemons.RPCBIND, systemd, layout)
    if nfs.make_export_dir(host, export_dir):
        log.add("mkdir", path=str(export_dir))
    if server == nfs.KERNEL:
        if not log.find("exports", path=str(export_dir)):
            nfs.start_kernel_export(host, export_dir, subnet, systemd=systemd)
            log.add("exports", path=str(export_dir), file=nfs.EXPORTS_FILE)
        return nfs.export_for(server, host_ip, export_dir)

    files = nfs.GaneshaFiles(state_dir / "ganesha")
    if not files.directory.is_dir():
        host.run(["mkdir", "-p", str(files.recovery)])
        # The server's own scratch (config, log, pid, recovery): release removes all of it.
        log.add("mkdir", path=str(files.directory), tree=True)
    config = nfs.ganesha_config(host_ip, subnet, export_dir, files.recovery)
    ganesha = files.daemon()
    old = files.config.read_text() if files.config.exists() else None
    if old != config:
        host.write_text(files.config, config)
        if not log.find("file", path=str(files.config)):
            log.add("file", path=str(files.config), before=old)
        running = daemons.find_pid(ganesha, layout.proc)
        if running is not None:  # reread the export: restart it
            daemons.stop(
                host, ganesha, running, systemd=False, clock=ctx.clock, proc_root=layout.proc
            )
    _start(ctx, log, ganesha, False, layout)
    nfs.wait_until_serving(host_ip, clock=ctx.clock)
    return nfs.export_for(server, host_ip, export_dir)


def release_host(
    ctx: Context, layout: HostLayout = HostLayout(), site: HostSite | None = None
) -> int:
    """Undo the recorded changes, newest first; returns how many were undone. With a
    remote ``site``: the changes recorded here for that host, undone there."""
    remote = site.remote_name if site is not None else None
    if site is not None:
        ctx = site.ctx
    log = ChangeLog.load(site.state_dir if site is not None else Path(ctx.config.state_dir))
    # Networks first: removing one needs libvirtd, which a later undo may stop.
    log.changes.sort(key=lambda change: change.kind == "network")
    undone = 0
    failed: list[Change] = []
    while log.changes:
        change = log.changes.pop()
        # Forget it first: the record is gone before its own directory is removed.
        log.save()
        try:
            _undo(ctx, change, layout, pending=log, remote=remote)
            ctx.note(f"undone{f' on host {remote}' if remote else ''}: {change.describe()}")
            undone += 1
        except (LabError, OSError) as err:
            ctx.warn(f"could not undo ({change.describe()}): {err}")
            failed.insert(0, change)
    log.changes = failed
    log.save()
    if failed:
        raise LabError(
            f"{len(failed)} change(s) could not be undone; they stay recorded in {log.path}",
            hint="Fix what the warnings say, then run lab host release"
            + (f" --hosts {remote}" if remote else "")
            + " again",
        )
    return undone


def _undo(
    ctx: Context, change: Change, layout: HostLayout, pending: ChangeLog, remote: str | None
) -> None:
    host, d = ctx.host, change.detail
    if change.kind == "hugepages":
        host.write_text(d["path"], f"{d['before']}\n")
    elif change.kind == "mount":
        host.run(["umount", d["target"]], hint="Is a guest still using it? Run `lab down` first")
    elif change.kind == "mkdir" and d.get("tree"):
        host.run(["rm", "-rf", d["path"]])
    elif change.kind == "mkdir":
        host.run(["rmdir", d["path"]], check=False)  # only when empty: never lose data
    elif change.kind == "qemu_conf":
        # A libvirtd the lab started is stopped by a later undo: no restart needed then.
        ours = pending.find("daemon", name=daemons.LIBVIRTD.name) is not None
        _restore_qemu_conf(ctx, d, layout, restart=not ours, remote=remote)
    elif change.kind == "dev_kvm":
        host.run(["chown", f":{d['gid']}", d["path"]])
        host.run(["chmod", f"{d['mode']:o}", d["path"]])
    elif change.kind == "daemon":
        daemon = daemons.Daemon(
            d["name"], tuple(d["argv"]), d["comm"], d["unit"], pidfile=d.get("pidfile")
        )
        pid = d.get("pid")
        if not d.get("systemd") and not daemons.alive(daemon, pid, layout.proc):
            # Restarted since (by hand, or by a test of the lab's fault handling): the
            # process started exactly as the lab starts it is the one to stop.
            pid = daemons.started_as_the_lab_does(daemon, layout.proc)
        daemons.stop(
            host,
            daemon,
            pid,
            systemd=bool(d.get("systemd")),
            clock=ctx.clock,
            proc_root=layout.proc,
        )
    elif change.kind == "network":
        remove_network(ctx.libvirt, d["name"], list(d["steps"]))
    elif change.kind == "file":
        if d.get("before") is None:
            host.run(["rm", "-f", d["path"]])
        else:
            host.write_text(d["path"], d["before"])
    elif change.kind == "exports":
        nfs.stop_kernel_export(host)
    elif change.kind in (tune.KNOB, tune.UNIT):
        tune.undo(ctx, change.kind, d)
    else:
        raise LabError(f"unknown change kind {change.kind!r} in the record")


def _restore_qemu_conf(
    ctx: Context,
    d: dict[str, Any],
    layout: HostLayout,
    restart: bool = True,
    remote: str | None = None,
) -> None:
    host = ctx.host
    current = host.read_text(d["path"])
    if _sha(current) != d["written_sha256"]:
        ctx.warn(
            f"{d['path']} changed since lab host prepare wrote it; left as it is"
            f" (the original is in {d['backup']})"
        )
        return
    host.write_text(d["path"], host.read_text(d["backup"]))
    host.run(["rm", "-f", d["backup"]])
    if remote:
        systemd = daemons.has_systemd(layout.root, host)
        _restart_remote_libvirtd(ctx, remote, systemd, why="it reads the restored qemu.conf")
    elif restart and daemons.is_running(daemons.LIBVIRTD, layout.proc):
        daemons.restart(
            host,
            daemons.LIBVIRTD,
            systemd=daemons.has_systemd(layout.root, host),
            clock=ctx.clock,
            proc_root=layout.proc,
        )
