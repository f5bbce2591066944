"""How the commands print the app's results: one function per kind of result, and
:class:`ConsoleShow`, which prints each step of ``lab demo`` and ``lab study run`` as the
step's own command would.

Not a command (it registers nothing): commands share these instead of importing each other.
What a result holds (names, paths, errors) is printed as text, never markup (``cell``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from lab.core.context import Context
from lab.core.errors import LabError
from lab.core.inventory import LOCAL
from lab.core.text import cell

if TYPE_CHECKING:  # only named in annotations: the actions' modules load numpy and libvirt
    from lab.app.analyse import Analysis
    from lab.app.down import DownOutcome
    from lab.app.image import BuildResult
    from lab.app.prepare import Prepared
    from lab.app.report import ReportResult
    from lab.app.run import RunOutcome
    from lab.app.up import UpOutcome, UpResult


def print_prepared(ctx: Context, hosts: tuple[Prepared, ...]) -> None:
    for host in hosts:
        name = f"host {host.host}" if host.remote else "host"
        ctx.note(
            f"{name} prepared: {host.changes} change(s) made this time"
            if host.changes
            else f"{name} prepared: it already was, nothing changed"
        )


def print_built(ctx: Context, result: BuildResult) -> None:
    ctx.out.print(cell(result.directory), highlight=False)


def print_down(ctx: Context, outcome: DownOutcome) -> None:
    """What was removed; raises when a host could not be brought down."""
    removed = outcome.removed
    ctx.out.print(cell(f"removed: {', '.join(removed)}" if removed else "no lab was up"))
    if outcome.failed:
        raise LabError(
            "; ".join(f"host {h.host}: {h.error}" for h in outcome.failed),
            hint="Its record is kept: run `lab down --hosts NAME` again once it is reachable",
        )


def print_up(ctx: Context, outcome: UpOutcome) -> None:
    """Each pair that came up as a table; with several hosts, one row per host as well.

    Raises when any host failed, once the others are shown."""
    for host in outcome.hosts:
        if host.result is not None:
            print_pair(ctx, host.result)
    if len(outcome.hosts) > 1:
        ctx.out.print(hosts_table(outcome))
    if not outcome.ok:
        failed = outcome.failed
        raise LabError(
            f"{len(failed)} of {len(outcome.hosts)} hosts failed:"
            f" {', '.join(h.host for h in failed)} (their errors are in the table above)",
            hint="The other hosts' pairs are up. Fix the cause, `lab down --hosts NAME`"
            " and `lab up --hosts NAME` there",
        )
    ctx.out.print("verified: pinning as planned, RAM backing as declared. Next: lab run WORKLOAD")


def hosts_table(outcome: UpOutcome) -> Table:
    """One row per host: up with its guests, or failed with the error."""
    table = Table("host", "outcome", "guests or error", title="lab up: hosts")
    for host in outcome.hosts:
        if host.result is not None:
            guests = ", ".join(f"{g.name} ({g.variant})" for g in host.result.state.guests)
            table.add_row(cell(host.host), "up", cell(guests))
        else:
            table.add_row(cell(host.host), "[bold red]failed[/bold red]", cell(host.error))
    return table


def print_pair(ctx: Context, result: UpResult) -> None:
    state = result.state
    where = f" on {state.host}" if state.host != LOCAL else ""
    table = Table(
        "guest",
        "variant",
        "address",
        "vCPUs on",
        "kernel",
        "guest THP",
        "ready after",
        title=cell(f"lab up{where}: {state.accelerator}"),
    )
    for guest in result.state.guests:
        seconds = result.seconds[guest.name]
        table.add_row(*map(cell, (
            guest.name,
            guest.variant,
            guest.ip or "-",
            ",".join(map(str, guest.vcpu_cpus)),
            str(guest.facts.get("kernel")),
            str(guest.facts.get("thp_enabled")),
            f"{seconds.get('verified', 0):.1f} s",
        )))  # fmt: skip
    ctx.out.print(table)


def print_run(ctx: Context, outcome: RunOutcome) -> None:
    """What the run did, and what to do next."""
    if outcome.interrupted:
        ctx.err.print(
            "stopped. Every finished iteration is stored; run the same command again to resume."
        )
        return
    if outcome.decision is not None:
        ctx.out.print(cell(f"{outcome.decision.method}: {outcome.decision.reason}"))
        ctx.out.print(cell(
            f"run {outcome.key}: stopped after {outcome.completed} of at most {outcome.n}"
            f" iterations per guest, stored in {outcome.db}. Next: lab compare"
            f" --workload {outcome.workload} --paired"
        ))  # fmt: skip
        return
    if outcome.sweep:
        for value, key in outcome.sweep:
            ctx.out.print(cell(f"  {value}: run {key}"), highlight=False)
        ctx.out.print(cell(
            f"sweep {outcome.key}: {len(outcome.sweep)} runs of {outcome.n} iterations on"
            f" {outcome.guests} guests stored in {outcome.db}. Next: lab compare --workload"
            f" {outcome.workload}"),
            highlight=False,
        )  # fmt: skip
        return
    ctx.out.print(cell(
        f"run {outcome.key}: {outcome.n} iterations on {outcome.guests} guests stored in"
        f" {outcome.db}. Next: lab compare --workload {outcome.workload}"
    ))  # fmt: skip


def print_tables(ctx: Context, analysis: Analysis) -> None:
    from lab.report import formats  # deferred: heavy (scipy)

    formats.print_summary(ctx.out, analysis.comparisons)  # the answer first, as lab compare
    ctx.err.print("[dim]every table: lab compare --detail (with the same --db and --study)[/]")


def print_report(ctx: Context, result: ReportResult) -> None:
    ctx.out.print(cell(f"wrote {result.index}"), highlight=False, soft_wrap=True)


class ConsoleShow:
    """Each step's result printed as its own command prints it (compare: as tables)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def prepared(self, hosts: tuple[Prepared, ...]) -> None:
        print_prepared(self.ctx, hosts)

    def built(self, result: BuildResult) -> None:
        print_built(self.ctx, result)

    def down(self, outcome: DownOutcome) -> None:
        print_down(self.ctx, outcome)

    def up(self, outcome: UpOutcome) -> None:
        print_up(self.ctx, outcome)

    def run(self, outcome: RunOutcome) -> None:
        print_run(self.ctx, outcome)

    def analysis(self, analysis: Analysis) -> None:
        print_tables(self.ctx, analysis)

    def report(self, result: ReportResult) -> None:
        print_report(self.ctx, result)
