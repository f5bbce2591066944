"""`lab host prepare` steps on a fake host tree, their record, and `release` undoing them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from lab.core.clock import ManualClock
from lab.core.config import Config
from lab.core.context import Context
from lab.core.errors import LabError, StoreError
from lab.core.hostexec import Host, Result
from lab.host.changes import CHANGES_FILE, ChangeLog
from lab.host.facts import parse_qemu_conf_hugetlbfs
from lab.host.prepare import (
    HostLayout,
    configure_qemu_conf,
    fix_dev_kvm,
    mount_hugetlbfs,
    qemu_conf_with_mounts,
    release_host,
    reserve_pools,
)
from tests.unit.test_host_facts import HOST, fake_sysfs

GIB = 1024**2
SAFE = {"cp", "mkdir", "rmdir", "rm", "chmod"}  # harmless inside the test's tmp tree


class TreeHost(Host):
    """Real files; file commands run for real (on tmp paths), the rest is recorded only."""

    def __init__(self, fail: set[str] | None = None) -> None:
        self.commands: list[tuple[str, ...]] = []
        self.fail = fail or set()

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
        if args[0] in self.fail:
            from lab.core.errors import HostCommandError

            raise HostCommandError(list(args), 32, f"{args[0]}: target is busy", hint=hint)
        if args[0] in SAFE:
            done = subprocess.run(args, capture_output=True, text=True, check=False)
            return Result(args, done.returncode, done.stdout, done.stderr)
        return Result(args, 0, "", "")


@pytest.fixture
def layout(tmp_path: Path) -> HostLayout:
    fake_sysfs(tmp_path / "sys", (HOST / "sysfs-hugepages-tree.txt").read_text())
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mounts").write_text(
        (HOST / "host-proc-mounts-hugetlbfs-1g.txt")
        .read_text()
        .replace("none /dev/hugepages1G hugetlbfs rw,relatime,pagesize=1024M 0 0\n", "")
    )
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/qemu.conf").write_text(
        (HOST / "libvirt-9.0-qemu.conf-debian-default").read_text()
    )
    (tmp_path / "dev").mkdir()
    return HostLayout(
        root=tmp_path,
        sysfs=tmp_path / "sys",
        proc=tmp_path / "proc",
        dev=tmp_path / "dev",
        qemu_conf=tmp_path / "etc/qemu.conf",
    )


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


def context(state: Path, host: Host) -> Context:
    return Context(config=Config(state_dir=str(state)), host=host, clock=ManualClock())


def mount_1g(layout: HostLayout) -> None:
    with open(layout.proc / "mounts", "a") as mounts:
        mounts.write(f"none {layout.dev}/hugepages1G hugetlbfs rw,relatime,pagesize=1024M 0 0\n")


def test_reserve_pools_records_the_count_before(layout: HostLayout, state: Path) -> None:
    log = ChangeLog.load(state)
    reserve_pools(TreeHost(), log, layout, [(GIB, 2, None), (2048, 0, None)])
    node0 = layout.sysfs / "devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages"
    assert node0.read_text() == "2\n"
    assert [(c.kind, c.detail["before"], c.detail["after"]) for c in log.added] == [
        ("hugepages", 1, 2)
    ]
    assert log.added[0].describe() == "1 GiB huge pages on node 0: 1 -> 2"
    again = ChangeLog.load(state)
    reserve_pools(TreeHost(), again, layout, [(GIB, 2, None)])
    assert again.added == []


def test_mount_hugetlbfs_once_per_page_size(layout: HostLayout, state: Path) -> None:
    host, log = TreeHost(), ChangeLog.load(state)
    mount_hugetlbfs(host, log, layout, [(GIB, 2, None), (2048, 0, None)])
    target = str(layout.dev / "hugepages1G")
    assert ("mount", "-t", "hugetlbfs", "-o", "pagesize=1G", "none", target) in host.commands
    assert [c.kind for c in log.added] == ["mkdir", "mount"]
    mount_1g(layout)
    host = TreeHost()
    mount_hugetlbfs(host, ChangeLog.load(state), layout, [(GIB, 2, None)])
    assert host.commands == []


def test_qemu_conf_edit_is_what_the_real_prepare_wrote(layout: HostLayout, state: Path) -> None:
    default = (HOST / "libvirt-9.0-qemu.conf-debian-default").read_text()
    new = qemu_conf_with_mounts(default, ["/dev/hugepages1G"])
    assert new == (HOST / "libvirt-9.0-qemu.conf-lab-prepared").read_text()


def test_qemu_conf_edit_disables_an_earlier_active_line() -> None:
    new = qemu_conf_with_mounts('x = 1\nhugetlbfs_mount = "/old"\n', ["/old", "/dev/hugepages1G"])
    assert parse_qemu_conf_hugetlbfs(new) == ["/old", "/dev/hugepages1G"]
    assert '#hugetlbfs_mount = "/old"' in new


def test_configure_qemu_conf_lists_the_mounts_and_backs_up(layout: HostLayout, state: Path) -> None:
    mount_1g(layout)
    host, log = TreeHost(), ChangeLog.load(state)
    assert configure_qemu_conf(host, log, layout, state / "qemu.conf.before-lab")
    mounts = parse_qemu_conf_hugetlbfs(layout.qemu_conf.read_text())
    assert mounts == [f"{layout.dev}/hugepages1G"]
    backup = Path(log.added[0].detail["backup"])
    assert backup.read_text() == (HOST / "libvirt-9.0-qemu.conf-debian-default").read_text()
    again = ChangeLog.load(state)
    assert not configure_qemu_conf(TreeHost(), again, layout, state / "qemu.conf.before-lab")


def test_release_undoes_exactly_the_recorded_changes(layout: HostLayout, state: Path) -> None:
    host = TreeHost()
    log = ChangeLog.load(state)
    reserve_pools(host, log, layout, [(GIB, 2, None)])
    mount_hugetlbfs(host, log, layout, [(GIB, 2, None)])
    mount_1g(layout)
    configure_qemu_conf(host, log, layout, state / "qemu.conf.before-lab")
    assert (state / CHANGES_FILE).exists()
    assert len(ChangeLog.load(state).changes) == 4

    host = TreeHost()
    assert release_host(context(state, host), layout) == 4
    node0 = layout.sysfs / "devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages"
    assert node0.read_text() == "1\n"
    assert (
        layout.qemu_conf.read_text() == (HOST / "libvirt-9.0-qemu.conf-debian-default").read_text()
    )
    target = str(layout.dev / "hugepages1G")
    # newest first: the file, then the mount, then the directory
    assert host.commands.index(("umount", target)) < host.commands.index(("rmdir", target))
    assert not (layout.dev / "hugepages1G").exists()
    assert not (state / CHANGES_FILE).exists()
    assert release_host(context(state, TreeHost()), layout) == 0


def test_release_leaves_a_qemu_conf_someone_else_changed(
    layout: HostLayout, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mount_1g(layout)
    log = ChangeLog.load(state)
    configure_qemu_conf(TreeHost(), log, layout, state / "qemu.conf.before-lab")
    edited = layout.qemu_conf.read_text() + "max_files = 1000\n"
    layout.qemu_conf.write_text(edited)
    release_host(context(state, TreeHost()), layout)
    assert layout.qemu_conf.read_text() == edited
    assert "changed since lab host prepare wrote it" in capsys.readouterr().err


def test_a_change_that_cannot_be_undone_stays_recorded(layout: HostLayout, state: Path) -> None:
    host = TreeHost()
    log = ChangeLog.load(state)
    reserve_pools(host, log, layout, [(GIB, 2, None)])
    mount_hugetlbfs(host, log, layout, [(GIB, 2, None)])
    with pytest.raises(LabError, match="1 change\\(s\\) could not be undone"):
        release_host(context(state, TreeHost(fail={"umount"})), layout)
    left = ChangeLog.load(state).changes
    assert [c.kind for c in left] == ["mount"]
    assert release_host(context(state, TreeHost()), layout) == 1


def test_a_corrupt_record_is_reported(state: Path) -> None:
    (state / CHANGES_FILE).write_text("{not json")
    with pytest.raises(StoreError, match="cannot read"):
        ChangeLog.load(state)


def test_the_record_is_plain_versioned_json(state: Path) -> None:
    log = ChangeLog.load(state)
    log.add("daemon", name="rpcbind", pid=12, systemd=False, argv=["rpcbind", "-w"])
    data = json.loads((state / CHANGES_FILE).read_text())
    assert data == {
        "format": 1,
        "changes": [
            {
                "kind": "daemon",
                "detail": {
                    "name": "rpcbind",
                    "pid": 12,
                    "systemd": False,
                    "argv": ["rpcbind", "-w"],
                },
            }
        ],
    }
    assert ChangeLog.load(state).changes[0].describe() == "started rpcbind (pid 12)"


def test_release_keeps_a_made_directory_with_data_but_drops_scratch(
    layout: HostLayout, state: Path
) -> None:
    export, scratch = state / "nfs", state / "ganesha"
    (export / "tree").mkdir(parents=True)
    (scratch / "recovery").mkdir(parents=True)
    (scratch / "ganesha.log").write_text("log")
    log = ChangeLog.load(state)
    log.add("mkdir", path=str(export))
    log.add("mkdir", path=str(scratch), tree=True)
    assert release_host(context(state, TreeHost()), layout) == 2
    assert (export / "tree").is_dir()  # guests' build trees are data: never removed
    assert not scratch.exists()


def test_dev_kvm_gets_group_kvm_and_mode_660(layout: HostLayout, state: Path) -> None:
    import grp

    try:
        grp.getgrnam("kvm")
    except KeyError:
        pytest.skip("no kvm group on this machine")
    kvm = layout.dev / "kvm"
    kvm.write_text("")
    kvm.chmod(0o600)
    host, log = TreeHost(), ChangeLog.load(state)
    fix_dev_kvm(host, log, layout)
    assert ("chgrp", "kvm", str(kvm)) in host.commands
    assert ("chmod", "660", str(kvm)) in host.commands
    assert log.added[0].detail["mode"] == 0o600
    assert log.added[0].describe() == f"{kvm}: mode 600 -> 660, group kvm"


def test_release_removes_networks_before_stopping_daemons(
    layout: HostLayout, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import uuid

    import libvirt

    from lab.host.network import ensure_network

    conn = libvirt.open("test:///default")
    name = f"lab-{uuid.uuid4().hex[:6]}"
    steps: list[str] = []
    ensure_network(conn, name, "198.18.0.0/24", steps)
    log = ChangeLog.load(state)
    # A record where the network comes first (left by an earlier, failed release).
    log.add("network", name=name, steps=steps)
    log.add(
        "daemon",
        name="toyd",
        pid=None,
        systemd=False,
        argv=["toyd"],
        comm="toyd",
        unit="toyd",
        pidfile=None,
    )
    ctx = Context(
        config=Config(state_dir=str(state), network=name),
        host=TreeHost(),
        clock=ManualClock(),
        connect=lambda _uri: conn,
    )
    assert release_host(ctx, layout) == 2
    notes = capsys.readouterr().err
    assert notes.index(f"libvirt network {name}") < notes.index("started toyd")
    with pytest.raises(libvirt.libvirtError):
        conn.networkLookupByName(name)


def fake_process(proc: Path, pid: int, comm: str, argv: Sequence[str]) -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "comm").write_text(comm + "\n")
    (proc / str(pid) / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))


class KillingHost(TreeHost):
    """`kill -TERM PID` ends the fake process PID."""

    def __init__(self, proc: Path) -> None:
        super().__init__()
        self.proc = proc

    def run(self, argv: Sequence[str], **kwargs: object) -> Result:  # type: ignore[override]
        result = super().run(argv, **kwargs)  # type: ignore[arg-type]
        if list(argv[:2]) == ["kill", "-TERM"]:
            import shutil

            shutil.rmtree(self.proc / str(argv[2]))
        return result


def test_release_stops_a_daemon_restarted_since_prepare_recorded_its_pid(
    layout: HostLayout, state: Path
) -> None:
    conf = str(state / "ganesha/ganesha.conf")
    argv = ["ganesha.nfsd", "-f", conf, "-L", str(state / "ganesha/ganesha.log")]
    ChangeLog.load(state).add(
        "daemon", name="ganesha.nfsd", pid=500, systemd=False, argv=argv,
        comm="ganesha.nfsd", unit="nfs-ganesha", pidfile=str(state / "ganesha/ganesha.pid"),
    )  # fmt: skip
    # pid 500 is gone: the daemon was restarted as 900; 901 is somebody else's ganesha
    fake_process(layout.proc, 900, "ganesha.nfsd", argv)
    fake_process(layout.proc, 901, "ganesha.nfsd", ["ganesha.nfsd", "-f", "/etc/other.conf"])
    host = KillingHost(layout.proc)
    assert release_host(context(state, host), layout) == 1
    assert [c for c in host.commands if c[0] == "kill"] == [("kill", "-TERM", "900")]
    assert (layout.proc / "901").exists()
