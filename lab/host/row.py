"""One row of ``lab host check``: a requirement, its state, what is seen and what fixes it."""

from __future__ import annotations

from dataclasses import dataclass

from lab.host.environment import NOT_AVAILABLE

OK, WARN, MISSING = "ok", "warn", "missing"
# The knob does not exist on this host (no cpufreq under TCG, no boost file on Intel):
# nothing to fix, never a failure.
NA = NOT_AVAILABLE
STATES = (OK, WARN, MISSING, NA)


@dataclass(frozen=True)
class Row:
    name: str
    state: str
    detail: str
    fix: str = ""
