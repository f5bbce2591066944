"""What `lab import` reads: a file, or standard input (``-``), as lines of text of bounded length.

Nothing is read whole. The bytes come in chunks and leave as lines, so memory does not grow
with the input: a line longer than :data:`MAX_LINE` bytes is a malformed line (reported to
the caller, then skipped to its end without keeping it), and a NUL byte or bytes that are
not UTF-8 make the input binary, refused at once with their offset. A device or a pipe that
never ends therefore fails within a chunk or a line's bound, instead of being buffered.

Lines are split at ``\\n`` only and keep it (the ``csv`` module needs it for a quoted field
that spans lines); their numbers count from 1.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from lab.core.errors import UsageError

MAX_LINE = 1 << 20  # bytes: a results line is a few hundred; this bounds what one line may hold
CHUNK = 1 << 18  # bytes read at a time (less than MAX_LINE, so only a line's start can be long)
HEAD = 1 << 16  # bytes at most that the format is told from
STDIN = "-"


class NotTextError(UsageError):
    """A binary file given to `lab import`: nothing was read or stored."""

    def __init__(self, path: Path, why: str) -> None:
        self.path = path
        super().__init__(
            f"{path} is not a text results file ({why}); nothing was stored",
            hint="Import CSV, JSONL, the JSON of hyperfine, pyperf or pytest-benchmark, or the"
            " text output of time, GNU time -v, sysbench or iperf3"
            " (see `lab import --help`)",
        )


class Input:
    """One input: the name it was given by, the name its samples' sources carry, its bytes.

    :meth:`head` is the text the format is told from; :meth:`lines` then yields every line,
    the head's included. Each is read once.
    """

    def __init__(self, name: str, source: str, stream: BinaryIO, suffix: str = "") -> None:
        self.name = name  # as the user gave it: what messages say
        self.source = source  # the absolute path, or "stdin": what each sample's source says
        self.suffix = suffix.lower()  # ".csv", ".jsonl": the first clue to the format
        self._stream = stream
        self._read = getattr(stream, "read1", stream.read)  # a pipe: what is there, not CHUNK
        self._start = b""  # bytes read for the head, not yet given out as lines
        self._head: str | None = None
        self._bom = 0  # bytes of a UTF-8 byte order mark at the start, skipped
        # What the input is: its bytes' SHA-256, made as they are read (lab.importers.identity)
        self._hash = hashlib.sha256()
        self.size = 0  # bytes read so far
        self.line_count = 0  # lines given out, once they all were
        self.mark: int | None = None  # an offset whose digest of the bytes before is wanted
        self.marked: str | None = None  # that digest, once the bytes up to mark were read
        self.expected: str | None = None  # what marked must be: the bytes did not change

    @property
    def path(self) -> Path:
        return Path(self.name)

    def close(self) -> None:
        if self.name != STDIN:
            self._stream.close()

    def digest(self) -> str:
        """The SHA-256 of the bytes read so far (all of them, once :meth:`lines` ended)."""
        return self._hash.hexdigest()

    def watch(self, mark: int) -> None:
        """Have :attr:`marked` hold the SHA-256 of the first ``mark`` bytes, once they are
        read. Called before the lines are given out: the head's bytes are all still here."""
        if mark <= self.size:
            self.marked = hashlib.sha256(self._start[:mark]).hexdigest()
        else:
            self.mark = mark

    def changed(self) -> bool:
        """Whether the bytes up to :attr:`mark` were not the :attr:`expected` ones."""
        return self.expected is not None and self.marked != self.expected

    def prefix_digest(self, size: int) -> str | None:
        """The SHA-256 of the first ``size`` bytes of the file, read apart from the stream
        (which stays where it is); None for standard input, or a file that is shorter."""
        if self.name == STDIN:
            return None
        digest, at = hashlib.sha256(), 0
        try:
            fd = self._stream.fileno()
            while at < size:
                data = os.pread(fd, min(CHUNK, size - at), at)
                if not data:
                    return None
                digest.update(data)
                at += len(data)
        except OSError:
            return None
        return digest.hexdigest()

    def _chunk(self) -> bytes:
        try:
            chunk = self._read(CHUNK)
        except OSError as err:
            raise UsageError(
                f"cannot read {self.name}: {err.strerror or err}",
                hint="Check the path and its permissions",
            ) from None
        mark, size = self.mark, self.size
        if mark is not None and self.marked is None and size <= mark <= size + len(chunk):
            self._hash.update(chunk[: mark - size])
            self.marked = self._hash.hexdigest()
            self._hash.update(chunk[mark - size :])
        else:
            self._hash.update(chunk)
        self.size = size + len(chunk)
        return chunk

    def head(self) -> str:
        """The input's first complete non-blank line at least (up to :data:`HEAD` bytes), as
        text: what :func:`lab.importers.ingest.detect_format` reads."""
        if self._head is None:
            start, ended = b"", False
            while len(start) < HEAD and start.lstrip().find(b"\n") < 0:
                chunk = self._chunk()
                ended = not chunk
                if ended:
                    break
                start += chunk
            self._check_bytes(start, 0)
            if start.startswith(codecs.BOM_UTF8):  # what some editors write first: not text
                self._bom = len(codecs.BOM_UTF8)
            self._start = start
            try:  # a character cut at the end of what was read is not an error (yet)
                text = start[self._bom :]
                self._head = codecs.getincrementaldecoder("utf-8")().decode(text, final=ended)
            except UnicodeDecodeError as err:
                raise self._not_utf8(text, self._bom, err) from None
        return self._head

    def lines(self, too_long: Callable[[int], None]) -> Iterator[str]:
        """Every line as text; ``too_long(number)`` is told of a line past :data:`MAX_LINE`
        (it may raise), which is then read to its end and given out as an empty line."""
        for block in self.blocks(too_long):
            yield from block

    def blocks(self, too_long: Callable[[int], None]) -> Iterator[list[str]]:
        """:meth:`lines` as lists of the lines of each chunk read (a pipe's may be short).
        ``too_long`` is told of a long line only when the block after the lines before it is
        asked for, as :meth:`lines` tells it when that line is: a reader that reads each block
        whole before the next one reports malformed lines in the order of the lines."""
        self.head()
        carry = b""  # the start of a line whose end has not been read yet
        offset = self._bom  # of carry's first byte in the input
        number = 0  # lines given out so far
        skipping = False  # inside a line too long: drop bytes up to its end
        chunk = self._start[self._bom :]
        self._start = b""
        while True:
            if not chunk:
                chunk = self._chunk()
                if not chunk:
                    break
                self._check_bytes(chunk, offset + len(carry))
            if skipping:
                end = chunk.find(b"\n")
                if end < 0:
                    offset += len(chunk)
                    chunk = b""
                    continue
                skipping = False
                number += 1
                yield ["\n"]
                offset += end + 1
                chunk = chunk[end + 1 :]
                continue
            data = carry + chunk if carry else chunk
            chunk = b""
            first = data.find(b"\n")
            if first < 0 or first > MAX_LINE:
                if first > MAX_LINE or len(data) > MAX_LINE:
                    too_long(number + 1)
                    skipping = first < 0
                    if not skipping:  # its end is here: give the line out empty
                        number += 1
                        yield ["\n"]
                        offset += first + 1
                        chunk = data[first + 1 :]
                    else:
                        offset += len(data)
                    carry = b""
                else:
                    carry = data
                continue
            last = data.rfind(b"\n")
            text = self._decode(data[: last + 1], offset)
            carry = data[last + 1 :]
            offset += last + 1
            block = list(io.StringIO(text))  # split at "\n" only, as str.splitlines does not
            number += len(block)
            yield block
        if carry:
            number += 1
            yield [self._decode(carry, offset)]
        self.line_count = number

    def _check_bytes(self, data: bytes, offset: int) -> None:
        nul = data.find(0)
        if nul >= 0:
            raise NotTextError(self.path, f"it holds a NUL byte at offset {offset + nul}")

    def _decode(self, data: bytes, offset: int) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise self._not_utf8(data, offset, err) from None

    def _not_utf8(self, data: bytes, offset: int, err: UnicodeDecodeError) -> NotTextError:
        byte, where = data[err.start], offset + err.start
        return NotTextError(self.path, f"byte {byte:#04x} at offset {where} is not UTF-8")


