"""The host knobs that make timings noisy, judged the way ``pyperf system show`` does.

Each knob is a file under /sys or /proc (their paths are :mod:`lab.host.environment`'s),
a value that keeps timings quiet, and the values that make them noisy: the CPU frequency
governor, boost/turbo, KSM, automatic NUMA balancing and THP ``defrag``. Two more rows
depend on the pair's plan: SMT siblings shared between the twins' CPUs, and irqbalance
moving interrupts onto them. A knob whose file is missing is ``not available``.

:func:`read_noise` reads through a ``read(path)`` that is handed in; :func:`noise_rows`
is pure. ``lab host prepare --tune`` writes the same :data:`KNOBS` (:mod:`lab.host.tune`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from lab.core.errors import LabError
from lab.core.units import parse_cpuset
from lab.host.environment import PLAIN_FILES, THP_FILES
from lab.host.facts import parse_thp_mode
from lab.host.row import NA, OK, WARN, Row

GOVERNOR = PLAIN_FILES["governor"]  # cpu0's; governor_file() gives any CPU's
CPU_DIR = GOVERNOR.split("/cpu0/")[0]  # /sys/devices/system/cpu
ONLINE = f"{CPU_DIR}/online"
THP_DEFRAG = THP_FILES["thp_defrag"]
IRQBALANCE = "irqbalance"
BANNED = "IRQBALANCE_BANNED_CPULIST"


def governor_file(cpu: int) -> str:
    return GOVERNOR.replace("/cpu0/", f"/cpu{cpu}/")


def available_governors_file(cpu: int) -> str:
    return governor_file(cpu).replace("scaling_governor", "scaling_available_governors")


def siblings_file(cpu: int) -> str:
    return f"{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list"


@dataclass(frozen=True)
class Knob:
    """One file whose value makes timings noisy, and the value ``--tune`` writes."""

    name: str  # the row's name in `lab host check`
    path: str
    quiet: str  # what --tune writes
    noisy: tuple[str, ...] = ()  # the values to fix; () means any value but ``quiet``
    modes: bool = False  # a THP file: its value is the [selected] mode

    def is_noisy(self, value: str) -> bool:
        return value in self.noisy if self.noisy else value != self.quiet

    def value(self, read: Callable[[str], str]) -> str | None:
        """The knob's value; None when this host does not have it."""
        try:
            text = read(self.path)
        except OSError:
            return None
        if self.modes:
            try:
                return parse_thp_mode(text)
            except ValueError:
                return None
        return text.strip() or None

    def command(self) -> str:
        """The shell command that fixes it by hand."""
        return f"echo {self.quiet} > {self.path}"


BOOST = Knob("CPU boost", PLAIN_FILES["boost"], "0", ("1",))
NO_TURBO = Knob("CPU boost", PLAIN_FILES["intel_no_turbo"], "1", ("0",))
KSM = Knob("KSM", PLAIN_FILES["ksm_run"], "0", ("1",))  # 2 (unmerge) stops it too
NUMA_BALANCING = Knob("NUMA balancing", PLAIN_FILES["numa_balancing"], "0")
# `always`: every fault that wants a huge page compacts memory first, so the thp twin's
# page faults stall for as long as compaction takes.
DEFRAG = Knob("THP defrag", THP_DEFRAG, "madvise", ("always",), modes=True)
# Written by --tune in this order; the governors come first, one knob per CPU.
KNOBS = (BOOST, NO_TURBO, KSM, NUMA_BALANCING, DEFRAG)


def governor_knob(cpu: int) -> Knob:
    return Knob("CPU governor", governor_file(cpu), "performance")


def online_cpus(read: Callable[[str], str]) -> list[int]:
    try:
        return parse_cpuset(read(ONLINE).strip())
    except (OSError, LabError):
        return []


@dataclass
class NoiseFacts:
    """The knobs' values as read (None: not on this host) and the pair's CPUs."""

    governors: dict[int, str] = field(default_factory=dict)  # empty: no cpufreq
    boost: str | None = None
    intel_no_turbo: str | None = None
    smt_active: str | None = None
    cpu_siblings: dict[int, tuple[int, ...]] = field(default_factory=dict)
    ksm_run: str | None = None
    numa_balancing: str | None = None
    irqbalance_pid: int | None = None
    irqbalance_banned: tuple[int, ...] = ()  # its IRQBALANCE_BANNED_CPULIST
    twin_cpus: dict[str, tuple[int, ...]] = field(default_factory=dict)  # from the plan


def read_noise(read: Callable[[str], str], irqbalance_pids: Iterable[int] = ()) -> NoiseFacts:
    """The knobs through ``read(path)`` (raises OSError for a missing file); the plan's
    CPUs are added a layer up (:mod:`lab.app.hostcheck`)."""
    cpus = online_cpus(read)
    n = NoiseFacts(
        boost=BOOST.value(read),
        intel_no_turbo=NO_TURBO.value(read),
        ksm_run=KSM.value(read),
        numa_balancing=NUMA_BALANCING.value(read),
    )
    with contextlib.suppress(OSError):
        n.smt_active = read(PLAIN_FILES["smt_active"]).strip() or None
    for cpu in cpus:
        governor = governor_knob(cpu).value(read)
        if governor is not None:
            n.governors[cpu] = governor
        with contextlib.suppress(OSError, LabError):
            n.cpu_siblings[cpu] = tuple(parse_cpuset(read(siblings_file(cpu)).strip()))
    for pid in irqbalance_pids:
        n.irqbalance_pid = pid
        with contextlib.suppress(OSError):
            n.irqbalance_banned = banned_cpus(read(f"/proc/{pid}/environ"))
        break
    return n


