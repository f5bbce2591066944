"""The store a command names: ``--db``, else the `store` key of lab.toml."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.text import shown
from lab.store.db import Store

# scheme://...: a URL, which SQLite would take for a relative path (a folder named "ssh:")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def store_path(ctx: Context, db: str | None) -> Path:
    """The store ``db`` names (a command's ``--db``), else the `store` key of lab.toml (or
    $LAB_DB). An empty ``--db`` is refused, not read as "the default store", as an empty
    run key picks nothing; so is a URL, which would make a folder named after its scheme."""
    if db is not None and not db.strip():
        raise UsageError(
            "--db is empty: it names no store",
            hint="Give the store's path, or leave --db out for the store lab.toml or $LAB_DB names",
        )
    text = ctx.config.store if db is None else db
    if _URL.match(text):
        raise UsageError(
            f"the store {shown(text)} is a URL: the store is a local SQLite file",
            hint="Give a path on this machine (copy a remote store here first, e.g. with scp)",
        )
    return Path(text)


def open_store(ctx: Context, db: str | None, create: bool = True) -> Store:
    """The store ``db`` names (or lab.toml's); ``create=False`` for commands that only read."""
    return Store.open(store_path(ctx, db), create=create)


@contextmanager
def open_store_all_or_nothing(path: Path) -> Iterator[Store]:
    """The store at ``path`` (:func:`store_path`), for an action that stores all or nothing
    (``lab import``): a store that it created is removed again when it fails, and so are the
    folders made for it, so a failed first import leaves no file behind."""
    try:
        made = (
            []
            if path.exists()
            else [path, *(Path(f"{path}-{end}") for end in ("wal", "shm", "journal"))]
        )
        folder = path.parent
        while made and not folder.exists():  # the folders Store.open makes, deepest first
            made.append(folder)
            folder = folder.parent
    except OSError:  # a folder that cannot be searched: Store.open says so, and makes nothing
        made = []
    store = Store.open(path)
    try:
        yield store
    except BaseException:
        store.close()
        for leftover in made:
            if leftover.is_dir():
                with contextlib.suppress(OSError):  # not empty: something else put files there
                    leftover.rmdir()
            else:
                leftover.unlink(missing_ok=True)
        raise
    store.close()
