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
_FIELD = re.compile(r"^(\w+):\s+(\d+) kB$", re.MULTILINE)


def parse_smaps(text: str) -> dict[str, int]:
    """Every ``Name: N kB`` field of smaps or smaps_rollup, summed over the mappings."""
    fields: dict[str, int] = {}
    for name, value in _FIELD.findall(text):
        fields[name] = fields.get(name, 0) + int(value)
    return fields


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
