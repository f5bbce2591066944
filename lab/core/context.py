"""The side effects a command works with, made once by the CLI and handed in.

Nothing in the library opens its own libvirt connection or runs its own commands: it
receives a :class:`Context` (or just the part it needs) so tests can hand in fakes or
libvirt's test driver, and integration tests the real thing.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.segment import Segment

from lab.core.clock import Clock
from lab.core.config import Config
from lab.core.errors import LabError
from lab.core.hostexec import Host
from lab.core.text import has_control, literal, shown

if TYPE_CHECKING:
    import libvirt


def open_libvirt(uri: str) -> libvirt.virConnect:
    import libvirt  # deferred: every command imports the context, few talk to libvirt

    # libvirt prints every error to stderr by default; the lab reports them itself.
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
    try:
        return libvirt.open(uri)
    except libvirt.libvirtError as err:
        raise LabError(
            f"cannot connect to libvirt at {uri}: {err.get_error_message()}",
            hint="Start it with `lab host prepare` (or `libvirtd -d` as root), then retry",
        ) from None


class _Console(Console):
    """A rich console that writes no control character it was not asked to: a name with
    an escape sequence in it (from a file, a guest or the store) that reached a table
    unescaped is shown escaped (``\\x1b``), never sent to the terminal. The lab's own
    styles and cursor moves (a live progress display) are rendered after this, as usual."""

    def render(self, renderable: Any, options: Any = None) -> Iterator[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and has_control(segment.text, lines=True):
                yield Segment(shown(segment.text, lines=True), segment.style)
            else:
                yield segment

    def on_broken_pipe(self) -> None:
        """A reader that went away (``lab export | head -1``) is lab.cli's to answer, with
        its documented status, not rich's exit 1."""
        raise BrokenPipeError


def _console(stderr: bool) -> Console:
    """A rich console as wide as the terminal, or ``$COLUMNS``; into a file or pipe without
    ``$COLUMNS`` it is 160 wide, so tables are not cut at 80 columns.

    No emoji codes: the lab prints none, and a guest's output or a file name with
    ``:name:`` in it is printed as it is (it also spares a long run the late import of
    rich's emoji table, 0.7 MiB, at its first progress line)."""

    stream = sys.stderr if stderr else sys.stdout
    columns = os.environ.get("COLUMNS", "")
    sized = stream.isatty() or (columns.isdigit() and int(columns) > 0)  # rich reads COLUMNS
    return _Console(stderr=stderr, width=None if sized else 160, emoji=False)


@dataclass
class Context:
    config: Config
    host: Host = field(default_factory=Host)
    clock: Clock = field(default_factory=Clock)
    out: Console = field(default_factory=lambda: _console(stderr=False))
    err: Console = field(default_factory=lambda: _console(stderr=True))
    connect: Any = open_libvirt  # uri -> virConnect

    @functools.cached_property
    def libvirt(self) -> libvirt.virConnect:
        return self.connect(self.config.libvirt_uri)

    def print_json(self, document: Any) -> None:
        """A document for programs (``--json``) on stdout, as it is: no markup, no colour."""
        self.out.out(json.dumps(document, indent=2), highlight=False)

    def note(self, message: str) -> None:
        """A remark for the user on stderr, so stdout stays clean for data. ``message`` is
        plain text, never markup: it names what came from files and guests."""
        self.err.print(f"[dim]lab:[/dim] {literal(message, lines=True)}", highlight=False,
                       soft_wrap=True)  # fmt: skip

    def warn(self, message: str) -> None:
        """A warning on stderr; ``message`` is plain text, as for :meth:`note`."""
        self.err.print(
            f"[bold yellow]lab: warning:[/bold yellow] {literal(message, lines=True)}",
            highlight=False, soft_wrap=True,
        )  # fmt: skip
