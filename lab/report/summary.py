"""The answer first: one row per workload, metric and pair of arms, as ``pyperf compare_to``
and ``critcmp`` print it: A's and B's mean ± margin with n, B's change in % with its
interval, and the verdict. ``lab compare`` prints it before (or, without ``--detail``,
instead of) the full tables; the HTML report opens with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from lab.core.units import format_measure, format_percent, format_ratio
from lab.report.boots import needed_text
from lab.stats.analysis import ALL, Arm, MetricComparison, Pair
from lab.stats.verdict import Outcome

HEADER = ("workload", "metric", "A", "B", "change (B vs A)", "verdict")
STYLES = {  # on a terminal: better green, worse red, equivalent plain, inconclusive dim
    Outcome.FASTER: "green",
    Outcome.SLOWER: "red",
    Outcome.EQUIVALENT: "",
    Outcome.INCONCLUSIVE: "dim",
}
WORDS = {  # the outcome in the metric's own sense ("faster" reads wrong for a throughput)
    Outcome.FASTER: "B better",
    Outcome.SLOWER: "B worse",
    Outcome.EQUIVALENT: "equivalent",
    Outcome.INCONCLUSIVE: "inconclusive",
}


@dataclass(frozen=True)
class SummaryRow:
    workload: str
    metric: str
    a: str  # "thp 12.31 ± 0.42 s (n=30)"
    b: str
    change: str  # "-3.10 % [-4.02, -2.18]"
    outcome: Outcome
    ratio: str = ""  # "shp1g 1.03× faster than thp [1.02, 1.04]"

    @property
    def cells(self) -> tuple[str, ...]:
        change = f"{self.change}; {self.ratio}" if self.ratio else self.change
        return (self.workload, self.metric, self.a, self.b, change, WORDS[self.outcome])


_TIMES = ("s", "ms", "us", "µs", "ns", "min", "h")  # units of a duration: lower is faster


def ratio_text(c: MetricComparison, pair: Pair, percent: float, low: float, high: float) -> str:
    """B against A as hyperfine and pyperf say it: "shp1g 1.05× faster than thp [1.03,
    1.07]", the ratio of the means turned so that it is at least 1 (A/B for a metric where
    lower is better), "faster" for a time or a rate, else "better"; empty without a ratio."""
    if not all(map(math.isfinite, (percent, low, high))) or min(percent, low, high) <= -100:
        return ""
    ratio, ends = 1 + percent / 100, (1 + low / 100, 1 + high / 100)  # B/A
    if c.direction == "lower":
        ratio, ends = 1 / ratio, (1 / ends[1], 1 / ends[0])  # A/B: above 1 when B is better
    timed = c.unit in _TIMES or c.unit.endswith("/s")
    good, bad = ("faster", "slower") if timed else ("better", "worse")
    word = good if ratio >= 1 else bad
    if ratio < 1:
        ratio, ends = 1 / ratio, (1 / ends[1], 1 / ends[0])
    times, interval = format_ratio(ratio, *ends)
    return f"{pair.b} {times} {word} than {pair.a} {interval}".rstrip()


def summary_rows(comparisons: Sequence[MetricComparison]) -> list[SummaryRow]:
    """One row per pair of arms of each comparison of all samples (not the trimmed view);
    when they come from several studies, each row's workload names its study."""
    rows = []
    several = len({c.study for c in comparisons if c.subset == ALL}) > 1
    for c in comparisons:
        if c.subset != ALL:
            continue
        workload = f"{c.study}: {c.workload}" if several else c.workload
        arms = {arm.label: arm for arm in c.arms}
        unit = f" {c.unit}" if c.unit else ""
        for pair in c.pairs:
            cells = []
            for label in (pair.a, pair.b):
                arm = arms[label]
                s, margin = arm.summary, arm_margin(arm)
                cells.append(f"{label} {format_measure(s.mean, margin, c.unit)} (n={s.n})")
            percent, (low, high) = primary_change(c, pair)
            by_boot = c.boots is not None and bool(c.boots.pairs)
            mark = " *" if c.stopped is not None and pair is c.pairs[0] and not by_boot else ""
            d = pair.difference
            if _tied(arms[pair.a].summary.sd, arms[pair.b].summary.sd, pair):
                rows.append(SummaryRow(workload, c.metric, cells[0], cells[1],
                                       f"{format_percent(percent)} %, no sample varies *",
                                       pair.verdict.outcome))  # fmt: skip
                continue
            if math.isfinite(percent) and math.isfinite(low):
                change = (
                    f"{format_percent(percent)} % [{format_percent(low)},"
                    f" {format_percent(high)}]{mark}"
                )
                ratio = ratio_text(c, pair, percent, low, high)
            else:  # a mean that is 0 or negative: the difference in the metric's unit
                ratio = ""
                change = f"B − A {d.diff:+.4g}{unit} [{d.diff_ci[0]:+.4g}, {d.diff_ci[1]:+.4g}]"
            if by_boot:  # the interval is the boot means'
                change += " (boot means)"
            elif not mark and d.method != "Welch":  # autocorrelated: from batch means
                change += " (batch means)"
            if (
                not mark
                and not by_boot
                and pair.verdict_confidence is not None
                and math.isfinite(low)
            ):
                change += f" (Bonferroni-adjusted for {len(c.pairs)} pairs)"
            rows.append(SummaryRow(workload, c.metric, cells[0], cells[1], change,
                                   pair.verdict.outcome, ratio))  # fmt: skip
    return rows


