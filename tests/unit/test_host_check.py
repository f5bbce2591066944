"""`lab host check`: each row's verdict and fix from tables of host facts."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from lab.host.accel import AccelChoice, choose_accelerator, read_accel_facts
from lab.host.check import MISSING, OK, WARN, CheckFacts, Row, rows_from_facts
from lab.host.facts import Pool
from lab.host.hugepages import HugePageNeed
from lab.host.network import NetworkInfo
from lab.report.hostcheck import rows_json

GIB = 1024**2
HOST = Path(__file__).parent.parent / "fixtures" / "host"


def ready_facts() -> CheckFacts:
    """A host a thp,shp1g pair can be brought up on (this CI machine after prepare)."""
    return CheckFacts(
        pair=["thp", "shp1g"],
        qemu_binary="/usr/bin/qemu-system-x86_64",
        accel=AccelChoice("qemu", "the CPU has no vmx/svm flag"),
        cpu_flags={"pdpe1gb", "avx2"},
        pools=[
            Pool(None, 2048, 0, 0, 0),
            Pool(None, GIB, 2, 2, 0),
            Pool(0, 2048, 0, 0, 0),
            Pool(0, GIB, 2, 2, 0),
        ],
        hugetlbfs={GIB: ["/dev/hugepages1G"]},
        qemu_conf_mounts=["/dev/hugepages1G"],
        thp_enabled="madvise",
        thp_defrag="madvise",
        network=NetworkInfo("lab", "virbr-lab", "198.18.0.1", 24),
        network_active=True,
        nfs_program="/usr/bin/ganesha.nfsd",
        nfs_serving=True,
        iperf3="/usr/bin/iperf3",
        mem_available_kib=20 * GIB,
        memory_needed_kib=GIB + 512 * 1024,
        cpus=2,
        needs={"thp": [], "shp1g": [HugePageNeed(GIB, 1, 0)]},
        image="debian12: /var/cache/lab/images/debian12-abc",
        image_tool="/usr/bin/mmdebstrap",
    )


def row(rows: list[Row], name: str) -> Row:
    return next(r for r in rows if r.name == name)


def test_a_ready_host_has_no_missing_row() -> None:
    rows = rows_from_facts(ready_facts())
    assert [r for r in rows if r.state == MISSING] == []
    assert row(rows, "accelerator").state == WARN  # TCG is loud, but the pair runs
    assert row(rows, "huge pages 1 GiB node 0").detail == "1 GiB pages on node 0: 2 total, 2 free"
    assert row(rows, "network lab").state == OK
    assert json.loads(rows_json(rows))["ready"] is True


def test_no_free_1g_page_is_missing_with_the_issue_s_fix() -> None:
    facts = replace(ready_facts(), pools=[Pool(None, GIB, 0, 0, 0), Pool(0, GIB, 0, 0, 0)])
    pool = row(rows_from_facts(facts), "huge pages 1 GiB node 0")
    assert pool.state == MISSING
    assert "shp1g needs 1 free 1 GiB page on node 0; 0 free" in pool.detail
    assert pool.fix == "lab host prepare --hugepages 1G:1"
    assert json.loads(rows_json(rows_from_facts(facts)))["ready"] is False


@pytest.mark.parametrize(
    ("change", "name", "state", "fix"),
    [
        ({"libvirt_error": "cannot connect to libvirt"}, "libvirtd", MISSING, "lab host prepare"),
        ({"qemu_binary": None}, "qemu", MISSING, "apt-get install qemu-system-x86 qemu-utils"),
        ({"hugetlbfs": {}}, "hugetlbfs 1 GiB", MISSING, "lab host prepare"),
        ({"qemu_conf_mounts": []}, "hugetlbfs 1 GiB", MISSING, "lab host prepare"),
        ({"network": None}, "network lab", MISSING, "lab host prepare"),
        ({"network_active": False}, "network lab", MISSING, "lab host prepare"),
        (
            {"network_forwards": True},
            "network lab",
            MISSING,
            "virsh net-destroy lab; virsh net-undefine lab; lab host prepare",
        ),
        ({"nfs_serving": False}, "NFS (ganesha)", WARN, "lab host prepare"),
        (
            {"nfs_program": None},
            "NFS (ganesha)",
            WARN,
            "apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind",
        ),
        ({"iperf3": None}, "iperf3", WARN, "apt-get install iperf3"),
        (
            {"thp_enabled": "never"},
            "THP enabled",
            WARN,
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
        ),
        ({"cpu_flags": set()}, "pdpe1gb", MISSING, "use 2 MiB variants (shp2m)"),
        (
            {"mem_available_kib": GIB},
            "memory",
            MISSING,
            "stop other guests or use --memory with less",
        ),
        (
            {"plan_error": "3 CPUs needed, the host has 2"},
            "CPUs",
            MISSING,
            "use --vcpus 1 --reserve-host-cpus 0",
        ),
        (
            {"image": None, "image_error": "image 'debian12' is not built"},
            "image",
            MISSING,
            "lab image build",
        ),
        (
            {"image": None, "image_tool": None},
            "image",
            MISSING,
            "apt-get install mmdebstrap; lab image build",
        ),
    ],
)
def test_each_requirement_and_its_fix(
    change: dict[str, object], name: str, state: str, fix: str
) -> None:
    rows = rows_from_facts(replace(ready_facts(), **change))  # type: ignore[arg-type]
    assert row(rows, name).state == state
    assert row(rows, name).fix == fix
    ready = json.loads(rows_json(rows))["ready"]
    assert ready is (state != MISSING)


def test_a_pair_without_static_pages_does_not_need_pdpe1gb_or_hugetlbfs() -> None:
    facts = replace(
        ready_facts(),
        needs={"thp": [], "thp2": []},
        cpu_flags=set(),
        hugetlbfs={},
        pools=[Pool(None, GIB, 0, 0, 0), Pool(0, GIB, 0, 0, 0)],
    )
    rows = rows_from_facts(facts)
    assert row(rows, "pdpe1gb").state == WARN
    assert not [r for r in rows if r.name.startswith("hugetlbfs")]
    assert [r for r in rows if r.state == MISSING] == []


def test_the_accelerator_row_on_this_kind_of_machine(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text((HOST / "host-cpuinfo-flags.txt").read_text())
    (tmp_path / "sys/module/kvm_pvm").mkdir(parents=True)
    choice = choose_accelerator(read_accel_facts(tmp_path))
    accel = row(rows_from_facts(replace(ready_facts(), accel=choice)), "accelerator")
    assert accel.state == WARN
    assert "kvm-pvm" in accel.detail
    assert "no vmx/svm" in accel.detail
    kvm = row(
        rows_from_facts(replace(ready_facts(), accel=AccelChoice("kvm", "usable"))), "accelerator"
    )
    assert (kvm.state, kvm.detail) == (OK, "KVM: usable")


def test_another_host_s_fixes_are_commands_for_that_host() -> None:
    facts = replace(
        ready_facts(),
        remote="rack2",
        uri="qemu+ssh://root@rack2/system",
        pools=[Pool(None, GIB, 2, 0, 0), Pool(0, GIB, 2, 0, 0)],
        hugetlbfs={},
        network_forwards=True,
        libvirt_error="cannot connect to libvirt at qemu+ssh://root@rack2/system",
    )
    rows = rows_from_facts(facts)
    assert row(rows, "huge pages 1 GiB node 0").fix == (
        "lab host prepare --hugepages 1G:3 --hosts rack2"
    )
    assert row(rows, "hugetlbfs 1 GiB").fix == "lab host prepare --hosts rack2"
    assert row(rows, "network lab").fix == (
        "virsh -c qemu+ssh://root@rack2/system net-destroy lab;"
        " virsh -c qemu+ssh://root@rack2/system net-undefine lab; lab host prepare --hosts rack2"
    )
    assert row(rows, "libvirtd").fix == "on host rack2: systemctl start libvirtd"
    assert row(rows, "NFS (ganesha)").state == WARN  # not used there, not a fix to make


def test_what_a_row_read_from_the_host_is_printed_as_text() -> None:
    """A THP mode reads "always madvise [never]": as markup, "[never]" vanished from the
    table; a fix with a bracket crashed it."""
    import io

    from rich.console import Console

    from lab.core.config import Config
    from lab.core.context import Context
    from lab.report.hostcheck import print_rows

    out = io.StringIO()
    ctx = Context(config=Config(), out=Console(file=out, width=200))
    rows = [
        Row("THP defrag", WARN, "always madvise [never]", "echo '[/x]' > /sys/x"),
        Row("libvirtd", OK, "running [bold]x[/bold]"),
    ]
    print_rows(ctx, rows)
    shown = out.getvalue()
    assert "always madvise [never]" in shown
    assert "echo '[/x]' > /sys/x" in shown
    assert "running [bold]x[/bold]" in shown
