"""`lab up` and `lab down`: twins from one base image, booted, ready and verified.

Order matters for safety: every requirement is checked before anything is created;
the lab's state file is written before the first domain is defined, so `lab down`
can always clean up a bring-up that died half way.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import libvirt

from lab.core.context import Context
from lab.core.errors import GuestError, RequirementError, UsageError
from lab.core.hostexec import Host
from lab.core.inventory import LOCAL, inventory
from lab.core.waiting import wait_for
from lab.guests.files import PlacedImage
from lab.guests.keys import KeyPair, lab_client_key
from lab.guests.labstate import GuestRecord, LabState, clear_state, save_state
from lab.guests.plan import TwinRequest, Twins, plan_twins
from lab.guests.readiness import NOT_YET, STATUS_FILE, parse_status, wait_argv
from lab.guests.seed import GUEST_USER, SeedData
from lab.guests.sites import Site, local_site
from lab.guests.ssh import GuestAddress, GuestShell
from lab.guests.twins import Guest
from lab.guests.variant import RunningGuest
from lab.guests.verify import (
    check_backing,
    check_live_domain,
    check_pinning,
    check_pool_drop,
    hugetlb_mappings,
)
from lab.host.accel import TCG_WARNING
from lab.host.hugepages import HugePageNeed, check_needs
from lab.host.network import lease_for, leases_for, network_info
from lab.images.image import find_image

# How often a booting guest is asked for its lease and its SSH port: both questions are
# cheap (a libvirt call, a TCP connect), so the lab notices either within a fifth of a second.
POLL_S = 0.2
Phase = Callable[[str, str], None]  # (guest name, what it is doing now)

# One fixed script (no user input in it) reporting what the guest runs as.
# Read once cloud-init is done; then the guest's first-boot files (its SSH host keys, the
# lab's key, sshd's settings) are written to disk: a guest reset within half a minute of
# `lab up` kept their names and lost their data (ext4 writes back later), and its sshd never
# came back (seen on the real pair: a run waited 300 s for it, then stopped).
FACTS_SCRIPT = (
    "uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled; nproc;"
    " awk '/^MemTotal:/ {print $2}' /proc/meminfo; cat /proc/sys/kernel/random/boot_id; sync"
)


@dataclass(frozen=True)
class UpResult:
    state: LabState
    seconds: dict[str, dict[str, float]]  # guest -> phase -> seconds since start


def shell_for(ctx: Context, record: GuestRecord) -> GuestShell:
    """SSH to a guest: straight onto the lab network here, through its host elsewhere."""
    key, _ = lab_client_key(Path(ctx.config.state_dir) / "ssh")
    if not record.ip:
        raise GuestError(
            f"{record.name} has no known address", hint="Run lab status, or lab up again"
        )
    proxy = proxy_for(ctx, record, record.ip)
    return GuestShell(
        GuestAddress(record.name, record.ip, record.host_public_key, GUEST_USER, key, proxy)
    )


def proxy_for(ctx: Context, record: GuestRecord, ip: str) -> str | None:
    """The ProxyCommand through the guest's host; None for a guest of this machine."""
    if record.host == LOCAL:
        return None
    hosts = inventory(ctx.config)
    if record.host not in hosts:
        raise GuestError(
            f"{record.name} runs on host {record.host!r}, which lab.toml no longer lists",
            hint="Put it back under [hosts] to reach or remove the guest",
        )
    target = hosts[record.host].ssh
    return target.proxy_command(ip) if target is not None else None


