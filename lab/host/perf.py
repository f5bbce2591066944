"""perf's counters as ``perf stat -x,`` prints them, and which events the lab asks for.

``lab.run.counters`` counts the guests' vCPU threads over each iteration with them;
``lab host check`` lists which events this host counts.

The output read is ``perf stat -x,``: ``value,unit,event,run-time,percentage[,metric,unit]``
per line, ``<not supported>`` or ``<not counted>`` in place of a value (perf-stat(1), "CSV
FORMAT").
"""

from __future__ import annotations

from dataclasses import dataclass

SOFTWARE = ("task-clock", "page-faults", "context-switches", "cpu-migrations")
HARDWARE = (
    "cycles", "instructions", "dTLB-load-misses", "dTLB-store-misses", "iTLB-load-misses",
)  # fmt: skip
CHOICES = ("none", "software", "all")
NOT_COUNTED = ("<not supported>", "<not counted>")


@dataclass(frozen=True)
class Reading:
    event: str
    value: float | None  # None: not supported or not counted
    unit: str  # perf's ("msec" for task-clock, "" for counts)
    note: str = ""  # "<not supported>"

    @property
    def metric(self) -> str:
        """``perf.page_faults``: the metric it is stored as."""
        return "perf." + self.event.replace("-", "_").replace(":", "_")

    @property
    def metric_unit(self) -> str:
        return "ms" if self.unit == "msec" else "count"


NO_READING = Reading("", None, "")  # an event perf did not report


def counted(readings: dict[str, Reading], events: tuple[str, ...]) -> tuple[str, ...]:
    """Those of ``events`` perf gave a value for, in their order."""
    return tuple(e for e in events if readings.get(e, NO_READING).value is not None)


def refused(readings: dict[str, Reading], events: tuple[str, ...]) -> list[str]:
    """Those of ``events`` perf gave no value for, each with why: "cycles (<not supported>)"."""
    counts = counted(readings, events)
    return [f"{e} ({readings[e].note or 'refused'})" if e in readings else f"{e} (not reported)"
            for e in events if e not in counts]  # fmt: skip


TLB_MISSES = ("dTLB-load-misses", "dTLB-store-misses", "iTLB-load-misses")


def per_kilo_instruction(events: tuple[str, ...]) -> dict[str, str]:
    """The derived metrics ``events`` allow: each TLB miss count per 1,000 instructions
    (``perf.dTLB_load_misses_per_kinstr``), by the miss event, where both are counted."""
    if "instructions" not in events:
        return {}
    return {e: Reading(e, None, "").metric + "_per_kinstr" for e in TLB_MISSES if e in events}


def derived(readings: dict[str, Reading], events: tuple[str, ...]) -> dict[str, float]:
    """The values of :func:`per_kilo_instruction`'s metrics for one window's readings."""
    instructions = readings.get("instructions", NO_READING).value
    if not instructions:
        return {}
    return {metric: 1000.0 * value / instructions
            for event, metric in per_kilo_instruction(events).items()
            if (value := readings.get(event, NO_READING).value) is not None}  # fmt: skip


def events_for(choice: str) -> tuple[str, ...]:
    if choice not in CHOICES:
        raise ValueError(f"counters {choice!r}: one of {', '.join(CHOICES)}")
    return {"none": (), "software": SOFTWARE, "all": SOFTWARE + HARDWARE}[choice]


def parse_perf_csv(text: str) -> dict[str, Reading]:
    """Every event of ``perf stat -x,`` output; comment and blank lines are skipped."""
    found: dict[str, Reading] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3:
            continue
        value, unit, event = fields[0].strip(), fields[1].strip(), fields[2].strip()
        if value in NOT_COUNTED:
            found[event] = Reading(event, None, unit, value)
            continue
        try:
            found[event] = Reading(event, float(value), unit)
        except ValueError:
            found[event] = Reading(event, None, unit, value)
    return found
