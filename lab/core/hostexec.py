"""Side effects on the host, behind one object that is handed in.

Everything the lab runs on the host goes through :meth:`Host.run` with an argument
list, never a shell string. Tests hand in :class:`RecordingHost` instead.
"""

from __future__ import annotations

import grp
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lab.core.errors import HostCommandError


@dataclass(frozen=True)
class FileMode:
    """A file's permission bits and group, as ``stat`` reports them."""

    mode: int  # the permission bits only (``& 0o7777``)
    gid: int
    group: str


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class Host:
    """The real host: subprocesses and files."""

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        input: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        hint: str | None = None,
    ) -> Result:
        argv = [str(a) for a in argv]
        try:
            proc = subprocess.run(
                argv,
                input=input,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=dict(env) if env is not None else None,
                check=False,
            )
        except FileNotFoundError:
            raise HostCommandError(
                argv,
                127,
                f"{argv[0]}: command not found",
                hint=hint or f"Install {argv[0]} (see `lab host check`)",
            ) from None
        except subprocess.TimeoutExpired:
            raise HostCommandError(argv, 124, f"timed out after {timeout} s", hint=hint) from None
        result = Result(tuple(argv), proc.returncode, proc.stdout, proc.stderr)
        if check and not result.ok:
            raise HostCommandError(argv, proc.returncode, proc.stderr or proc.stdout, hint=hint)
        return result

    def spawn(self, argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
        """Start a long-running host process (a server for a run); the caller stops it."""
        with open(log, "ab") as out:
            return subprocess.Popen(
                [str(a) for a in argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def which(self, program: str) -> str | None:
        return shutil.which(program)

    def read_text(self, path: str | Path) -> str:
        return Path(path).read_text()

    def exists(self, path: str | Path) -> bool:
        return Path(path).exists()

    def is_dir(self, path: str | Path) -> bool:
        return Path(path).is_dir()

    def file_mode(self, path: str | Path) -> FileMode:

        st = Path(path).stat()
        try:
            group = grp.getgrgid(st.st_gid).gr_name
        except KeyError:
            group = str(st.st_gid)
        return FileMode(st.st_mode & 0o7777, st.st_gid, group)

    def write_text(self, path: str | Path, text: str) -> None:
        Path(path).write_text(text)


Responder = Callable[[tuple[str, ...]], Result | None]


@dataclass
class RecordingHost(Host):
    """A host for unit tests: records every command, answers from canned results and files."""

    files: dict[str, str] = field(default_factory=dict)
    answers: dict[tuple[str, ...], Result] = field(default_factory=dict)
    programs: set[str] = field(default_factory=set)
    commands: list[tuple[str, ...]] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)
    modes: dict[str, FileMode] = field(default_factory=dict)  # also its directories

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        input: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        hint: str | None = None,
    ) -> Result:
        key = tuple(str(a) for a in argv)
        self.commands.append(key)
        result = self.answers.get(key, Result(key, 0, "", ""))
        if check and not result.ok:
            raise HostCommandError(list(key), result.returncode, result.stderr, hint=hint)
        return result

    def which(self, program: str) -> str | None:
        return f"/usr/bin/{program}" if program in self.programs else None

    def read_text(self, path: str | Path) -> str:
        try:
            return self.files[str(path)]
        except KeyError:
            raise FileNotFoundError(str(path)) from None

    def exists(self, path: str | Path) -> bool:
        return str(path) in self.files or str(path) in self.modes

    def is_dir(self, path: str | Path) -> bool:
        return str(path) in self.modes and str(path) not in self.files

    def file_mode(self, path: str | Path) -> FileMode:
        try:
            return self.modes[str(path)]
        except KeyError:
            raise FileNotFoundError(str(path)) from None

    def write_text(self, path: str | Path, text: str) -> None:
        self.written[str(path)] = text
        self.files[str(path)] = text
