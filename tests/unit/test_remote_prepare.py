"""`lab host prepare|release --hosts NAME`: another host changed over its SSH and libvirt.

The other host is a :class:`FakeMachine` behind a stand-in for the ``ssh`` program: every
command reaches it as the one quoted string SSH carries and is split back into words there,
as a remote shell would. Its files start as real captures of this machine (sysfs pools,
/proc/mounts, Debian's qemu.conf). That the same path works against a real host is
tests/integration/test_two_hosts.py::test_the_remote_host_is_prepared_and_released_over_ssh.
"""

from __future__ import annotations

import re
import shlex
import socket
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import libvirt
import pytest

from lab.core.clock import ManualClock
from lab.core.config import Config
from lab.core.context import Context
from lab.core.hostexec import FileMode, Host, Result
from lab.core.inventory import inventory
from lab.guests.sites import site_for
from lab.host.changes import CHANGES_FILE, ChangeLog
from lab.host.facts import parse_qemu_conf_hugetlbfs
from lab.host.prepare import PrepareRequest, prepare_host, release_host
from lab.host.site import POOLS_SCRIPT
from tests.unit.helpers import FIXTURES

GIB = 1024**2
URI = "qemu+ssh://root@rack2/system"
QEMU_CONF = "/etc/libvirt/qemu.conf"
KVM_GID = 994
_POOL_FILE = re.compile(r"^/sys/.*/hugepages-\d+kB/(nr|free|surplus)_hugepages$")


class FakeMachine:
    """Another host's files, directories and modes; commands act on them as a shell would."""

    def __init__(self, systemd: bool) -> None:
        self.files: dict[str, str] = {}
        for line in (FIXTURES / "host/sysfs-hugepages-tree.txt").read_text().splitlines():
            path, _, value = line.partition(": ")
            self.files[path] = value + "\n"
        mounts = (FIXTURES / "host/host-proc-mounts-hugetlbfs-1g.txt").read_text()
        self.files["/proc/mounts"] = "\n".join(
            line for line in mounts.splitlines() if "hugetlbfs" not in line
        )
        self.files[QEMU_CONF] = (FIXTURES / "host/libvirt-9.0-qemu.conf-debian-default").read_text()
        self.files["/dev/kvm"] = ""
        self.dirs = {"/var/lib", "/etc/libvirt"} | ({"/run/systemd/system"} if systemd else set())
        self.modes = {"/dev/kvm": FileMode(0o600, 0, "root")}
        self.commands: list[list[str]] = []

    def answer(self, words: list[str], stdin: str | None) -> tuple[int, str]:
        self.commands.append(words)
        match words:
            case ["cat", path]:
                return (0, self.files[path]) if path in self.files else (1, "")
            case ["sh", "-c", 'cat > "$1"', "sh", path]:
                self.files[path] = stdin or ""
                if path.endswith("/nr_hugepages"):  # the kernel hands out what is asked
                    self.files[path.replace("/nr_", "/free_")] = stdin or ""
                return 0, ""
            case ["sh", "-c", script] if script == POOLS_SCRIPT:
                listing = [
                    f"{path}:{text.strip()}"
                    for path, text in self.files.items()
                    if _POOL_FILE.match(path)
                ]
                return 0, "\n".join(listing) + "\n"
            case ["test", "-e", path]:
                return int(path not in self.files and path not in self.dirs), ""
            case ["test", "-d", path]:
                return int(path not in self.dirs), ""
            case ["stat", "-Lc", "%a %g %G", path]:
                mode = self.modes.get(path, FileMode(0o755, 0, "root"))
                return 0, f"{mode.mode:o} {mode.gid} {mode.group}\n"
            case ["mkdir", "-p", path]:
                self.dirs.add(path)
                return 0, ""
            case ["mount", "-t", "hugetlbfs", "-o", option, "none", target]:
                size = option.removeprefix("pagesize=").replace("G", "024M")
                self.files["/proc/mounts"] += f"\nnone {target} hugetlbfs rw,pagesize={size} 0 0"
                return 0, ""
            case ["umount", target]:
                lines = self.files["/proc/mounts"].splitlines()
                self.files["/proc/mounts"] = "\n".join(x for x in lines if f" {target} " not in x)
                return 0, ""
            case ["cp", "-p", source, target]:
                self.files[target] = self.files[source]
                return 0, ""
            case ["rm", "-f", path]:
                self.files.pop(path, None)
                return 0, ""
            case ["chgrp", group, path]:
                self.modes[path] = FileMode(self.modes[path].mode, KVM_GID, group)
                return 0, ""
            case ["chown", owner, path]:
                gid = int(owner.removeprefix(":"))
                self.modes[path] = FileMode(self.modes[path].mode, gid, "root")
                return 0, ""
            case ["chmod", mode, path] if path in self.modes:
                old = self.modes[path]
                self.modes[path] = FileMode(int(mode, 8), old.gid, old.group)
                return 0, ""
        return 0, ""  # getent, systemctl, rmdir: taken as done


class SSHToFake(Host):
    """The ``ssh`` program, reaching :class:`FakeMachine` (and nothing on this machine)."""

    def __init__(self, machine: FakeMachine) -> None:
        self.machine = machine

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
        argv = [str(a) for a in argv]
        assert argv[0] == "ssh" and argv[-2] == "--", argv  # nothing else runs here
        code, out = self.machine.answer(shlex.split(argv[-1]), input)
        return Result(tuple(argv), code, out, "")


