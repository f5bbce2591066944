"""``lab host check``: every host requirement of a pair, its state and the command that fixes it.

:func:`gather_facts` reads the host (libvirt, /proc, /sys, programs); :func:`rows_from_facts`
is pure, so each row's verdict is tested on tables of facts. A row is ``ok``, ``warn``
(the pair runs, but something is degraded or a workload will miss a tool), ``missing``
(the pair cannot be brought up) or ``not available`` (a knob this host does not have).
The knobs that make timings noisy are :mod:`lab.host.noise`'s rows.

:func:`lab.app.hostcheck.check_host` adds what the pair needs (its plan) and the image.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import libvirt

from lab.core.errors import LabError
from lab.host import nfs
from lab.host.accel import AccelChoice, AccelFacts, choose_accelerator, cpu_flags, read_accel_facts
from lab.host.facts import (
    Pool,
    hugetlbfs_mounts,
    parse_meminfo,
    parse_mounts,
    parse_qemu_conf_hugetlbfs,
    parse_thp_mode,
    read_hugepage_pools,
)
from lab.host.hugepages import HugePageNeed, check_needs, size_text
from lab.host.network import NetworkInfo, parse_network_xml
from lab.host.noise import IRQBALANCE, NoiseFacts, noise_rows, read_noise
from lab.host.perf import HARDWARE, Reading, counted, events_for, parse_perf_csv, refused
from lab.host.row import MISSING, NA, OK, WARN, Row

if TYPE_CHECKING:
    from lab.core.context import Context
    from lab.host.site import HostSite

__all__ = ["MISSING", "NA", "OK", "WARN", "CheckFacts", "Row", "gather_facts", "rows_from_facts"]

PREPARE = "lab host prepare"
# What QEMU and the host need beside guest RAM, per guest (rough, generous).
OVERHEAD_KIB = 256 * 1024


@dataclass
class CheckFacts:
    """Everything the check looks at, read off the host once."""

    pair: list[str]
    libvirt_error: str | None = None
    qemu_binary: str | None = None
    accel: AccelChoice | None = None
    accel_facts: AccelFacts | None = None  # what the choice was made from
    cpu_flags: set[str] = field(default_factory=set)
    pools: list[Pool] = field(default_factory=list)
    hugetlbfs: dict[int, list[str]] = field(default_factory=dict)
    qemu_conf_mounts: list[str] = field(default_factory=list)
    thp_enabled: str = ""
    thp_defrag: str = ""
    network_name: str = "lab"
    network: NetworkInfo | None = None
    network_active: bool = False
    network_forwards: bool = False
    nfs_server: str = nfs.GANESHA
    nfs_program: str | None = None
    nfs_serving: bool = False
    iperf3: str | None = None
    mem_available_kib: int = 0
    memory_needed_kib: int = 0
    cpus: int = 0
    plan_error: str | None = None
    needs: dict[str, list[HugePageNeed]] = field(default_factory=dict)
    image: str | None = None
    image_error: str | None = None
    image_tool: str | None = None  # mmdebstrap, to build one
    remote: str | None = None  # the host's name when it is not this machine
    uri: str = ""  # its libvirt URI
    noise: NoiseFacts = field(default_factory=NoiseFacts)  # the knobs that make timings noisy
    perf: str | None = None  # perf's path, for the counters of lab run --counters
    perf_readings: dict[str, Reading] = field(default_factory=dict)  # a probe of every event


def rows_from_facts(f: CheckFacts) -> list[Row]:
    rows = [
        Row(
            "libvirtd",
            MISSING,
            f.libvirt_error,
            f"on host {f.remote}: systemctl start libvirtd" if f.remote else PREPARE,
        )
        if f.libvirt_error
        else Row("libvirtd", OK, "reachable"),
        Row("qemu", OK, f.qemu_binary)
        if f.qemu_binary
        else Row(
            "qemu",
            MISSING,
            "qemu-system-x86_64 not found",
            "apt-get install qemu-system-x86 qemu-utils",
        ),
    ]
    if f.accel is not None:
        if f.accel.is_tcg:
            rows.append(
                Row(
                    "accelerator",
                    WARN,
                    f"TCG (software emulation): {f.accel.reason}; timings say nothing about KVM",
                    f.accel.fix,
                )
            )
        else:
            rows.append(Row("accelerator", OK, f"KVM: {f.accel.reason}"))
    gib = 1024**2
    needs_1g = any(n.page_kib == gib for items in f.needs.values() for n in items)
    if "pdpe1gb" in f.cpu_flags:
        rows.append(Row("pdpe1gb", OK, "the CPU supports 1 GiB pages"))
    else:
        rows.append(
            Row(
                "pdpe1gb",
                MISSING if needs_1g else WARN,
                "the CPU has no 1 GiB pages (no pdpe1gb flag)",
                "use 2 MiB variants (shp2m)" if needs_1g else "",
            )
        )
    rows.extend(_pool_rows(f))
    rows.extend(_hugetlbfs_rows(f))
    rows.append(
        Row(
            "THP enabled",
            WARN if f.thp_enabled == "never" else OK,
            f.thp_enabled or "unknown",
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"
            if f.thp_enabled == "never"
            else "",
        )
    )
    rows.append(_network_row(f))
    rows.append(_nfs_row(f))
    rows.append(
        Row("iperf3", OK, f.iperf3)
        if f.iperf3
        else Row(
            "iperf3", WARN, "not installed: network workloads cannot run", "apt-get install iperf3"
        )
    )
    enough = f.mem_available_kib >= f.memory_needed_kib
    rows.append(
        Row(
            "memory",
            OK if enough else MISSING,
            f"{f.mem_available_kib // 1024} MiB available, the pair needs about"
            f" {f.memory_needed_kib // 1024} MiB outside huge page pools",
            "" if enough else "stop other guests or use --memory with less",
        )
    )
    rows.append(
        Row(
            "CPUs", MISSING, f"{f.cpus} CPUs: {f.plan_error}", "use --vcpus 1 --reserve-host-cpus 0"
        )
        if f.plan_error
        else Row("CPUs", OK, f"{f.cpus} CPUs, the pair's plan fits")
    )
    if f.image:
        rows.append(Row("image", OK, f.image))
    else:
        fix = "lab image build" if f.image_tool else "apt-get install mmdebstrap; lab image build"
        rows.append(Row("image", MISSING, f.image_error or "not built", fix))
    rows.extend(noise_rows(f.noise, f.thp_defrag, f"{_prepare(f)} --tune"))
    rows.append(perf_row(f))
    return rows


def perf_row(f: CheckFacts) -> Row:
    """Which events ``lab run --counters`` can count here: perf's probe of each."""
    if not f.perf:
        return Row("perf counters", WARN, "perf is not installed: runs count nothing",
                   "apt-get install linux-perf")  # fmt: skip
    counts = counted(f.perf_readings, events_for("all"))
    not_counted = refused(f.perf_readings, events_for("all"))
    detail = f"counts {', '.join(counts) or 'nothing'}"
    if not_counted:
        detail += f"; not: {', '.join(not_counted)}"
    hardware = any(e in counts for e in HARDWARE)
    why = "" if hardware else " (no hardware counters: a VM without a PMU, or perf_event_paranoid)"
    return Row("perf counters", OK if counts else WARN, detail + why)