def banned_cpus(environ: str) -> tuple[int, ...]:
    """The CPUs irqbalance keeps interrupts off, from its NUL-separated environment."""
    for entry in environ.split("\0"):
        if entry.startswith(f"{BANNED}="):
            try:
                return tuple(parse_cpuset(entry.split("=", 1)[1].strip()))
            except LabError:
                return ()
    return ()


def noise_rows(n: NoiseFacts, thp_defrag: str | None, tune: str) -> list[Row]:
    """The rows for ``n`` and THP's ``defrag`` mode (read with THP ``enabled``, by
    :func:`lab.host.check.gather_facts`); ``tune`` is the command that applies the fixes
    (``lab host prepare --tune``, with ``--hosts`` for another host)."""
    return [
        _governor_row(n, tune),
        _boost_row(n, tune),
        _smt_row(n),
        _knob_row(KSM, n.ksm_run, tune, "running: it merges the twins' identical pages"),
        _knob_row(
            NUMA_BALANCING,
            n.numa_balancing,
            tune,
            "on: the kernel migrates the twins' pages between nodes",
            "sysctl kernel.numa_balancing=0",
        ),
        _knob_row(
            DEFRAG,
            thp_defrag or None,
            tune,
            "always: the thp twin's page faults stall on direct compaction",
            f"echo madvise > {THP_DEFRAG} (or defer+madvise)",
        ),
        _irqbalance_row(n, tune),
    ]


def _fix(tune: str, command: str) -> str:
    return f"{tune}, or: {command}"


def _knob_row(knob: Knob, value: str | None, tune: str, why: str, command: str = "") -> Row:
    if value is None:
        return Row(knob.name, NA, f"no {knob.path} on this host")
    if knob.is_noisy(value):
        return Row(knob.name, WARN, f"{value} ({why})", _fix(tune, command or knob.command()))
    return Row(knob.name, OK, value)


def _governor_row(n: NoiseFacts, tune: str) -> Row:
    name = "CPU governor"
    if not n.governors:
        return Row(name, NA, "no cpufreq on this host (a guest, or frequency set by firmware)")
    slow = {cpu: g for cpu, g in sorted(n.governors.items()) if g != "performance"}
    if not slow:
        return Row(name, OK, f"performance on {len(n.governors)} CPU(s)")
    shown = ", ".join(f"cpu{cpu} {g}" for cpu, g in slow.items())
    return Row(
        name,
        WARN,
        f"{shown}: the clock follows the load",
        _fix(tune, "cpupower frequency-set -g performance"),
    )


def _boost_row(n: NoiseFacts, tune: str) -> Row:
    for knob, value in ((BOOST, n.boost), (NO_TURBO, n.intel_no_turbo)):
        if value is None:
            continue
        if knob.is_noisy(value):
            return Row(
                knob.name,
                WARN,
                f"on ({knob.path} = {value}): the clock depends on temperature and load",
                _fix(tune, knob.command()),
            )
        return Row(knob.name, OK, f"off ({knob.path} = {value})")
    return Row(BOOST.name, NA, "no cpufreq boost or intel_pstate no_turbo on this host")


def _smt_row(n: NoiseFacts) -> Row:
    name = "SMT siblings"
    if not n.twin_cpus:
        return Row(name, NA, "the pair has no CPU plan")
    shared = shared_siblings(n.twin_cpus, n.cpu_siblings)
    if shared:
        shown = ", ".join(f"cpu{a} ({x}) with cpu{b} ({y})" for a, x, b, y in shared)
        return Row(
            name,
            WARN,
            f"one core runs both twins: {shown}",
            "plan with --reserve-host-cpus so each twin gets whole cores,"
            f" or disable SMT: echo off > {CPU_DIR}/smt/control",
        )
    if n.smt_active == "0":
        return Row(name, OK, "SMT is off")
    return Row(name, OK, "no core is shared between the twins")


def shared_siblings(
    twin_cpus: dict[str, tuple[int, ...]], siblings: dict[int, tuple[int, ...]]
) -> list[tuple[int, str, int, str]]:
    """(cpu, its twin, sibling, the other twin) for every core both twins run on."""
    owner = {cpu: twin for twin, cpus in twin_cpus.items() for cpu in cpus}
    found = []
    for cpu, twin in sorted(owner.items()):
        for sibling in siblings.get(cpu, ()):
            other = owner.get(sibling)
            if other is not None and other != twin and cpu < sibling:
                found.append((cpu, twin, sibling, other))
    return found


def _irqbalance_row(n: NoiseFacts, tune: str) -> Row:
    name = IRQBALANCE
    if n.irqbalance_pid is None:
        return Row(name, OK, "not running")
    cpus = sorted({cpu for cpus in n.twin_cpus.values() for cpu in cpus})
    exposed = [cpu for cpu in cpus if cpu not in n.irqbalance_banned]
    if cpus and not exposed:
        return Row(name, OK, f"running, the twins' CPUs are banned ({BANNED})")
    where = ",".join(map(str, exposed)) if exposed else "any CPU"
    listed = ",".join(map(str, exposed)) or "CPUS"
    return Row(
        name,
        WARN,
        f"running (pid {n.irqbalance_pid}): moves interrupts onto {where}",
        _fix(tune, f"systemctl stop irqbalance, or {BANNED}={listed} in /etc/default/irqbalance"),
    )
