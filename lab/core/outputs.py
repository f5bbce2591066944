"""Files the lab writes where a user names them (``lab export --out``, ``lab report --out``):
never over the result store or any other SQLite database, and whole or not at all.

A file is written beside its destination as ``.NAME.lab-tmp-PID``, flushed to disk, renamed
over the destination and the folder flushed: Ctrl-C, a full disk or an error leaves the
destination as it was and removes the temporary file (a SIGKILL leaves it, and the next write
to that destination removes it once its process is gone). A destination that is not a regular
file (``/dev/null``, a FIFO) is written in place: renaming over it would replace it.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from lab.core.errors import LabError, StdoutError, UsageError
from lab.core.text import shown

SQLITE_HEADER = b"SQLite format 3\x00"
TEMP_MARK = ".lab-tmp-"
# The files SQLite keeps beside a database while it is open or after a crash.
STORE_COMPANIONS = ("", "-wal", "-shm", "-journal")
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class OutputFull(LabError):
    """The filesystem of a file the lab was writing had no room; the file was not changed."""

    exit_code = 7

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        super().__init__(
            f"cannot write {shown(path)}: {reason}; it was left as it was",
            hint="Free space there or pass another --out, then run the same command again",
        )


def refuse_database(path: Path, store: Path | None = None) -> None:
    """Raise :class:`UsageError` if writing ``path`` would destroy a database: it is the store
    (the same file under any name), one of the store's -wal/-shm/-journal files, or a file
    that starts with SQLite's header (a database the lab did not make)."""
    for suffix in STORE_COMPANIONS if store is not None else ():
        if _same_file(path, Path(f"{store}{suffix}")):
            raise UsageError(
                f"{shown(path)} is the result store{' ' + suffix[1:] + ' file' if suffix else ''}"
                f" ({shown(store)}): writing there would destroy it",
                hint="Nothing was written: pass another --out",
            )
    if _starts_with_sqlite_header(path):
        raise UsageError(
            f"{shown(path)} is a SQLite database: writing there would destroy it",
            hint="Nothing was written: pass another --out, or remove that file first if it is"
            " not needed",
        )


def _same_file(path: Path, other: Path) -> bool:
    """Whether ``path`` is ``other``: the same file under any name, or the same name when
    one does not exist yet (a store's -wal or -shm file is there only while it is open, and a
    folder made there would make every later write of the store fail)."""
    with contextlib.suppress(OSError):
        if os.path.samefile(path, other):
            return True
    return os.path.realpath(path) == os.path.realpath(other)


def _starts_with_sqlite_header(path: Path) -> bool:
    """Whether ``path`` is a regular file that starts with SQLite's header; read without
    blocking (a FIFO is not opened, a file that cannot be read is not a database here)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def temp_path(dest: Path, pid: int | None = None) -> Path:
    """Where a write to ``dest`` goes first: beside it, hidden, named after the writer."""
    return dest.with_name(f".{dest.name}{TEMP_MARK}{os.getpid() if pid is None else pid}")


def remove_stale_temps(dest: Path) -> list[Path]:
    """Remove the temporary files of writes to ``dest`` whose process is gone (a SIGKILL);
    returns them."""
    removed = []
    for temp in dest.parent.glob(f"{glob.escape('.' + dest.name)}{TEMP_MARK}*"):
        pid = temp.name.rsplit(TEMP_MARK, 1)[1]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
                removed.append(temp)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _in_place(dest: Path) -> bool:
    """A destination that exists and is not a regular file (a device, a FIFO)."""
    try:
        return not stat.S_ISREG(os.stat(dest).st_mode)
    except FileNotFoundError:
        return False


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _failed(dest: Path, err: OSError) -> LabError:
    if err.errno in _FULL:
        return OutputFull(dest, os.strerror(err.errno or errno.ENOSPC))
    return LabError(
        f"cannot write {dest}: {err.strerror or err}; it was left as it was",
        hint="Check that folder (space, permissions, the device), then run the same command again",
    )


@contextmanager
def replacing(dest: str | Path, store: Path | None = None) -> Iterator[Path]:
    """A path to write ``dest``'s new content to (for writers that want a name: Parquet,
    matplotlib); on a clean exit it becomes ``dest``, on any failure it is removed. Refuses
    (exit 2) a destination that is a database (:func:`refuse_database`)."""
    target = Path(os.path.realpath(dest))  # a symlink's target is what is replaced
    refuse_database(target, store)
    if _in_place(target):
        try:
            yield target
        except OSError as err:
            raise _failed(Path(dest), err) from None
        return
    remove_stale_temps(target)
    temp = temp_path(target)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    except OSError as err:
        raise UsageError(
            f"cannot write {dest}: {err.strerror or err}", hint="Pass another --out"
        ) from None
    os.close(fd)
    try:
        with contextlib.suppress(FileNotFoundError):  # the file it replaces keeps its mode
            os.chmod(temp, stat.S_IMODE(os.stat(target).st_mode))
        yield temp
        fd = os.open(temp, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
        _fsync_folder(target.parent)
    except OSError as err:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise _failed(Path(dest), err) from None
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


@contextmanager
def writing(
    dest: str | Path, store: Path | None = None, *, binary: bool = False
) -> Iterator[IO[Any]]:
    """An open file whose content becomes ``dest`` whole when the block ends cleanly, and
    never partly (:func:`replacing`); text is UTF-8 with line ends written as given."""
    with replacing(dest, store) as path:
        try:
            mode = "wb" if binary else "w"
            extra: dict[str, Any] = {} if binary else {"encoding": "utf-8", "newline": ""}
            handle = open(path, mode, **extra)  # noqa: SIM115 (closed below)
        except OSError as err:
            raise UsageError(
                f"cannot write {dest}: {err.strerror or err}", hint="Pass another --out"
            ) from None
        try:
            yield handle
        except BaseException:
            with contextlib.suppress(OSError):
                handle.close()
            raise
        handle.close()  # its last flush failing is a failed write, reported by replacing()


class GuardedStdout:
    """``sys.stdout`` for the CLI: a write or flush that fails (a full disk, EIO, a closed
    stdout) raises :class:`StdoutError`, one line and a status, where Python printed a
    traceback; a broken pipe stays a :class:`BrokenPipeError`, which the CLI answers itself.
    Everything else is the stream's own."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise StdoutError(err.errno or errno.EIO) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            raise StdoutError(err.errno or errno.EIO) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def hold_standard_fds() -> None:
    """Put /dev/null on each of file descriptors 0, 1 and 2 that is closed (``lab ... >&-``):
    otherwise the next file opened (the store!) takes its number, and what is written to
    stdout or stderr lands in it. Opened so that it cannot be used (stdin write-only, the
    others read-only), a read or write there fails with EBADF as it would have. Python made
    the stream None: it becomes one on that descriptor, so writes fail rather than vanish."""
    for fd, flags in ((0, os.O_WRONLY), (1, os.O_RDONLY), (2, os.O_RDONLY)):
        try:
            os.fstat(fd)
        except OSError:
            held = os.open(os.devnull, flags)
            if held != fd:
                os.dup2(held, fd)
                os.close(held)
    if sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    if sys.stdout is None:
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
