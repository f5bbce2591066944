"""Plug-ins: one small Python file per variant or workload, found in a list of folders.

A plug-in file ``NAME.py`` defines one object in a named attribute (``VARIANT``,
``WORKLOAD``), an instance of the plug-in kind's base class whose ``name`` is the file's name
with ``-`` for ``_`` (``sysbench_memory.py`` defines ``sysbench-memory``). Files starting
with ``_`` hold code that plug-ins share. A later folder overrides an earlier one.

A file that fails to load (a syntax error, an exception, no such attribute) does not stop the
others: it is kept as broken, under the name its file gives it, and is an error naming the
file and the cause when it is asked for by name or listed (:class:`Plugins`).
"""

from __future__ import annotations

import importlib.util
import traceback
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from lab.core.errors import ConfigError, LabError, PluginError, UnknownNameError

T = TypeVar("T")


@dataclass(frozen=True)
class PluginKind(Generic[T]):
    """What one kind of plug-in is: ``kind`` in messages, ``attribute`` that each file
    defines, ``base`` the class of what it defines (``base_name`` as users import it)."""

    kind: str
    attribute: str
    base: type[T]
    base_name: str


class Plugins(Mapping[str, T]):
    """The plug-ins of one kind that loaded, by name, and the files that did not
    (``broken``: the name each file would give, to the error naming it)."""

    def __init__(
        self, kind: PluginKind[T], found: dict[str, T], broken: dict[str, PluginError]
    ) -> None:
        self.kind = kind
        self._found = found
        self.broken: Mapping[str, PluginError] = broken

    def __getitem__(self, name: str) -> T:
        return self._found[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._found)

    def __len__(self) -> int:
        return len(self._found)

    def pick(self, name: str) -> T:
        """The plug-in called ``name``; a broken one is its load error, an unknown name
        lists the known ones."""
        if name in self._found:
            return self._found[name]
        if name in self.broken:
            raise self.broken[name]
        raise UnknownNameError(self.kind.kind, name, list(self._found))

    def refuse_broken(self) -> None:
        """Raise for the broken files, once a listing has shown each with its error."""
        if len(self.broken) == 1:
            raise next(iter(self.broken.values()))
        if self.broken:
            files = ", ".join(sorted(e.path for e in self.broken.values()))
            raise ConfigError(
                f"{len(self.broken)} {self.kind.kind} plug-ins failed to load: {files}",
                hint="Each is listed above with its error; fix or remove those files (the"
                " other plug-ins are not affected)",
            )


def plugin_dirs(shipped: Iterable[Path], key: str, configured: Iterable[str]) -> list[Path]:
    """The shipped folders, then those ``lab.toml``'s ``key`` names, in its order; a name
    that is not a folder is an error naming the key."""
    folders = [Path(d) for d in configured]
    for folder in folders:
        if not folder.is_dir():
            raise ConfigError(
                f"{key} names {folder}, which is not a folder",
                hint=f"Fix {key} in lab.toml (`lab config` shows it and the file in use)",
            )
    return [*shipped, *folders]


def load_plugins(kind: PluginKind[T], dirs: Iterable[Path]) -> Plugins[T]:
    """Every plug-in of ``kind`` in ``dirs``, by name; the files that fail, as broken."""
    found: dict[str, T] = {}
    broken: dict[str, PluginError] = {}
    for directory in dirs:
        for path in sorted(Path(directory).glob("*.py")):
            if path.name.startswith("_"):
                continue
            try:
                plugin = load_plugin_file(kind, path)
            except PluginError as err:
                found.pop(err.name, None)
                broken[err.name] = err
                continue
            name = getattr(plugin, "name")  # noqa: B009 -- T has a name
            broken.pop(name, None)
            found[name] = plugin
    return Plugins(kind, found, broken)


def load_plugin_file(kind: PluginKind[T], path: Path) -> T:
    """The plug-in the file at ``path`` defines; a :class:`PluginError` naming the file for
    anything that goes wrong, its own code's exceptions included."""
    spec = importlib.util.spec_from_file_location(f"lab_{kind.kind}_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise _failed(kind, path, "not a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # anything a plug-in's own code raises is its failure
        lines = [
            f.lineno for f in traceback.extract_tb(err.__traceback__) if f.filename == str(path)
        ]
        where = f" (line {lines[-1]})" if lines and not isinstance(err, SyntaxError) else ""
        reason = err.message if isinstance(err, LabError) else f"{type(err).__name__}: {err}"
        raise _failed(kind, path, reason + where) from err
    plugin = getattr(module, kind.attribute, None)
    name = getattr(plugin, "name", None)
    if not isinstance(plugin, kind.base) or not isinstance(name, str) or not name:
        raise _failed(
            kind,
            path,
            f"it does not define {kind.attribute}",
            hint=f"Define {kind.attribute} = <a {kind.base_name} with a name> in that file",
        )
    if name.replace("-", "_") != path.stem:
        raise _failed(
            kind,
            path,
            f"it names itself {name!r}",
            hint=f"Name the file {name.replace('-', '_')}.py or the {kind.kind}"
            f" {path.stem.replace('_', '-')!r}",
        )
    return plugin


def _failed(kind: PluginKind[T], path: Path, reason: str, hint: str | None = None) -> PluginError:
    return PluginError(kind.kind, path.stem.replace("_", "-"), str(path), reason, hint=hint)
