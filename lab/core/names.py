"""Names a user chooses that become file names, symlinks or libvirt object names.

An image name becomes ``<image_dir>/NAME``, a network name a libvirt network and a bridge:
a path separator, ``..``, a leading dash or a shell metacharacter there would point outside
the lab's folders or confuse the programs the name is handed to. Such names are refused
where they enter (``lab.toml``, ``--image``, ``--name``), before anything is made.
"""

from __future__ import annotations

import re

from lab.core.errors import UsageError

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
_NAME = re.compile(NAME_PATTERN)


def check_name(kind: str, name: str, where: str = "") -> str:
    """Return ``name`` when it is a plain name; else a :class:`UsageError` naming ``where``."""
    if isinstance(name, str) and _NAME.fullmatch(name) and ".." not in name:
        return name
    prefix = f"{where}: " if where else ""
    raise UsageError(
        f"{prefix}{kind} name {name!r} is not a plain name",
        hint="Use letters, digits, '.', '_' and '-' only (at most 64, starting with a letter"
        " or digit), e.g. debian12",
    )