def _pool_rows(f: CheckFacts) -> list[Row]:
    per_node = [p for p in f.pools if p.node is not None] or f.pools
    problems = check_needs(f.needs, f.pools, host=f.remote)
    rows = []
    for pool in per_node:
        where = f"node {pool.node}" if pool.node is not None else "host"
        mine = [
            p
            for p in problems
            if f"{size_text(pool.page_kib)} page" in p
            and (pool.node is None or f"on node {pool.node};" in p)
        ]
        detail = (
            f"{size_text(pool.page_kib)} pages on {where}: {pool.total} total, {pool.free} free"
        )
        if mine:
            fix = mine[0].split("Run: ", 1)[-1] if "Run: " in mine[0] else ""
            rows.append(
                Row(
                    f"huge pages {size_text(pool.page_kib)} {where}",
                    MISSING,
                    f"{detail}; {mine[0].split('. Run:')[0]}",
                    fix,
                )
            )
        else:
            rows.append(Row(f"huge pages {size_text(pool.page_kib)} {where}", OK, detail))
    if not f.pools:
        rows.append(Row("huge pages", WARN, "no huge page pools under /sys"))
    return rows


def _hugetlbfs_rows(f: CheckFacts) -> list[Row]:
    sizes = sorted(
        {n.page_kib for items in f.needs.values() for n in items}
        | {p.page_kib for p in f.pools if p.total > 0 and p.node is None}
    )
    rows = []
    for page_kib in sizes:
        name = f"hugetlbfs {size_text(page_kib)}"
        mounts = f.hugetlbfs.get(page_kib, [])
        needed = any(n.page_kib == page_kib for items in f.needs.values() for n in items)
        bad = MISSING if needed else WARN
        if not mounts:
            rows.append(Row(name, bad, "not mounted", _prepare(f)))
        elif not set(mounts) & set(f.qemu_conf_mounts):
            rows.append(
                Row(
                    name,
                    bad,
                    f"{', '.join(mounts)} mounted, but libvirt's hugetlbfs_mount does not list it",
                    _prepare(f),
                )
            )
        else:
            rows.append(Row(name, OK, f"{', '.join(mounts)}, in libvirt's hugetlbfs_mount"))
    return rows


def _prepare(f: CheckFacts) -> str:
    """The command that fixes a row, on the host the facts are of."""
    return f"{PREPARE} --hosts {f.remote}" if f.remote else PREPARE


