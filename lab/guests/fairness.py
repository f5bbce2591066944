"""Twin fairness: the difference between two guests, explained by variant and identity."""

from __future__ import annotations

from dataclasses import replace

from lab.guests.diff import Change, diff_domains, variant_delta_paths
from lab.guests.twins import Guest


def pair_changes(a: Guest, b: Guest) -> list[Change]:
    """Classified differences between the domains of guests ``a`` and ``b``.

    A variant's declared delta is what its ``apply`` changes on the *other* guest's
    base with the variant removed, so it is measured, not trusted.
    """
    neutral_a = replace(a.spec, memory_backing=None)
    neutral_b = replace(b.spec, memory_backing=None)
    paths = variant_delta_paths(neutral_a.to_xml(), a.variant.apply(neutral_a).to_xml())
    paths |= variant_delta_paths(neutral_b.to_xml(), b.variant.apply(neutral_b).to_xml())
    return diff_domains(a.spec.to_xml(), b.spec.to_xml(), paths)
