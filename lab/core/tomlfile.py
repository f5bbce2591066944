"""Small TOML files the lab reads (``lab.toml``, study files), read in bounded time and memory.

A path that is a device (``/dev/zero``; ``/dev/null`` reads as empty), a FIFO or a folder is
refused before a byte is read; at most ``MAX_BYTES`` + 1 bytes are read, so a bigger file is
refused without holding it; and nesting deeper than ``MAX_DEPTH`` is refused by a linear scan
before ``tomllib`` (which recurses once per level) parses it, and again on what it returns
(dotted keys nest without a bracket). Every refusal is one :class:`ConfigError` (exit 2)
naming the file.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

from lab.core.errors import ConfigError

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32

# What a scan for nesting skips, strings (whose brackets are text) and comments, and what it
# counts: brackets, a dotted key's dots, and what ends a key (= , or a line's end). The
# multi-line forms come first; an unterminated string ends at its line's end (or the text's),
# so no text is scanned twice (linear time), and tomllib says what is wrong with it.
_TOKENS = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*(?:"{3,5}|\Z)'
    r"|'''.*?(?:'{3,5}|\Z)"
    r'|"(?:[^"\\\n]|\\.)*(?:"|(?=\n)|\Z)'
    r"|'[^'\n]*'?"
    r"|#[^\n]*"
    r"|([\[\]{}])"
    r"|(\.)"
    r"|[=,\n]",
    re.DOTALL,
)
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def read_text(path: Path, what: str, hint: str | None = None) -> str:
    """The UTF-8 text of the regular file ``path`` of at most MAX_BYTES; ``what`` names it
    in the errors ("config file", "study file")."""
    try:
        # O_NONBLOCK: a FIFO without a writer opens at once (and is then refused).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ConfigError(f"no {what} at {path}", hint=hint) from None
    except OSError as err:
        raise ConfigError(f"cannot read the {what} {path}: {_reason(err)}", hint=hint) from None
    try:
        status = os.fstat(fd)
        mode = status.st_mode
        if stat.S_ISCHR(mode) and status.st_rdev == _devnull():
            return ""  # LAB_CONFIG=/dev/null: the usual way to say "no file"
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise ConfigError(f"the {what} {path} is {kind}, not a file", hint=hint)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as err:
        raise ConfigError(f"cannot read the {what} {path}: {_reason(err)}", hint=hint) from None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise ConfigError(
            f"the {what} {path} is over {MAX_BYTES // 1024 // 1024} MiB",
            hint=hint or f"A {what} is a few lines of TOML",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"the {what} {path} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset"
            f" {err.start})",
            hint=hint or "TOML files are UTF-8",
        ) from None


def _devnull() -> int | None:
    try:
        return os.stat(os.devnull).st_rdev
    except OSError:
        return None


def parse(text: str, source: str) -> dict[str, Any]:
    """``text`` parsed as TOML; ``source`` (the file) begins every error."""
    deepest = bracket_depth(text)
    if deepest > MAX_DEPTH:
        raise _too_deep(source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{source}: not valid TOML ({err})") from None
    except RecursionError:  # the scan above should have stopped it; never a traceback
        raise _too_deep(source) from None
    if value_depth(data) > MAX_DEPTH:
        raise _too_deep(source)
    return data


def bracket_depth(text: str) -> int:
    """The deepest nesting in ``text`` (up to the first level past MAX_DEPTH) of ``[`` and
    ``{`` outside strings and comments, or of a dotted key (``a.b.c``: 2, its dots counted
    between two of ``= , [ ] { }`` or line ends; a float's one dot is followed by one)."""
    depth = deepest = dots = 0
    for match in _TOKENS.finditer(text):
        bracket, dot = match.group(1, 2)
        if dot is not None:
            dots += 1
            deepest = max(deepest, depth + dots)
            if deepest > MAX_DEPTH:
                break
            continue
        if match.group(0)[:1] in "\"'":  # a string: may be one part of a dotted key
            continue
        dots = 0
        if bracket is None:
            continue
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        else:
            depth -= 1
    return deepest


def value_depth(data: Any) -> int:
    """How deep tables and arrays nest in ``data`` (the top table is 0, as in
    :func:`bracket_depth`; up to the first level past MAX_DEPTH), without recursion."""
    deepest = 0
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        children = value.values() if isinstance(value, dict) else value
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return deepest


def _too_deep(source: str) -> ConfigError:
    return ConfigError(
        f"{source}: tables, arrays or dotted keys nested deeper than {MAX_DEPTH} levels",
        hint="Nothing the lab reads nests that deep; check the file",
    )


def _reason(err: OSError) -> str:
    if err.errno == errno.EISDIR:
        return "it is a folder"
    return err.strerror or str(err)