def _check_requirements(site: Site, twins: Twins, allow_overcommit: bool = False) -> None:
    """Refuse before anything is created: huge pages, network, leftovers, shared CPUs."""

    ctx = site.ctx
    needs: dict[str, list[HugePageNeed]] = {}
    for guest in twins.guests:  # named by variant: "shp1g needs 1 free 1 GiB page ..."
        needs.setdefault(guest.variant.name, []).extend(guest.needs)
    remote = site.remote_name
    problems = check_needs(needs, site.hugepage_pools(), host=remote)
    if problems:
        where = f" (on host {remote})" if remote else ""
        raise RequirementError("; ".join(problems) + where)
    prepare = f"Run: lab host prepare --hosts {remote}" if remote else "Run: lab host prepare"

    conn = ctx.libvirt
    try:
        net = conn.networkLookupByName(ctx.config.network)
        if not net.isActive():
            raise RequirementError(
                f"the lab network {ctx.config.network!r} is not running", hint=prepare
            )
    except libvirt.libvirtError:
        raise RequirementError(
            f"the lab network {ctx.config.network!r} does not exist", hint=prepare
        ) from None
    defined = set(conn.listDefinedDomains()) | {
        conn.lookupByID(i).name() for i in conn.listDomainsID()
    }
    clash = sorted(g.name for g in twins.guests if g.name in defined)
    if clash:
        raise UsageError(
            f"domain(s) {', '.join(clash)} already exist",
            hint="Run `lab down` first (or remove them with virsh)",
        )
    if not allow_overcommit:
        shared = shared_cpus(conn, twins)
        if shared:
            raise RequirementError(
                f"host {site.name}: {shared}, so the twins would not have their CPUs to themselves",
                hint="Stop those guests, or bring the pair up with `lab up ... --allow-overcommit`"
                " to share the CPUs knowingly (timings then include the other guests' load)",
            )


def shared_cpus(conn: Any, twins: Twins) -> str:
    """Running domains other than the twins whose vCPUs may run on the twins' CPUs."""

    planned = {cpu for g in twins.guests for cpu in g.placement.vcpu_cpus}
    ours = {g.name for g in twins.guests}
    found = []
    for dom in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
        if dom.name() in ours:
            continue
        cpus = {i for pins in dom.vcpuPinInfo(0) for i, on in enumerate(pins) if on}
        both = sorted(cpus & planned)
        if both:
            found.append(f"{dom.name()} may run on CPU {','.join(map(str, both))}")
    return "; ".join(found)


def check_not_up(site: Site) -> None:
    """Refuse a bring-up where a lab is up already."""
    if site.load_state() is not None:
        where = f" on host {site.name}" if site.remote else ""
        raise UsageError(
            f"a lab is already up{where}", hint="See `lab status`; run `lab down` first"
        )


def bring_up(
    ctx: Context,
    request: TwinRequest,
    phase: Phase = lambda g, p: None,
    site: Site | None = None,
    allow_overcommit: bool = False,
) -> UpResult:
    """Twins on ``site`` (default: this machine) from the configured base image."""

    site = site or local_site(ctx)
    ctx = site.ctx
    state_dir = site.state_dir
    check_not_up(site)
    image = find_image(Path(ctx.config.image_dir), ctx.config.image)
    accel_facts = site.accel_facts()
    twins = plan_twins(ctx, request, boot=image.boot, accel_facts=accel_facts, prefix=site.prefix)
    label = f"host {site.name}: " if site.remote else ""
    if twins.accel.is_tcg:
        ctx.warn(f"{label}accelerator TCG: {twins.accel.reason}. {TCG_WARNING}")
    else:
        ctx.note(f"{label}accelerator KVM: {twins.accel.reason}")
    _check_requirements(site, twins, allow_overcommit)
    placed = site.files.place_image(image, lambda text: phase(f"{site.name} image", text))
    twins = plan_twins(
        ctx, request, boot=placed.boot, topology=twins.topology, accel_facts=accel_facts,
        prefix=site.prefix,
    )  # fmt: skip

    net = network_info(ctx.libvirt, ctx.config.network)
    _, client_public = lab_client_key(Path(ctx.config.state_dir) / "ssh")
    page_sizes = sorted({n.page_kib for g in twins.guests for n in g.needs})
    before = {size: site.free_pages(size) for size in page_sizes}

    host_keys = {g.name: KeyPair.generate(f"root@{g.name}") for g in twins.guests}
    state = LabState(
        guests=[
            GuestRecord(
                name=g.name,
                variant=g.variant.name,
                mac=g.spec.network.mac,
                directory=str(g.directory),
                vcpu_cpus=list(g.placement.vcpu_cpus),
                node=g.placement.node,
                host_public_key=host_keys[g.name].public_openssh,
                host=site.name,
            )
            for g in twins.guests
        ],
        accelerator=twins.accel.accelerator,
        accel_reason=twins.accel.reason,
        image=image.name,
        image_hash=str(image.manifest.get("hash", "")),
        network=ctx.config.network,
        host_ip=net.host_ip,
        emulator_cpus=list(twins.plan.emulator_cpus),
        created=ctx.clock.now(),
        host=site.name,
    )
    save_state(state_dir, state)  # from here on, `lab down` can clean up whatever exists

    for guest in twins.guests:
        phase(guest.name, "clone")
        _make_guest_files(site, guest, placed, client_public, host_keys[guest.name])

    start = ctx.clock.monotonic()
    seconds: dict[str, dict[str, float]] = {g.name: {} for g in twins.guests}
    # Leases left by an earlier guest with the same MAC must not be mistaken for new ones.
    stale = {
        g.name: frozenset(leases_for(ctx.libvirt, ctx.config.network, g.spec.network.mac))
        for g in twins.guests
    }

    domains = {}
    for guest in twins.guests:
        phase(guest.name, "define")
        domains[guest.name] = ctx.libvirt.defineXMLFlags(
            guest.spec.to_string(), libvirt.VIR_DOMAIN_DEFINE_VALIDATE
        )

    def boot(guest: Guest) -> None:
        """Start one guest; both start at once, as QEMU takes most of a second to launch."""
        phase(guest.name, "start")
        try:
            domains[guest.name].create()
        except libvirt.libvirtError as err:
            raise GuestError(
                f"{guest.name} did not start: {err.get_error_message()}",
                hint="Check `lab host check`; then `lab down` and retry",
            ) from None
        phase(guest.name, "booting")

    with ThreadPoolExecutor(max_workers=len(twins.guests)) as pool:
        list(pool.map(boot, twins.guests))

    def ready(guest: Guest, record: GuestRecord) -> GuestRecord:
        def mark(what: str) -> None:
            seconds[guest.name][what] = ctx.clock.monotonic() - start
            phase(guest.name, what)

        return _wait_ready(site, guest, record, mark, stale[guest.name])

    with ThreadPoolExecutor(max_workers=len(twins.guests)) as pool:
        records = list(pool.map(ready, twins.guests, state.guests))
    state = replace(state, guests=records)
    save_state(state_dir, state)

    problems = verify_running(site, twins.guests, state, before)
    if problems:
        raise GuestError(
            "the guests do not run as declared: " + "; ".join(problems),
            hint="Nothing was measured. Run `lab down`, fix the host, and retry",
        )
    for guest in twins.guests:
        seconds[guest.name]["verified"] = ctx.clock.monotonic() - start
    state = replace(state, ready=True)
    save_state(state_dir, state)
    return UpResult(state, seconds)


