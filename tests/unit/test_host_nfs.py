"""Which NFS server the host can run, the Ganesha configuration, and the kernel export."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from lab.core.clock import ManualClock
from lab.core.errors import LabError
from lab.core.hostexec import RecordingHost
from lab.host.nfs import (
    GANESHA,
    KERNEL,
    GaneshaFiles,
    choose_server,
    export_for,
    ganesha_config,
    is_serving,
    kernel_exports_line,
    start_kernel_export,
    wait_until_serving,
)

HOST = Path(__file__).parent.parent / "fixtures" / "host"


def test_this_kind_of_machine_runs_ganesha() -> None:
    assert choose_server((HOST / "host-proc-filesystems-no-nfsd.txt").read_text()) == GANESHA


def test_a_kernel_with_nfsd_runs_the_kernel_server() -> None:
    text = (HOST / "host-proc-filesystems-no-nfsd.txt").read_text() + "nodev\tnfsd\n"
    assert choose_server(text) == KERNEL


def test_ganesha_config_is_the_one_that_served_the_guests() -> None:
    files = GaneshaFiles(Path("/var/lib/lab/ganesha"))
    text = ganesha_config("198.18.0.1", "198.18.0.0/24", Path("/var/lib/lab/nfs"), files.recovery)
    assert text == (HOST / "ganesha-4.3-lab.conf").read_text()


def test_ganesha_config_exports_to_the_subnet_only_with_root_squashed() -> None:
    text = ganesha_config("10.5.0.1", "10.5.0.0/24", Path("/srv/lab/nfs"), Path("/r"))
    assert "Bind_addr = 10.5.0.1;" in text
    assert "Protocols = 4;" in text
    assert "Enable_UDP = false;" in text
    assert "Enable_RQUOTA = false;" in text
    assert "Squash = root_squash;" in text
    assert 'Pseudo = "/lab";' in text
    assert 'Path = "/srv/lab/nfs";' in text
    export = text[text.index("EXPORT {") :]
    # no access by default; read-write for the lab subnet alone
    assert export.index("Access_Type = None;") < export.index("CLIENT {")
    client = export[export.index("CLIENT {") :]
    assert "Clients = 10.5.0.0/24;" in client
    assert "Access_Type = RW;" in client


def test_ganesha_daemon_is_known_by_its_pid_file_only() -> None:
    daemon = GaneshaFiles(Path("/s/ganesha")).daemon()
    assert daemon.argv == (
        "ganesha.nfsd",
        "-f",
        "/s/ganesha/ganesha.conf",
        "-L",
        "/s/ganesha/ganesha.log",
        "-p",
        "/s/ganesha/ganesha.pid",
    )
    assert daemon.pidfile == "/s/ganesha/ganesha.pid"
    assert daemon.by_name is False


def test_mount_sources() -> None:
    assert export_for(GANESHA, "198.18.0.1", Path("/var/lib/lab/nfs")).source == "198.18.0.1:/lab"
    kernel = export_for(KERNEL, "198.18.0.1", Path("/var/lib/lab/nfs"))
    assert kernel.source == "198.18.0.1:/var/lib/lab/nfs"


def test_kernel_export_line_and_commands() -> None:
    line = kernel_exports_line(Path("/var/lib/lab/nfs"), "198.18.0.0/24")
    assert line.startswith("/var/lib/lab/nfs 198.18.0.0/24(rw,sync,no_subtree_check,root_squash,")
    host = RecordingHost()
    start_kernel_export(host, Path("/var/lib/lab/nfs"), "198.18.0.0/24", systemd=True)
    assert host.written["/etc/exports.d/lab.exports"] == line
    assert host.commands == [
        ("mkdir", "-p", "/etc/exports.d"),
        ("systemctl", "start", "nfs-server"),
        ("exportfs", "-ra"),
    ]


def test_is_serving_on_a_loopback_listener() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert is_serving("127.0.0.1", port)
        wait_until_serving("127.0.0.1", timeout=1, clock=ManualClock(), port=port)
    assert not is_serving("127.0.0.1", port)


def test_wait_until_serving_times_out_with_a_hint() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening
        with pytest.raises(LabError, match=re.escape("does not answer on 127.0.0.1")) as err:
            wait_until_serving("127.0.0.1", timeout=2, clock=ManualClock(), port=port)
    assert "lab host prepare" in str(err.value)


def test_is_serving_never_probes_an_address_this_host_does_not_have() -> None:
    # 192.0.2.1 (TEST-NET-1) is not local: binding to it fails before any packet is sent.
    assert not is_serving("192.0.2.1", timeout=5)
