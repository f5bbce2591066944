"""Waiting on a condition: poll at a short interval until it holds or time runs out."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from lab.core.clock import Clock
from lab.core.errors import GuestError

T = TypeVar("T")


def wait_for(
    what: str,
    probe: Callable[[], T | None],
    *,
    timeout: float,
    clock: Clock,
    interval: float = 0.5,
    on_timeout: Callable[[], str] = lambda: "",
) -> T:
    """Return the first truthy ``probe()``; after ``timeout`` s raise GuestError.

    ``probe`` may raise to fail fast (a guest that died will not become ready).
    ``on_timeout`` adds context to the error, such as the tail of the serial console.
    """
    deadline = clock.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if clock.monotonic() >= deadline:
            detail = on_timeout()
            raise GuestError(
                f"timed out after {timeout:.0f} s waiting for {what}",
                hint=detail or None,
            )
        clock.sleep(interval)
