"""The URI that opens a store read-only (for commands that only read, and their children)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote


def readonly_uri(path: Path) -> str:
    """The URI that opens the store read-only. WAL needs its -shm file: where the folder
    cannot be written and there is none, the file is opened as immutable (nothing else can
    be writing it there either)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    if not Path(f"{path}-shm").exists():
        uri += "&immutable=1"
    return uri
