"""What a multi-step action (``lab demo``, ``lab study run``) shows of each step's result.

The app returns results and never renders them: the command that started the action
hands in a :class:`Show` that prints each result as the step's own command would, and
tests hand in one that records them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from lab.app.analyse import Analysis
    from lab.app.down import DownOutcome
    from lab.app.image import BuildResult
    from lab.app.prepare import Prepared
    from lab.app.report import ReportResult
    from lab.app.run import RunOutcome
    from lab.app.up import UpOutcome


class Show(Protocol):
    def prepared(self, hosts: tuple[Prepared, ...]) -> None: ...
    def built(self, result: BuildResult) -> None: ...
    def down(self, outcome: DownOutcome) -> None: ...
    def up(self, outcome: UpOutcome) -> None: ...
    def run(self, outcome: RunOutcome) -> None: ...
    def analysis(self, analysis: Analysis) -> None: ...
    def report(self, result: ReportResult) -> None: ...
