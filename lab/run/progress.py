"""Progress of a run: a bar per guest with rate and ETA, and each variant's running mean; for
a sweep, a bar per value and guest."""

from __future__ import annotations

import statistics
from types import TracebackType
from typing import TYPE_CHECKING

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from lab.core.context import Context
from lab.core.units import format_duration

# At import, not at the first progress line: scipy's lazy submodules would otherwise load
# while the run goes on, where they look like growth of the controller's memory.
from lab.stats.descriptive import margin_of_error

if TYPE_CHECKING:
    from lab.run.controller import Controller, GuestProgress

CONFIDENCE = 99.99  # the reference study's level, for the running margin
PLAIN_EVERY = 30.0  # seconds between progress lines when stderr is not a terminal


class RunProgress:
    def __init__(self, ctx: Context, n: int) -> None:
        self.ctx = ctx
        self.n = n
        self.progress = Progress(
            TextColumn("{task.description}", markup=False),  # names and metrics: text
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}", markup=False),
            console=ctx.err,
            disable=not ctx.err.is_terminal,
        )
        self.tasks: dict[tuple[str, str], TaskID] = {}  # (run key, guest) -> its bar
        self.labels: dict[str, str] = {}  # run key -> a sweep's value, as "total_size=16M"
        self.last_plain = 0.0

    def start(self, controller: Controller, label: str = "") -> None:
        """Bars for the run's guests; ``label`` names a sweep's value before them."""
        self.labels[controller.key] = label
        for guest in controller.guests:
            self.tasks[(controller.key, guest.record.name)] = self.progress.add_task(
                f"{label + ' ' if label else ''}{guest.record.name} ({guest.record.variant})",
                total=self.n,
                completed=len(guest.completed),
                stats="",
            )

    def describe(self, controller: Controller, guest: GuestProgress) -> str:
        parts = []
        moments = guest.moments
        if moments.count >= 2 and controller.metrics:
            metric = controller.metrics[0]
            moe = margin_of_error(moments.stdev, moments.count, CONFIDENCE)
            parts.append(f"{metric.name} {moments.mean:.4g} ± {moe:.2g} {metric.unit}")
        eta = controller.eta_seconds(guest)
        if eta is not None and guest.walls:
            rate = 1 / max(statistics.median(guest.walls), 1e-9)
            parts.append(f"{rate:.3g} it/s, ETA {format_duration(eta)}")
        if guest.failed_attempts:
            parts.append(f"{guest.failed_attempts} failed")
        if guest.unreachable:
            parts.append("unreachable, retrying")
        return " · ".join(parts)

    def update(self, controller: Controller) -> None:
        lines = []
        label = self.labels.get(controller.key, "")
        for guest in controller.guests:
            stats = self.describe(controller, guest)
            task = self.tasks.get((controller.key, guest.record.name))
            if task is not None:
                self.progress.update(task, completed=len(guest.completed), stats=stats)
            lines.append(f"{label + ' ' if label else ''}{guest.record.name}:"
                         f" {len(guest.completed)}/{self.n} {stats}")  # fmt: skip
        now = self.ctx.clock.monotonic()
        if not self.ctx.err.is_terminal and now - self.last_plain >= PLAIN_EVERY:
            self.last_plain = now
            for line in lines:
                self.ctx.note(line)

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.progress.stop()