def _network_row(f: CheckFacts) -> Row:
    name = f"network {f.network_name}"
    virsh = f"virsh -c {f.uri}" if f.remote else "virsh"
    if f.network is None:
        return Row(name, MISSING, "not defined", _prepare(f))
    if f.network_forwards:
        return Row(
            name,
            MISSING,
            "forwards traffic off the host (the lab needs it isolated)",
            f"{virsh} net-destroy {f.network_name}; {virsh} net-undefine {f.network_name};"
            f" {_prepare(f)}",
        )
    if not f.network_active:
        return Row(name, MISSING, "defined but not running", _prepare(f))
    return Row(
        name,
        OK,
        f"isolated, bridge {f.network.bridge}, host {f.network.host_ip}/{f.network.prefix}",
    )


def _nfs_row(f: CheckFacts) -> Row:
    name = f"NFS ({f.nfs_server})"
    if f.remote:
        return Row(name, WARN, "not used on other hosts: NFS and iperf3 workloads run on local")
    if not f.nfs_program:
        return Row(
            name,
            WARN,
            f"{nfs.server_program(f.nfs_server)} not installed: build workloads cannot run",
            nfs.server_fix(f.nfs_server),
        )
    if not f.nfs_serving:
        return Row(name, WARN, "installed, not serving the lab network", PREPARE)
    host_ip = f.network.host_ip if f.network else "?"
    return Row(name, OK, f"serving {host_ip}:{nfs.PSEUDO if f.nfs_server == nfs.GANESHA else ''}")


def gather_facts(
    ctx: Context,
    pair: list[str],
    sizing: object = None,
    layout_root: Path = Path("/"),
    site: HostSite | None = None,
) -> CheckFacts:
    """Read the host's part of what :func:`rows_from_facts` judges (side effects: reads
    only). With a remote ``site``, its files, pools and accelerator are read over its SSH
    and libvirt. What the pair needs of it (its plan) and the image are added a layer up,
    by :func:`lab.app.hostcheck.check_host`."""
    remote = site if site is not None and site.remote else None
    if site is not None:
        ctx = site.ctx
    host = ctx.host
    f = CheckFacts(pair=pair, network_name=ctx.config.network)
    f.remote = remote.name if remote else None
    f.uri = ctx.config.libvirt_uri

    def read(path: str) -> str:
        try:
            return host.read_text(layout_root / path)
        except OSError:
            return ""

    conn = None
    try:
        conn = ctx.libvirt
    except LabError as err:
        f.libvirt_error = err.message
    f.qemu_binary = host.which("qemu-system-x86_64")
    accel_facts = remote.accel_facts() if remote else read_accel_facts(layout_root)
    f.accel_facts = accel_facts
    f.accel = choose_accelerator(accel_facts, "auto")
    f.cpu_flags = cpu_flags(accel_facts.cpuinfo)
    f.pools = remote.hugepage_pools() if remote else read_hugepage_pools(layout_root / "sys")
    f.hugetlbfs = hugetlbfs_mounts(parse_mounts(read("proc/mounts")))
    f.qemu_conf_mounts = parse_qemu_conf_hugetlbfs(read("etc/libvirt/qemu.conf"))
    for attr, leaf in (("thp_enabled", "enabled"), ("thp_defrag", "defrag")):
        with contextlib.suppress(ValueError):
            setattr(f, attr, parse_thp_mode(read(f"sys/kernel/mm/transparent_hugepage/{leaf}")))
    if conn is not None:
        _network_facts(f, conn)
    f.nfs_server = nfs.choose_server(read("proc/filesystems"))
    f.nfs_program = host.which(nfs.server_program(f.nfs_server))
    if f.network is not None and not remote:
        f.nfs_serving = nfs.is_serving(f.network.host_ip)
    f.iperf3 = host.which("iperf3")
    f.mem_available_kib = parse_meminfo(read("proc/meminfo")).get("MemAvailable", 0)
    f.noise = read_noise(lambda path: host.read_text(layout_root / path.lstrip("/")), _pids(ctx))
    f.perf = host.which("perf")
    if f.perf:
        argv = ["perf", "stat", "-x,", "-e", ",".join(events_for("all")), "--", "true"]
        with contextlib.suppress(LabError):
            f.perf_readings = parse_perf_csv(host.run(argv, check=False, timeout=30).stderr)
    return f


def _pids(ctx: Context) -> list[int]:
    """irqbalance's pids on the host of ``ctx`` (none when pgrep cannot tell)."""
    try:
        found = ctx.host.run(["pgrep", "-x", IRQBALANCE], check=False)
    except LabError:
        return []
    return [int(word) for word in found.stdout.split() if word.isdigit()]


def _network_facts(f: CheckFacts, conn: object) -> None:

    assert isinstance(conn, libvirt.virConnect)
    try:
        net = conn.networkLookupByName(f.network_name)
    except libvirt.libvirtError:
        return
    f.network, f.network_forwards = parse_network_xml(net.XMLDesc(0))
    f.network_active = bool(net.isActive())
