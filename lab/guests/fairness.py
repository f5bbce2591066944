"""Twin fairness: the difference between two guests, explained by variant and identity."""

from __future__ import annotations

from lab.core.errors import ConfigError
from lab.guests.diff import Change, diff_domains
from lab.guests.twins import Guest


def pair_changes(a: Guest, b: Guest) -> list[Change]:
    """Classified differences between the domains of guests ``a`` and ``b``.

    A difference is a variant's when it lies in a part of the domain that the variant of
    either guest declares it changes (:attr:`~lab.guests.variant.Variant.changes`); what a
    variant's ``apply`` changes beyond its declaration stays unexplained, so the
    declaration is checked on every pair, not trusted.
    """
    declared: dict[str, tuple[str, ...]] = {}
    for guest in (a, b):
        variant = guest.variant
        for part in variant.changes:
            if not part.startswith("/domain/"):
                raise ConfigError(
                    f"variant {variant.name} declares it changes {part!r}, not a part of the"
                    " domain",
                    hint="Declare the elements its apply() changes, e.g."
                    " MemoryBacking.XPATH ('/domain/memoryBacking')",
                )
        declared[variant.name] = tuple(variant.changes)
    return diff_domains(a.spec.to_xml(), b.spec.to_xml(), declared)
