"""A guest's QEMU process as its host sees it: its pid, its command line, its memory.

libvirt writes the pid of each running guest's QEMU to ``/run/libvirt/qemu/NAME.pid``; the
process's ``/proc/PID`` files then say what QEMU was told and what memory it holds. Read
through a ``read`` function (a :class:`~lab.core.hostexec.Host`'s ``read_text``), so the
guest's own host is asked, and tests hand in captured files.
"""

from __future__ import annotations

import re
from collections.abc import Callable

PID_FILE = "/run/libvirt/qemu/{name}.pid"
SMAPS = "/proc/{pid}/smaps"
# The fields qemu_memory() sums, and in one pattern with a mapping's first line (its range,
# permissions, offset, device, inode and path): one pass of the regex engine over the
# ~15,000 lines of a QEMU's smaps (3 ms here, where a loop over its lines took 20).
MEMORY_FIELDS = ("Rss", "AnonHugePages", "Shared_Hugetlb", "Private_Hugetlb")
_MEMORY = re.compile(
    r"^(?:[0-9a-f]+-[0-9a-f]+ ([rwxsp-]{4}) \S+ \S+ \d+ *(.*)"
    rf"|({'|'.join(MEMORY_FIELDS)}):\s+(\d+) kB)$",
    re.MULTILINE,
)
TCG_JIT_NAME = "tcg-jit"  # the memfd of TCG's code buffer under --enable-tcg's split-wx


def is_translation_buffer(perms: str, path: str) -> bool:
    """Whether a mapping is TCG's translation buffer: anonymous and executable (or named
    after its memfd). Under emulation QEMU keeps up to 1 GiB of translated code there, in
    anonymous memory that transparent huge pages back: not the guest's RAM."""
    return TCG_JIT_NAME in path or ("x" in perms and (not path or path.startswith("[anon")))


def qemu_memory(smaps: str) -> dict[str, int]:
    """:data:`MEMORY_FIELDS` of a guest's QEMU's ``/proc/PID/smaps``, each summed over its
    mappings less TCG's translation buffer (:func:`is_translation_buffer`), so
    ``AnonHugePages`` and ``Rss`` speak of the guest's RAM and QEMU's own, not of translated
    code (KVM has none). A smaps_rollup text sums the same way, with nothing to leave out."""
    fields = dict.fromkeys(MEMORY_FIELDS, 0)
    counted = True
    for perms, path, name, value in _MEMORY.findall(smaps):
        if perms:
            counted = not is_translation_buffer(perms, path.strip())
        elif counted:
            fields[name] += int(value)
    return fields


def read_qemu_memory(read: Callable[[str], str], name: str) -> dict[str, int]:
    """:func:`qemu_memory` of guest ``name``'s QEMU process now (OSError, ValueError)."""
    return qemu_memory(read(SMAPS.format(pid=qemu_pid(read, name))))


def qemu_pid(read: Callable[[str], str], name: str) -> int:
    """The PID of guest ``name``'s QEMU process, as libvirt wrote it (OSError, ValueError)."""
    return int(read(PID_FILE.format(name=name)).strip())


def qemu_cmdline(read: Callable[[str], str], name: str) -> list[str]:
    """The arguments guest ``name``'s QEMU process was started with; [] when unreadable."""
    try:
        raw = read(f"/proc/{qemu_pid(read, name)}/cmdline")
    except (OSError, ValueError):
        return []
    return [a for a in raw.split("\0") if a]
