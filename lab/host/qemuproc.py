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
_FIELD = re.compile(r"^(\w+):\s+(\d+) kB$", re.MULTILINE)
# A mapping's first line: its range, permissions, offset, device, inode and path (if any).
_MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ([rwxsp-]{4}) \S+ \S+ \d+ *(.*)$")
TCG_JIT_NAME = "tcg-jit"  # the memfd of TCG's code buffer under --enable-tcg's split-wx


def parse_smaps(text: str) -> dict[str, int]:
    """Every ``Name: N kB`` field of smaps or smaps_rollup, summed over the mappings."""
    fields: dict[str, int] = {}
    for name, value in _FIELD.findall(text):
        fields[name] = fields.get(name, 0) + int(value)
    return fields


def is_translation_buffer(perms: str, path: str) -> bool:
    """Whether a mapping is TCG's translation buffer: anonymous and executable (or named
    after its memfd). Under emulation QEMU keeps up to 1 GiB of translated code there, in
    anonymous memory that transparent huge pages back: not the guest's RAM."""
    return TCG_JIT_NAME in path or ("x" in perms and (not path or path.startswith("[anon")))


def qemu_memory(smaps: str) -> dict[str, int]:
    """``/proc/PID/smaps`` of a guest's QEMU summed by field over its mappings, less TCG's
    translation buffer (:func:`is_translation_buffer`), so ``AnonHugePages`` and ``Rss``
    speak of the guest's RAM and QEMU's own, not of translated code (KVM has none). A
    smaps_rollup text sums the same way, with nothing to leave out."""
    fields: dict[str, int] = {}
    counted = True
    for line in smaps.splitlines():
        mapping = _MAPPING.match(line)
        if mapping:
            counted = not is_translation_buffer(mapping.group(1), mapping.group(2).strip())
            continue
        field = _FIELD.match(line) if counted else None
        if field:
            fields[field.group(1)] = fields.get(field.group(1), 0) + int(field.group(2))
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
