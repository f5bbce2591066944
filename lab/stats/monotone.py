"""The smallest n at which a condition that only ever turns true (power reaching its goal, a
verdict settling) holds: galloping from a first guess, then bisecting. ``lab plan``'s sample
sizes, a factorial's n per cell and the boots an inconclusive verdict needs all search so."""

from __future__ import annotations

from collections.abc import Callable


def smallest_holding(
    holds: Callable[[int], bool], *, start: int, floor: int, cap: int
) -> int | None:
    """The smallest n in ``floor``..``cap`` at which ``holds(n)``; None when ``holds(cap)``
    is false. ``holds`` must only ever turn true as n grows; the search gallops from
    ``start`` (down while it holds, up while it does not, doubling its step) and bisects the
    last step."""
    guess = min(cap, max(floor, start))
    step = 1
    if holds(guess):
        high = guess
        while high > floor and holds(max(floor, high - step)):
            high, step = max(floor, high - step), 2 * step
        low = max(floor - 1, high - step)  # holds(low) is false, or low is below the floor
    else:
        low = guess
        while not holds(min(cap, low + step)):
            if low + step >= cap:
                return None
            low, step = low + step, 2 * step
        high = min(cap, low + step)
    while high - low > 1:
        middle = (low + high) // 2
        if middle >= floor and holds(middle):
            high = middle
        else:
            low = middle
    return high
