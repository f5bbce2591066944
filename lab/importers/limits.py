"""What `lab import` accepts in a name, a value, an iteration number and a timestamp, and how
its messages quote what it refuses.

Names (variant, workload, metric, guest, host, study, unit) are data that every later command
prints: they may hold any text but control characters (C0, DEL, C1, the line and paragraph
separators, and the bidirectional embeddings, overrides and isolates, which make a terminal
show what is not there), and at most :data:`MAX_NAME` characters. Markup-like text such as
``[/x]`` is a legal name: printing it safely is the printer's business.

Numbers are refused where they would fail a later command: an iteration number past
:data:`MAX_ITERATION` (SQLite's integers end at 2**63, floats stop counting at 2**53), a
timestamp outside what ``datetime`` shows (years 1970 to 9999), and a value that is not finite
or whose size passes :data:`MAX_VALUE`: the Welch–Satterthwaite degrees of freedom that
``lab compare`` computes square a variance, a fourth power of the values, which overflows a
float64 past about 1e77 (seen: an OverflowError at 1e100); at 1e75 the fourth power is 1e300,
and the sums of squares of 2,000,000 values stay near 1e156.

A run takes at most :data:`MAX_METRICS` metrics: a name past them is malformed.

A message quotes at most :data:`QUOTED` characters of a value (:func:`shown`) and names at
most a few items (:func:`listed`), all on one line.
"""

from __future__ import annotations

from collections.abc import Sequence

from lab.core.text import CONTROL
from lab.core.text import shown as control_shown

MAX_NAME = 200  # characters of a name
MAX_ITERATION = 2**53
MAX_VALUE = 1e75
FIRST_TIME = 0.0  # 1970-01-01T00:00:00Z
END_TIME = 253_402_300_800.0  # 10000-01-01T00:00:00Z: the first second datetime cannot show
# metrics of one run: past it a name is refused as malformed, once the run has this many, so
# a file of a million names fails in seconds, not minutes; every lab compare of such a run
# would tabulate, test and plot each of them
MAX_METRICS = 10_000
QUOTED = 80  # characters of a value a message quotes
LISTED = 3  # items a message names


_good_names: set[str] = set()  # names found good: the rows of a table repeat them
_GOOD_NAMES = 4_096  # past it they are forgotten, so memory stays bounded


def shown(text: str, limit: int = QUOTED) -> str:
    """``text`` quoted for a one-line message: control characters escaped, cut after
    ``limit`` characters with "…" and its length."""
    cut = text[:limit]
    quoted = "'" + control_shown(cut).replace("'", "\\'") + "'"
    if len(text) > limit:
        quoted += f"… ({len(text):,} characters)"
    return quoted


def one_line(message: str, limit: int = 4 * QUOTED) -> str:
    """A message made one line of at most about ``limit`` characters, whatever it quotes:
    control characters escaped, the rest cut with "…"."""
    if len(message) > limit:
        message = message[:limit] + "…"
    return control_shown(message)


def listed(items: Sequence[str], limit: int = LISTED) -> str:
    """The first ``limit`` of ``items``, each :func:`shown`, and how many more."""
    named = ", ".join(shown(item, QUOTED // 2) for item in items[:limit])
    more = len(items) - limit
    return f"{named} and {more:,} more" if more > 0 else named


def name_problem(field: str, text: str) -> str | None:
    """Why ``text`` cannot be the ``field`` (variant, metric ...) of a sample; None if it can."""
    if text in _good_names:
        return None
    if len(text) > MAX_NAME:
        return f"{field} {shown(text)} is longer than {MAX_NAME} characters"
    bad = CONTROL.search(text)
    if bad is not None:
        return (
            f"{field} {shown(text)} holds a control character (U+{ord(bad.group()):04X}"
            f" at character {bad.start() + 1})"
        )
    if len(_good_names) >= _GOOD_NAMES:
        _good_names.clear()
    _good_names.add(text)
    return None


def value_problem(value: float) -> str | None:
    """Why ``value`` cannot be stored as a sample's value; None if it can."""
    if -MAX_VALUE <= value <= MAX_VALUE:  # False for NaN too
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return f"value {value} is not a finite number"
    return f"value {value!r} is larger than ±{MAX_VALUE:.0e} (see lab import --help)"


def iteration_problem(number: int) -> str | None:
    if number < 1:
        return f"iteration {number} is not positive (iterations count from 1)"
    if number > MAX_ITERATION:
        return f"iteration {shown(str(number), 30)} is past 2**53"
    return None


def time_problem(stamp: float) -> str | None:
    if FIRST_TIME <= stamp < END_TIME:  # False for NaN too
        return None
    return f"timestamp {stamp:.6g} is not a time between the years 1970 and 9999"