def arm_margin(arm: Arm) -> float:
    """The margin beside an arm's mean: t, and for autocorrelated samples the batch means'
    effective n, as in the difference's intervals the verdict reads (not the study's z·s/√n,
    which at n = 2 shows ±1.95 where t gives ±3183); ``lab.stats.analysis`` puts it in the
    arm's summary, so the tables, JSON and plots show this one too."""
    return arm.summary.margin


def primary_change(c: MetricComparison, pair: Pair) -> tuple[float, tuple[float, float]]:
    """B's change in % and the interval its verdict read: the fixed-n one (Bonferroni's,
    wider, with three or more arms), or for the pair a stopping rule read, the anytime-valid
    interval the run stopped on (``lab.stats.stopping``), or where every arm had two boots or
    more, the one from the boot means (``lab.stats.boots``)."""
    if c.boots is not None and c.boots.pairs:
        index = next(i for i, p in enumerate(c.pairs) if p is pair)
        found = c.boots.pairs[index].difference
        return found.percent, found.percent_ci
    if c.stopped is not None and pair is c.pairs[0]:
        return c.stopped.percent, c.stopped.percent_ci
    if pair.verdict_percent_ci is not None:  # Bonferroni's, the interval the verdict read
        return pair.difference.percent, pair.verdict_percent_ci
    return pair.difference.percent, pair.difference.percent_ci


def boot_notes(comparisons: Sequence[MetricComparison]) -> list[str]:
    """What the verdicts mean given the boots measured (``BootAnalysis.note``), each note
    once with the workload·metrics it is about, or "every row" when it is about all of them
    (the demo study's 24 metrics named in one footnote pushed the answer off the screen)."""
    said: dict[str, list[str]] = {}
    shown = [c for c in comparisons if c.subset == ALL]
    for c in shown:
        if c.boots is not None:
            said.setdefault(c.boots.note, []).append(f"{c.workload} · {c.metric}")
    return [
        f"{'every row' if len(names) == len(shown) else ', '.join(names)}: {note}"
        for note, names in said.items()
    ]


NEEDED_LINES = 3  # beyond this many inconclusive boot-level verdicts, one line for them all


def boots_needed_notes(comparisons: Sequence[MetricComparison]) -> list[str]:
    """For each verdict read on boot means that is inconclusive, one line: about how many
    more boots per variant would settle it (``lab.report.boots.needed_text``); with more than
    :data:`NEEDED_LINES` of them, one line with their range (a line per metric of the demo
    study's 24 would push the answer off the screen; JSON has each)."""
    lines, counts, unsettled = [], [], 0
    for c in comparisons:
        if c.subset != ALL or c.boots is None:
            continue
        for p in c.boots.pairs:
            text = needed_text(c.boots, p, c.threshold)
            if text:
                lines.append(f"{c.workload} · {c.metric}: {text}")
                if p.boots_needed is None:
                    unsettled += 1
                else:
                    counts.append(p.boots_needed)
    if len(lines) <= NEEDED_LINES:
        return lines
    said = f"{len(lines)} verdicts read on boot means are inconclusive"
    if counts:
        span = f"{min(counts):,}" if min(counts) == max(counts) else (
            f"{min(counts):,} to {max(counts):,}")  # fmt: skip
        said += (
            f": about {span} more boots per variant (at the iterations per boot measured) would"
            " narrow their intervals enough to decide; estimates, holding the boot means'"
            " observed mean and sd in each arm"
        )
    if unsettled:
        said += f"; {unsettled} would not settle with the boot means as observed"
    return [said + ". Each: lab compare --format json, boots_needed"]


def tied_notes(comparisons: Sequence[MetricComparison]) -> list[str]:
    """Why an inconclusive verdict on samples that never vary is one: its row's interval has
    no width, and only the verdict's text says the split's p is above α (the report said it,
    the terminal did not)."""
    lines = []
    for c in comparisons:
        if c.subset != ALL:
            continue
        arms = {arm.label: arm.summary for arm in c.arms}
        for pair in c.pairs:
            if _tied(arms[pair.a].sd, arms[pair.b].sd, pair):
                lines.append(f"{c.workload} · {c.metric}: {pair.verdict.text}")
    return lines


def _tied(sd_a: float, sd_b: float, pair: Pair) -> bool:
    """No sample of either arm varies and the verdict is inconclusive (``decide_constant``):
    an interval of no width that decides nothing."""
    return sd_a == 0 and sd_b == 0 and pair.verdict.outcome == Outcome.INCONCLUSIVE


def family_note(comparisons: Sequence[MetricComparison]) -> str:
    """How many verdicts the summary holds and which are adjusted for the others; empty when
    no workload·metric has more than one pair (then every verdict stands alone)."""
    shown = [c for c in comparisons if c.subset == ALL and c.pairs]
    several = [c for c in shown if len(c.pairs) > 1]
    if not several:
        return ""
    total = sum(len(c.pairs) for c in shown)
    level = f"{shown[0].confidence * 100:g} %"
    across = (
        f"; verdicts of different workload·metrics are not adjusted (each holds at {level} on"
        " its own)"
        if len(shown) > 1
        else ""
    )
    return (
        f"{total} verdicts. Where a workload·metric has m pairs, each verdict reads its"
        f" intervals at 1 − α/m (Bonferroni), so those m hold together at {level}{across}."
    )


def worse(comparisons: Sequence[MetricComparison]) -> list[SummaryRow]:
    """The rows whose verdict is that B is worse than A (``lab compare --fail-on worse``)."""
    return [row for row in summary_rows(comparisons) if row.outcome == Outcome.SLOWER]
