"""The registry of variant plug-ins: every ``*.py`` in the variant directories.

Each plug-in file defines ``VARIANT``, an instance of :class:`lab.guests.variant.Variant`.
The directories are the project's ``domains/`` plus any the configuration adds.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from pathlib import Path

from lab.core.errors import ConfigError, UnknownNameError
from lab.core.paths import DOMAINS_DIR
from lab.guests.variant import Variant

DEFAULT_DIRS = (DOMAINS_DIR,)


def load_variants(dirs: Iterable[Path] = DEFAULT_DIRS) -> dict[str, Variant]:
    """Load every variant plug-in found in ``dirs``; a later directory overrides an earlier."""
    found: dict[str, Variant] = {}
    for directory in dirs:
        for path in sorted(Path(directory).glob("*.py")):
            if path.name.startswith("_"):
                continue
            variant = _load_file(path)
            found[variant.name] = variant
    return found


def get_variant(name: str, variants: dict[str, Variant]) -> Variant:
    try:
        return variants[name]
    except KeyError:
        raise UnknownNameError("variant", name, list(variants)) from None


def _load_file(path: Path) -> Variant:
    spec = importlib.util.spec_from_file_location(f"lab_variant_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load variant plug-in {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    variant = getattr(module, "VARIANT", None)
    if not isinstance(variant, Variant) or not variant.name:
        raise ConfigError(
            f"variant plug-in {path} does not define VARIANT",
            hint="Define VARIANT = <a lab.guests.variant.Variant with a name> in that file",
        )
    if variant.name != path.stem:
        raise ConfigError(
            f"variant plug-in {path} names itself {variant.name!r}",
            hint=f"Name the file {variant.name}.py or the variant {path.stem!r}",
        )
    return variant
