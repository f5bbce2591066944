"""The variants of a store in their order: the first is the baseline A."""

from __future__ import annotations

from lab.store.db import Store


def variant_order(store: Store, study: str | None = None) -> list[str]:
    """Variants in the order their first guest was added: the first is the baseline A."""
    order: list[str] = []
    for guest in sorted(store.guests(study), key=lambda g: g.id):
        if guest.variant not in order:
            order.append(guest.variant)
    return order
