"""What a host was like when a run started: the facts that can change a result.

pyperf records its metadata with every benchmark; for a virtualization host the facts are
the kernel and its command line, the CPU and its microcode, SMT, the frequency governor and
boost, transparent huge pages (``enabled``, ``defrag``, khugepaged's ``defrag``), KSM,
automatic NUMA balancing, the huge page pools, and the QEMU and libvirt versions. A run
stores them at every start (``lab.run.environment``), so a result is never read without
them, and ``lab compare`` says when the twins' differ beyond their variant.

A knob this host does not have (no cpufreq under TCG, no boost file on Intel) is
``NOT_AVAILABLE``, never an error. :func:`host_environment` reads; the parsers are pure.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping, Sequence

from lab.host.facts import Pool, parse_thp_mode
from lab.host.telemetry import thp_counters, unusable_index

NOT_AVAILABLE = "not available"

# name -> the file it is read from, as it is (stripped)
PLAIN_FILES: Mapping[str, str] = {
    "kernel": "/proc/sys/kernel/osrelease",
    "cmdline": "/proc/cmdline",
    "smt_active": "/sys/devices/system/cpu/smt/active",
    "governor": "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
    "boost": "/sys/devices/system/cpu/cpufreq/boost",
    "intel_no_turbo": "/sys/devices/system/cpu/intel_pstate/no_turbo",
    "khugepaged_defrag": "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag",  # 0 or 1
    "ksm_run": "/sys/kernel/mm/ksm/run",
    "numa_balancing": "/proc/sys/kernel/numa_balancing",
}
# name -> the THP file whose [selected] mode it is
THP_FILES: Mapping[str, str] = {
    "thp_enabled": "/sys/kernel/mm/transparent_hugepage/enabled",
    "thp_defrag": "/sys/kernel/mm/transparent_hugepage/defrag",
}


def cpu_identity(cpuinfo: str) -> dict[str, str]:
    """The first CPU's model name and microcode from /proc/cpuinfo."""
    found: dict[str, str] = {}
    for key, name in (("model name", "cpu_model"), ("microcode", "microcode")):
        match = re.search(rf"^{key}\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
        found[name] = match.group(1).strip() if match else NOT_AVAILABLE
    return found


def pool_facts(pools: Sequence[Pool]) -> dict[str, str]:
    """Each huge page pool as ``hugepages.<node or all>.<size>kB: total/free/surplus``."""
    return {
        f"hugepages.{'all' if p.node is None else f'node{p.node}'}.{p.page_kib}kB":
            f"{p.total}/{p.free}/{p.surplus}"
        for p in pools
    }  # fmt: skip


def free_space_facts(read: Callable[[str], str]) -> dict[str, str]:
    """How far the host's free memory is from serving THP (issue 42: a host ages): the order-9
    unusable free space index from /proc/buddyinfo (the share of free memory no 2 MiB block
    can come from) and vmstat's THP fault counters since boot."""
    facts = {"thp_unusable_index": NOT_AVAILABLE, "thp_fault_alloc": NOT_AVAILABLE,
             "thp_fault_fallback": NOT_AVAILABLE}  # fmt: skip
    with contextlib.suppress(OSError, ValueError, ZeroDivisionError):
        facts["thp_unusable_index"] = f"{unusable_index(read('/proc/buddyinfo')):.3f}"
    with contextlib.suppress(OSError, ValueError):
        counters = thp_counters(read("/proc/vmstat"))
        facts["thp_fault_alloc"] = str(counters.fault_alloc)
        facts["thp_fault_fallback"] = str(counters.fault_fallback)
    return facts


def version_text(number: int) -> str:
    """libvirt's packed version (major·1,000,000 + minor·1,000 + release) as text."""
    return f"{number // 1_000_000}.{number // 1000 % 1000}.{number % 1000}"


def host_environment(
    read: Callable[[str], str],
    pools: Sequence[Pool],
    conn: object | None,
) -> dict[str, str]:
    """This host's facts: ``read(path)`` returns a file's text or raises OSError; ``conn``
    is the host's libvirt connection (None: its versions are not available)."""
    facts: dict[str, str] = {}
    for name, path in PLAIN_FILES.items():
        try:
            facts[name] = " ".join(read(path).split()) or NOT_AVAILABLE
        except OSError:
            facts[name] = NOT_AVAILABLE
    for name, path in THP_FILES.items():
        try:
            facts[name] = parse_thp_mode(read(path))
        except (OSError, ValueError):
            facts[name] = NOT_AVAILABLE
    try:
        facts.update(cpu_identity(read("/proc/cpuinfo")))
    except OSError:
        facts.update(cpu_model=NOT_AVAILABLE, microcode=NOT_AVAILABLE)
    facts.update(pool_facts(pools))
    facts.update(free_space_facts(read))
    facts["qemu_version"] = facts["libvirt_version"] = NOT_AVAILABLE
    if conn is not None:
        try:
            facts["qemu_version"] = version_text(int(conn.getVersion()))  # type: ignore[attr-defined]
            facts["libvirt_version"] = version_text(int(conn.getLibVersion()))  # type: ignore[attr-defined]
        except Exception:
            pass
    return facts
