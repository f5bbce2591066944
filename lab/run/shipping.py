"""The runner as the guest gets it: one zipapp of ``lab/inguest``, its parsers and its entry.

The archive's bytes depend only on the files' contents (fixed times, sorted names), and its
name carries their hash, so the controller copies it only into a guest that lacks that
version, and a runner still running from an older one keeps its own file.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import lab
import lab.inguest
import lab.parsers
from lab.core.paths import GUEST_DIR, PARSERS_FILE

ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: no file's own time leaks in


@dataclass(frozen=True)
class Zipapp:
    name: str  # runner-HASH.pyz
    data: bytes


def members() -> dict[str, Path]:
    """{name in the archive: source file}: the package, its parents and the entry point."""
    inguest = Path(lab.inguest.__file__).parent
    files = {f"lab/inguest/{path.name}": path for path in sorted(inguest.glob("*.py"))}
    return {
        "__main__.py": GUEST_DIR / "__main__.py",
        "lab/__init__.py": Path(lab.__file__),
        "lab/parsers/__init__.py": Path(lab.parsers.__file__),
        "lab/parsers/tools.py": PARSERS_FILE,
        **files,
    }


@cache
def runner_zipapp() -> Zipapp:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, source in sorted(members().items()):
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, source.read_bytes())
    data = buffer.getvalue()
    return Zipapp(f"runner-{hashlib.sha256(data).hexdigest()[:12]}.pyz", data)


def write_zipapp(folder: Path) -> Path:
    """The runner's zipapp in ``folder`` (for running it on this machine, as the bench does)."""
    app = runner_zipapp()
    path = folder / app.name
    path.write_bytes(app.data)
    return path
