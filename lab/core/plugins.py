"""Plug-ins: one small Python file per variant or workload, found in a list of folders.

A plug-in file ``NAME.py`` defines one object in a named attribute (``VARIANT``,
``WORKLOAD``), an instance of the plug-in kind's base class whose ``name`` is the file's name
with ``-`` for ``_`` (``sysbench_memory.py`` defines ``sysbench-memory``). Files starting
with ``_`` hold code that plug-ins share. A later folder overrides an earlier one.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from lab.core.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class PluginKind(Generic[T]):
    """What one kind of plug-in is: ``kind`` in messages, ``attribute`` that each file
    defines, ``base`` the class of what it defines (``base_name`` as users import it)."""

    kind: str
    attribute: str
    base: type[T]
    base_name: str


def load_plugins(kind: PluginKind[T], dirs: Iterable[Path]) -> dict[str, T]:
    """Every plug-in of ``kind`` in ``dirs``, by name."""
    found: dict[str, T] = {}
    for directory in dirs:
        for path in sorted(Path(directory).glob("*.py")):
            if not path.name.startswith("_"):
                plugin = load_plugin_file(kind, path)
                found[getattr(plugin, "name")] = plugin  # noqa: B009 -- T has a name
    return found


def load_plugin_file(kind: PluginKind[T], path: Path) -> T:
    spec = importlib.util.spec_from_file_location(f"lab_{kind.kind}_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load {kind.kind} plug-in {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    plugin = getattr(module, kind.attribute, None)
    name = getattr(plugin, "name", None)
    if not isinstance(plugin, kind.base) or not isinstance(name, str) or not name:
        raise ConfigError(
            f"{kind.kind} plug-in {path} does not define {kind.attribute}",
            hint=f"Define {kind.attribute} = <a {kind.base_name} with a name> in that file",
        )
    if name.replace("-", "_") != path.stem:
        raise ConfigError(
            f"{kind.kind} plug-in {path} names itself {name!r}",
            hint=f"Name the file {name.replace('-', '_')}.py or the {kind.kind}"
            f" {path.stem.replace('_', '-')!r}",
        )
    return plugin
