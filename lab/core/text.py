"""What came from a file, a guest or the store, made safe to print: names are data, never
terminal control or rich markup.

A variant named ``[/x]`` crashed every table that showed it in rich's markup parser,
``[bold red]X[/bold red]`` printed a bold X and ``\\x1b[2J`` cleared the screen. ``shown``
writes control characters (and the invisible ones that reorder text) the way Python writes
them in a string (``\\x1b``); ``literal`` does that and escapes rich markup, for text that
goes into a markup string; ``cell`` makes a table cell that is never parsed as markup.
"""

from __future__ import annotations

import re

from rich.markup import escape
from rich.text import Text

# C0 and C1 controls, DEL, the line and paragraph separators, and the bidirectional marks
# and overrides ("Trojan Source").
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
CONTROL = _ANY_CONTROL = re.compile(f"[\x00-\x1f{_OTHERS}]")
_CONTROL_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")  # tab and line feed kept
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def shown(value: object, *, lines: bool = False) -> str:
    """``value`` as text with every control character written as an escape (``\\x1b``);
    with ``lines``, line ends and tabs are kept (a command's output, several lines)."""
    text = str(value)
    if lines:
        return _CONTROL_BUT_LINES.sub(_escaped, text)
    return _ANY_CONTROL.sub(_escaped, text)


def has_control(text: str, *, lines: bool = False) -> bool:
    return (_CONTROL_BUT_LINES if lines else _ANY_CONTROL).search(text) is not None


def literal(value: object, *, lines: bool = False) -> str:
    """``value`` for a rich markup string: :func:`shown`, with its markup escaped."""
    return escape(shown(value, lines=lines))


def cell(value: object, style: str = "") -> Text:
    """``value`` as a table cell or a line: rich Text, never parsed as markup."""
    return Text(shown(value, lines=True), style=style)


MESSAGE_CHARS = 600  # the longest error line the CLI prints: a few hundred characters
QUOTED_CHARS = 100  # a quoted value longer than this is cut in an error line
QUOTED_KEPT = 80  # to its first characters (as lab.importers quote a value: 80 at most)
_LINE_ENDS = re.compile(r"\s*(?:\r\n|\r|\n)\s*")
_LONG_QUOTED = re.compile(f"'[^']{{{QUOTED_CHARS},}}'|\"[^\"]{{{QUOTED_CHARS},}}\"")
WORD_CHARS = 120  # an unquoted word (a path) longer than this is cut in its middle,
WORD_KEPT = (60, 20)  # to its first and last characters, so what follows it still shows
_LONG_WORD = re.compile(f"\\S{{{WORD_CHARS + 1},}}")


def one_line(text: object, limit: int = MESSAGE_CHARS) -> str:
    """``text`` as one line of at most ``limit`` characters: line ends joined with a
    space, control characters shown (:func:`shown`), a long quoted value cut to its start
    and "…", a long unquoted word (a path) cut in its middle so that what follows it still
    shows, and what is still too long cut at the end with "…". A 1 MB value or 100,000
    unknown column names in an error were printed whole."""
    line = shown(_LINE_ENDS.sub(" ", str(text)))
    line = _LONG_QUOTED.sub(lambda m: f"{m.group()[: QUOTED_KEPT + 1]}…{m.group()[0]}", line)
    head, tail = WORD_KEPT
    line = _LONG_WORD.sub(lambda m: f"{m.group()[:head]}…{m.group()[-tail:]}", line)
    return line if len(line) <= limit else line[: limit - 1] + "…"
