"""The one exception root of the lab and its data-carrying subclasses.

Every message says what went wrong *and what to do next*; the CLI prints it as a
single line and maps the class to an exit code. Library code raises, never exits.
"""

from __future__ import annotations

import os


class LabError(Exception):
    """Root of every error the lab reports to a user."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}. {self.hint}"
        return self.message


class UsageError(LabError):
    """The user asked for something that does not exist or cannot be."""

    exit_code = 2


class UnknownNameError(UsageError):
    """A variant, workload or guest name that is not known."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = sorted(known)
        super().__init__(
            f"unknown {kind} {name!r}",
            hint=f"Known {kind}s: {', '.join(self.known) or '(none)'}",
        )


class ConfigError(UsageError):
    """A configuration file with an unknown key or a wrong type."""


class PluginError(ConfigError):
    """A plug-in file (a variant, a workload) that failed to load: its file and why;
    ``name`` is the one its file gives it (``thp_prealloc.py``: ``thp-prealloc``)."""

    def __init__(
        self, kind: str, name: str, path: str, reason: str, *, hint: str | None = None
    ) -> None:
        self.kind = kind
        self.name = name
        self.path = path
        self.reason = reason
        super().__init__(
            f"{kind} plug-in {path} failed to load: {reason}",
            hint=hint or "Fix or remove that file; the other plug-ins are not affected",
        )


class PlanError(LabError):
    """A CPU or memory plan the host cannot satisfy."""

    exit_code = 3


class RequirementError(LabError):
    """A host requirement of a variant is not met."""

    exit_code = 3


class HostCommandError(LabError):
    """A command run on the host failed."""

    def __init__(self, argv: list[str], returncode: int, stderr: str, *, hint: str | None = None):
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr
        tail = stderr.strip().splitlines()[-1:] or [""]
        super().__init__(
            f"{argv[0]} exited with status {returncode}: {tail[0]}",
            hint=hint or f"Command was: {' '.join(argv)}",
        )


class GuestError(LabError):
    """A guest did not become ready or does not run as declared."""

    exit_code = 4


class GuestCommandError(GuestError):
    """A command in a reachable guest exited with an error (the guest answered)."""


class StoreError(LabError):
    """The result store cannot be read or written."""

    exit_code = 5


class StdoutError(LabError):
    """Standard output could not be written: a full disk (``>/dev/full``), an I/O error, or
    a closed standard output (``>&-``). A reader that went away (a broken pipe) is not this:
    the CLI answers it with its own status."""

    def __init__(self, code: int) -> None:
        self.errno = code
        super().__init__(f"cannot write to standard output: {os.strerror(code)}")
