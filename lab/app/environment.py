"""What ``lab compare`` says about the environment of the runs it compares: every fact in
which the twins differ beyond their variant, what changed between a run's starts, and with
``--against`` every fact in which the two runs differ (a THP mode changed between runs is
a different experiment). The facts are those ``lab run`` records at every start
(``lab.run.environment``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from lab.app.analyse import Selection, store_path
from lab.app.runs import declared_by_variants, find_run, find_sweep
from lab.core.context import Context
from lab.run.backing import aged_note, describe, problem
from lab.run.environment import (
    BOOT_FACTS,
    Difference,
    changes,
    comparable_host,
    differences,
    latest,
    twin_differences,
)
from lab.run.qemuargs import (
    CONSEQUENCE,
    UNEXPLAINED,
    compare_cmdlines,
    declared_options,
    parse_cmdline,
)
from lab.store import Store
from lab.store.records import EvidenceSummary, RunRecord


@dataclass(frozen=True)
class EnvironmentReport:
    notes: list[str]  # what backed each twin's memory
    warnings: list[str]  # what could change a result: differences, a variant not in effect

    @property
    def pointer(self) -> str:
        """The notes in one line, for the summary: ten lines of QEMU options and backing
        census after the table pushed the answer off the screen (``--detail`` has them)."""
        if not self.notes:
            return ""
        return (
            f"evidence: {len(self.notes)} note(s) on what backed each twin's memory and what"
            " QEMU was told beyond the variant: lab compare --detail, or lab report"
        )


def environment_report(ctx: Context, selection: Selection) -> EnvironmentReport:
    """What the recorded environment of the runs ``selection`` names says about them."""
    with Store.open(store_path(ctx, selection), create=False) as store:
        notes, problems = [], []
        for run in _selected(store, selection):
            now = latest(store.environment(run.id))
            for (scope, name), facts in now.items():
                if scope != "guest":
                    continue
                said = describe(name, facts)
                notes += [f"run {run.key}: memory of {said}"] if said else []
                host = now.get(("host", facts.get("host", "local")), {})
                variant = facts.get("variant", "?")
                wrong = problem(name, variant, facts, host)
                problems += [f"run {run.key}: {wrong}"] if wrong else []
                age = aged_note(name, variant, facts, host)
                notes += [f"run {run.key}: {age}"] if age else []
            notes += [f"run {run.key}: {line}" for line in per_iteration(store.evidence(run.id))]
            told, odd = qemu_told(now, declared_by_variants(ctx.config, now)[1])
            notes += [f"run {run.key}: {line}" for line in told]
            problems += [f"run {run.key}: {line}" for line in odd]
        warnings = environment_warnings(store, selection, ctx)
        return EnvironmentReport(notes, problems + warnings)


def per_iteration(found: Sequence[EvidenceSummary]) -> list[str]:
    """One line per guest: what backed its memory over the run's iterations (the
    ``backing.*`` metrics): sizes as their mean and range, counters as a mean per iteration."""
    by_guest: dict[str, list[EvidenceSummary]] = {}
    for e in found:
        by_guest.setdefault(e.guest, []).append(e)
    lines = []
    for guest, metrics in by_guest.items():
        parts = []
        for e in metrics:
            name = e.metric.removeprefix("backing.")
            if e.unit in ("KiB", "pages"):
                parts.append(f"{name} {e.mean:,.0f} {e.unit} ({e.low:,.0f}–{e.high:,.0f})")
            else:
                parts.append(f"{name} {e.mean:,.3g} per iteration")
        n = max(e.n for e in metrics)
        lines.append(f"{guest} over {n} iterations: {', '.join(parts)}")
    return lines


def qemu_told(
    now: dict[tuple[str, str], dict[str, str]], declared: dict[str, tuple[str, ...]] | None = None
) -> tuple[list[str], list[str]]:
    """What the twins' QEMU command lines say beyond the variant: the consequences libvirt
    added (as notes) and anything unexplained (as warnings), from a run's last start.
    ``declared``: variant name -> the parts of the domain it declares it changes."""
    guests = [(name, json.loads(f.get("qemu_cmdline", "[]") or "[]"))
              for (scope, name), f in now.items() if scope == "guest"]  # fmt: skip
    if len(guests) != 2 or not all(args for _, args in guests):
        return [], []
    (name_a, args_a), (name_b, args_b) = guests
    found = compare_cmdlines(parse_cmdline("\0".join(args_a)), parse_cmdline("\0".join(args_b)),
                             name_a, name_b, declared_options(declared or {}))  # fmt: skip
    notes, odd = [], []
    for d in found:
        told = f"{d.option}: {name_a} {d.a}, {name_b} {d.b}"
        if d.kind == CONSEQUENCE:
            notes.append(f"QEMU was told more than the variant, {told} ({d.meaning})")
        elif d.kind == UNEXPLAINED:
            odd.append(f"the twins' QEMU command lines differ beyond the variant, {told}")
    return notes, odd


def environment_warnings(
    store: Store, selection: Selection, ctx: Context | None = None
) -> list[str]:
    """One line per difference that could change a result, for the runs ``selection`` names."""
    if selection.against:
        first = find_run(store, selection.run or "", selection.study)
        second = find_run(store, selection.against, selection.study)
        return [
            f"runs {first.key} and {second.key} differ in {d.text}"
            for d in _between(store, first, second)
        ]
    lines = []
    for run in _selected(store, selection):
        env = store.environment(run.id)
        facts, _ = declared_by_variants(ctx.config if ctx else None, latest(env))
        lines += [f"run {run.key} ({run.workload}): the twins differ beyond their variant"
                  f" in {d.text}" for d in twin_differences(env, facts)]  # fmt: skip
        lines += [f"run {run.key} ({run.workload}) changed between its starts: {line}"
                  for line in changes(env)]  # fmt: skip
    return lines


def _selected(store: Store, selection: Selection) -> list[RunRecord]:
    if selection.sweep and not selection.run:
        keys = {r.run_key for r in find_sweep(store, selection.sweep, selection.study).runs}
        return [r for r in store.runs(selection.study) if r.key in keys]
    if selection.run:
        found = [find_run(store, selection.run, selection.study)]
        if selection.against:
            found.append(find_run(store, selection.against, selection.study))
        return found
    return [r for r in store.runs(selection.study) if selection.workload in (None, r.workload)]


def _between(store: Store, first: RunRecord, second: RunRecord) -> list[Difference]:
    """The facts of each variant's guest, and of the hosts, that differ between two runs."""
    sides = [latest(store.environment(run.id)) for run in (first, second)]
    by_variant = [
        {facts.get("variant", name): facts for (scope, name), facts in side.items()
         if scope == "guest"}
        for side in sides
    ]  # fmt: skip
    found: list[Difference] = []
    for variant in sorted(set(by_variant[0]) & set(by_variant[1])):
        pair = [(f"{run.key} {variant}",
                 {k: v for k, v in side[variant].items() if k != "host" and k not in BOOT_FACTS})
                for run, side in zip((first, second), by_variant, strict=True)]  # fmt: skip
        found += differences(pair, "guest", frozenset())
    hosts = [
        {name: facts for (scope, name), facts in side.items() if scope == "host"} for side in sides
    ]
    for host in sorted(set(hosts[0]) & set(hosts[1])):
        pair = [(f"{run.key} {host}", comparable_host(side[host]))
                for run, side in zip((first, second), hosts, strict=True)]  # fmt: skip
        found += differences(pair, "host", frozenset())
    return found