def open_input(name: str, stdin: BinaryIO | None = None) -> Input:
    """The input ``name`` names: ``-`` is ``stdin``; a folder, a FIFO, a device or a socket, a
    missing or unreadable file is refused by name, without waiting for it."""
    if name == STDIN:
        if stdin is None:
            raise UsageError(
                "standard input (-) is closed, so there is nothing to read",
                hint="Pipe the results in (`... | lab import -`), or name a file",
            )
        return Input(STDIN, "stdin", stdin)
    path = Path(name)
    try:
        _regular(name, os.stat(name).st_mode)
        # Not blocking: a FIFO put in its place since is opened at once, then refused.
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        hint = "Check the path of the results file"
        raise UsageError(f"{name} does not exist", hint=hint) from None
    except OSError as err:
        raise UsageError(
            f"cannot read {name}: {err.strerror or err}", hint="Check the path and its permissions"
        ) from None
    try:
        _regular(name, os.fstat(fd).st_mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return Input(name, str(path.resolve()), os.fdopen(fd, "rb"), path.suffix)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _regular(name: str, mode: int) -> None:
    """Refuse what is not a regular file: a folder, and what may never end or never come (a
    FIFO with no writer waits forever, /dev/zero never ends); ``-`` reads a pipe."""
    if stat.S_ISDIR(mode):
        raise UsageError(
            f"{name} is a folder, not a results file",
            hint=f"Name the files in it, e.g. `lab import {name.rstrip('/')}/*.csv`",
        )
    if not stat.S_ISREG(mode):
        kind = next((what for test, what in _KINDS if test(mode)), "not a regular file")
        raise UsageError(
            f"{name} is {kind}, not a results file",
            hint=f"Import a regular file, or pipe what it gives: `lab import - < {name}`",
        )
