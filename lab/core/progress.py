"""Progress shown while long work runs: a live line per guest with its current phase."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table

from lab.core.text import cell


class PhaseBoard:
    """A live table: one row per guest, its phase, and how far along the phases it is."""

    def __init__(self, console: Console, phases: Sequence[str]) -> None:
        self.console = console
        self.phases = list(phases)
        self.rows: dict[str, str] = {}
        self.live = Live(self._render(), console=console, refresh_per_second=4, transient=False)

    def _render(self) -> Table:
        table = Table.grid(padding=(0, 2))
        for guest, phase in self.rows.items():
            step = self.phases.index(phase) + 1 if phase in self.phases else 0
            bar = "█" * step + "·" * (len(self.phases) - step)
            table.add_row(cell(guest), bar, cell(phase))  # names and words: never markup
        return table

    def update(self, guest: str, phase: str) -> None:
        self.rows[guest] = phase
        if self.console.is_terminal:
            self.live.update(self._render())
        else:  # logs and CI: one plain line per change
            self.console.print(cell(f"{guest}: {phase}"), highlight=False)

    def __enter__(self) -> PhaseBoard:
        if self.console.is_terminal:
            self.live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.console.is_terminal:
            self.live.stop()