def _make_guest_files(
    site: Site, guest: Guest, base: PlacedImage, client_public: str, host_key: KeyPair
) -> None:
    """A linked clone of the base and a seed, in the way of the guest's host."""
    seed = SeedData(
        instance_id=f"{guest.name}-{uuid.uuid4().hex[:12]}",
        # one DNS label: a cell's dots (lab-page-1g.prealloc-on) would make it a domain name
        hostname=guest.name.replace(".", "-"),
        authorized_key=client_public,
        host_private_key=host_key.private_openssh,
        host_public_key=host_key.public_openssh,
    )
    site.files.make(guest, base, seed)


def _wait_ready(
    site: Site,
    guest: Guest,
    record: GuestRecord,
    mark: Callable[[str], None],
    stale_leases: frozenset[tuple[str, int]],
) -> GuestRecord:
    """Lease, then SSH, then cloud-init done; each layer with the time left and a clear error."""

    ctx = site.ctx
    timeout = float(ctx.config.boot_timeout)
    deadline = ctx.clock.monotonic() + timeout
    dom = ctx.libvirt.lookupByName(guest.name)

    def tail() -> str:
        return site.files.console_tail(record.directory)

    def alive() -> None:
        try:
            running = dom.isActive()
        except libvirt.libvirtError:
            running = False
        if not running:
            raise GuestError(f"{guest.name} stopped while booting", hint=tail())

    def left() -> float:
        return max(1.0, deadline - ctx.clock.monotonic())

    def lease() -> str | None:
        alive()
        return lease_for(ctx.libvirt, ctx.config.network, guest.spec.network.mac, stale_leases)

    ip = wait_for(
        f"{guest.name} to get a DHCP lease",
        lease,
        timeout=left(),
        clock=ctx.clock,
        interval=POLL_S,
        on_timeout=tail,
    )
    mark("lease")
    record = replace(record, ip=ip)
    shell = shell_for(ctx, record)

    def ssh_up() -> bool:
        alive()
        try:
            shell.connect()  # refused at once until sshd listens
            return True
        except GuestError:
            return False

    wait_for(
        f"SSH on {guest.name} ({ip})",
        ssh_up,
        timeout=left(),
        clock=ctx.clock,
        interval=POLL_S,
        on_timeout=tail,
    )
    mark("ssh")
    wait_s = int(left())
    done = shell.run(wait_argv(wait_s), check=False, timeout=wait_s + 30)
    if done.returncode == NOT_YET:
        raise GuestError(
            f"timed out after {timeout:.0f} s waiting for cloud-init to finish on {guest.name}",
            hint=tail(),
        )
    status = parse_status(done.stdout)
    if not status.ok:
        raise GuestError(
            f"{guest.name}: cloud-init finished with errors: {'; '.join(status.errors)[:400]}",
            hint=f"Its record: lab ssh {guest.name} cat {STATUS_FILE}; /var/log/cloud-init.log",
        )
    mark("cloud-init")
    facts = shell.run(["sh", "-c", FACTS_SCRIPT], timeout=60).stdout.split("\n")
    shell.close()
    return replace(
        record,
        facts={
            "kernel": facts[0].strip(),
            "thp_enabled": _bracketed(facts[1]),
            "cpus": int(facts[2]),
            "mem_total_kib": int(facts[3]),
            "boot_id": facts[4].strip(),
        },
    )


