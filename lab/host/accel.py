"""Choosing the accelerator: KVM where it can run guests, TCG (``type='qemu'``) elsewhere.

A pure decision from facts read off the host, so every reason is tested on real
captured files. The choice is always printed; TCG comes with a loud warning.
"""

from __future__ import annotations

import grp
from dataclasses import dataclass
from pathlib import Path

from lab.core.errors import RequirementError

KVM_MODULES = ("kvm", "kvm_intel", "kvm_amd", "kvm_pvm")  # looked for under /sys/module
TCG_WARNING = (
    "guests run under QEMU software emulation (TCG): timings measure the emulator, "
    "not KVM; compare variants with each other, never with KVM results"
)


@dataclass(frozen=True)
class AccelChoice:
    accelerator: str  # "kvm" or "qemu"
    reason: str
    fix: str = ""  # a command that would make KVM usable, when one exists

    @property
    def is_tcg(self) -> bool:
        return self.accelerator == "qemu"


@dataclass(frozen=True)
class AccelFacts:
    cpuinfo: str  # text of /proc/cpuinfo (flags lines suffice)
    modules: frozenset[str]  # names under /sys/module
    dev_kvm_exists: bool
    dev_kvm_usable: bool  # QEMU's user (libvirt-qemu, group kvm) can open it


def cpu_flags(cpuinfo: str) -> set[str]:
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            flags.update(value.split())
    return flags


def choose_accelerator(facts: AccelFacts, requested: str = "auto") -> AccelChoice:
    if requested == "qemu":
        return AccelChoice("qemu", "TCG requested in the configuration")
    flags = cpu_flags(facts.cpuinfo)
    problems: list[tuple[str, str]] = []
    if not facts.dev_kvm_exists:
        problems.append(("/dev/kvm does not exist", "modprobe kvm_intel || modprobe kvm_amd"))
    if "kvm_pvm" in facts.modules:
        problems.append(
            (
                "/dev/kvm is kvm-pvm (nested shadow paging) which cannot boot a"
                " normal guest kernel",
                "",
            )
        )
    if not flags & {"vmx", "svm"}:
        problems.append(("the CPU has no vmx/svm flag (no hardware virtualization)", ""))
    if facts.dev_kvm_exists and not facts.dev_kvm_usable:
        problems.append(
            ("QEMU cannot open /dev/kvm (permission)", "chgrp kvm /dev/kvm && chmod 660 /dev/kvm")
        )
    if not problems:
        return AccelChoice("kvm", "KVM is usable: vmx/svm present and /dev/kvm accessible")
    reason = "; ".join(p for p, _ in problems)
    fix = next((f for _, f in problems if f), "")
    if requested == "kvm":
        raise RequirementError(
            f"KVM was requested but cannot run guests: {reason}",
            hint=f"Run: {fix}" if fix else "Set accelerator = 'auto'",
        )
    return AccelChoice("qemu", reason, fix)


def kvm_usable(mode: int, group: str) -> bool:
    """Whether QEMU's user (libvirt-qemu, in group kvm) can open a /dev/kvm of this mode
    and group."""
    return mode & 0o006 == 0o006 or (mode & 0o060 == 0o060 and group == "kvm")


def read_accel_facts(root: Path = Path("/")) -> AccelFacts:
    def read(path: str) -> str:
        try:
            return (root / path).read_text()
        except OSError:
            return ""

    dev = root / "dev/kvm"
    usable = dev.exists() and kvm_usable(dev.stat().st_mode, _group(dev))
    modules = frozenset(m for m in KVM_MODULES if (root / "sys/module" / m).exists())
    return AccelFacts(
        cpuinfo=read("proc/cpuinfo"),
        modules=modules,
        dev_kvm_exists=dev.exists(),
        dev_kvm_usable=usable,
    )


def _group(path: Path) -> str:

    try:
        return grp.getgrgid(path.stat().st_gid).gr_name
    except KeyError:
        return ""