@pytest.fixture
def conn() -> libvirt.virConnect:
    return libvirt.open("test:///default")


def remote_site(tmp_path: Path, machine: FakeMachine, conn: libvirt.virConnect, network: str):
    config = Config(state_dir="/var/lib/lab", network=network, hosts={"rack2": URI})
    ctx = Context(
        config=config, host=SSHToFake(machine), clock=ManualClock(), connect=lambda _uri: conn
    )
    site = site_for(ctx, inventory(config)["rack2"])
    site.state_dir = tmp_path / "hosts/rack2"  # this machine's record of that host
    return ctx, site


def test_a_remote_host_is_prepared_over_its_ssh_and_recorded_here(
    tmp_path: Path, conn: libvirt.virConnect, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = FakeMachine(systemd=True)
    network = f"lab-{uuid.uuid4().hex[:6]}"
    ctx, site = remote_site(tmp_path, machine, conn, network)

    changes = prepare_host(ctx, PrepareRequest(hugepages=[(GIB, 2, None)]), site=site)

    pools = "/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages"
    assert machine.files[pools] == "2\n"
    assert "none /dev/hugepages1G hugetlbfs" in machine.files["/proc/mounts"]
    assert parse_qemu_conf_hugetlbfs(machine.files[QEMU_CONF]) == ["/dev/hugepages1G"]
    backup = f"/var/lib/lab/qemu.conf.before-lab-from-{socket.gethostname()}"
    assert machine.files[backup].startswith("#")  # the original, apart from a local prepare's
    commands = [" ".join(words) for words in machine.commands]
    assert "chgrp kvm /dev/kvm" in commands and "chmod 660 /dev/kvm" in commands
    assert "systemctl restart libvirtd" in commands
    # No daemon is started there and no NFS server is set up: its libvirtd answered.
    assert not [c for c in commands if c.split()[0] in {"libvirtd", "virtlogd", "rpcbind"}]
    assert not [c for c in commands if "ganesha" in c]
    assert conn.networkLookupByName(network).isActive()
    kinds = [c.kind for c in changes]
    assert kinds == ["mkdir", "hugepages", "mkdir", "mount", "qemu_conf", "dev_kvm", "network"]
    assert (tmp_path / "hosts/rack2" / CHANGES_FILE).exists()
    assert ChangeLog.load(tmp_path / "hosts/rack2").changes == changes
    notes = capsys.readouterr().err
    assert "changed on host rack2: 1 GiB huge pages on node 0: 1 -> 2" in notes
    assert "NFS: not set up on host rack2" in notes

    again = prepare_host(ctx, PrepareRequest(hugepages=[(GIB, 2, None)]), site=site)
    assert again == []  # looked before changing: nothing left to do

    machine.commands.clear()
    assert release_host(ctx, site=site) == len(changes)
    assert machine.files[pools] == "1\n"
    assert "hugetlbfs" not in machine.files["/proc/mounts"]
    assert parse_qemu_conf_hugetlbfs(machine.files[QEMU_CONF]) == []
    assert backup not in machine.files
    assert ["systemctl", "restart", "libvirtd"] in machine.commands
    assert machine.modes["/dev/kvm"] == FileMode(0o600, 0, "root")
    with pytest.raises(libvirt.libvirtError):
        conn.networkLookupByName(network)
    assert not (tmp_path / "hosts/rack2" / CHANGES_FILE).exists()


def test_a_remote_host_without_systemd_is_told_to_restart_libvirtd(
    tmp_path: Path, conn: libvirt.virConnect, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = FakeMachine(systemd=False)
    ctx, site = remote_site(tmp_path, machine, conn, f"lab-{uuid.uuid4().hex[:6]}")
    prepare_host(ctx, PrepareRequest(hugepages=[(GIB, 2, None)], nfs=False), site=site)
    assert not [w for w in machine.commands if w[0] in {"systemctl", "kill", "libvirtd"}]
    err = capsys.readouterr().err
    assert "host rack2 has no systemd: restart its libvirtd by hand" in err


def test_a_remote_shortfall_of_huge_pages_is_undone_and_explained(
    tmp_path: Path, conn: libvirt.virConnect
) -> None:
    from lab.core.errors import RequirementError

    machine = FakeMachine(systemd=True)
    original = machine.answer

    def stingy(words: list[str], stdin: str | None) -> tuple[int, str]:
        if words[-1].endswith("/nr_hugepages") and stdin == "8\n":
            stdin = "3\n"  # the kernel found room for 3 of the 8 pages
        return original(words, stdin)

    machine.answer = stingy  # type: ignore[method-assign]
    ctx, site = remote_site(tmp_path, machine, conn, f"lab-{uuid.uuid4().hex[:6]}")
    with pytest.raises(RequirementError, match="asked the kernel for 8 1 GiB huge pages"):
        prepare_host(ctx, PrepareRequest(hugepages=[(GIB, 8, None)]), site=site)
    pools = "/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages"
    assert machine.files[pools] == "1\n"  # put back as it was