def _bracketed(text: str) -> str:
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if start >= 0 and end > start else text.strip()


def verify_running(
    site: Site, guests: list[Guest], state: LabState, free_before: dict[int, int]
) -> list[str]:
    """Compare what runs with what was declared: pinning, RAM backing, huge page pool drop,
    and each variant's own check. QEMU's memory map and the pools are read on the guests'
    host, through its commands; the variants' checks in the guests go over their SSH."""

    ctx = site.ctx
    problems: list[str] = []
    for guest in guests:
        dom = ctx.libvirt.lookupByName(guest.name)
        problems += check_live_domain(guest.name, dom.XMLDesc(0), guest.spec)
        tune = guest.spec.cputune
        assert tune is not None
        problems += check_pinning(
            guest.name,
            guest.placement.vcpu_cpus,
            tune.emulatorpin,
            dom.vcpuPinInfo(0),
            dom.emulatorPinInfo(0),
        )
        pid = ctx.host.read_text(f"/run/libvirt/qemu/{guest.name}.pid").strip()
        mappings = hugetlb_mappings(ctx.host.read_text(f"/proc/{pid}/numa_maps"))
        backing = guest.spec.memory_backing
        page_kib = backing.hugepages.page_kib if backing and backing.hugepages else None
        problems += check_backing(guest.name, page_kib, guest.spec.memory_kib, mappings)
    for size, before in free_before.items():
        expected = sum(n.count for g in guests for n in g.needs if n.page_kib == size)
        problems += check_pool_drop(size, expected, before, site.free_pages(size))
    records = {record.name: record for record in state.guests}
    problems += verify_variants(guests, lambda name: shell_for(ctx, records[name]), ctx.host)
    return problems


def verify_variants(
    guests: list[Guest], open_shell: Callable[[str], GuestShell], host: Host
) -> list[str]:
    """Each guest's variant's own check (:meth:`Variant.verify`), through a shell to that
    guest (``open_shell(name)``, closed after) and the files of its ``host``."""
    problems: list[str] = []
    for guest in guests:
        shell = open_shell(guest.name)
        try:
            problems += guest.variant.verify(
                RunningGuest(guest.name, guest.spec, shell, host.read_text)
            )
        finally:
            shell.close()
    return problems


def bring_down(
    ctx: Context, phase: Phase = lambda g, p: None, site: Site | None = None
) -> list[str]:
    """Destroy and undefine the lab's guests (on ``site``, default this machine) and remove
    their clones and seeds."""

    site = site or local_site(ctx)
    ctx, state_dir = site.ctx, site.state_dir
    state = site.load_state()
    if state is None:
        return []
    removed = []
    for record in state.guests:
        phase(record.name, "destroy")
        try:
            dom = ctx.libvirt.lookupByName(record.name)
        except libvirt.libvirtError:
            dom = None
        if dom is not None:
            if dom.isActive():
                dom.destroy()
            dom.undefine()
        site.files.remove(record.name, record.directory)
        removed.append(record.name)
    clear_state(state_dir)
    return removed
