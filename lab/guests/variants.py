"""The registry of variant plug-ins: every ``*.py`` in the variant directories.

Each plug-in file defines ``VARIANT``, an instance of :class:`lab.guests.variant.Variant`
(:mod:`lab.core.plugins` says the rules). The directories are the project's ``domains/``
plus any ``lab.toml``'s ``variant_dirs`` adds (:func:`variants_for`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from lab.core.config import Config
from lab.core.errors import LabError, UnknownNameError
from lab.core.paths import DOMAINS_DIR
from lab.core.plugins import PluginKind, Plugins, load_plugins, plugin_dirs
from lab.guests.factors import looks_like_cell, parse_cell
from lab.guests.variant import Variant

DEFAULT_DIRS = (DOMAINS_DIR,)
VARIANTS = PluginKind("variant", "VARIANT", Variant, "lab.guests.variant.Variant")


def load_variants(dirs: Iterable[Path] = DEFAULT_DIRS) -> Plugins[Variant]:
    """Load every variant plug-in found in ``dirs``; a later directory overrides an earlier."""
    return load_plugins(VARIANTS, dirs)


def variants_for(config: Config) -> Plugins[Variant]:
    """The shipped variants and those of the folders ``config.variant_dirs`` names."""
    return load_variants(plugin_dirs(DEFAULT_DIRS, "variant_dirs", config.variant_dirs))


def get_variant(name: str, variants: Mapping[str, Variant]) -> Variant:
    """The variant called ``name``; one whose file failed to load is that file's error."""
    if name not in variants and looks_like_cell(name):
        return parse_cell(name)  # levels of factors, composed (lab.guests.factors)
    if isinstance(variants, Plugins):
        return variants.pick(name)
    try:
        return variants[name]
    except KeyError:
        raise UnknownNameError("variant", name, list(variants)) from None


def find_variant(name: str, variants: Mapping[str, Variant]) -> Variant | None:
    """The variant a stored guest was brought up as: a plug-in, or a cell of factor levels;
    None when neither is known any more (removed, broken, misspelt)."""
    if name in variants:
        return variants[name]
    if looks_like_cell(name):
        try:
            return parse_cell(name)
        except LabError:
            return None
    return None
