"""Read a results file of any supported format and store it: everything, or nothing.

Where the samples go: study ``--study`` (default ``imported``), a run keyed
``STUDY/import/WORKLOAD``, and one guest per variant (named after it unless the file or
``--guest`` names one). Iterations are the file's own when it has an iteration column, else
numbered in file order after those already stored. Each iteration's source is
``/absolute/path:line``; samples whose file:line is already in the store are skipped, so
importing a file again after more runs were appended to it adds only the new runs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from lab.core.errors import UsageError
from lab.importers.appended import read_iperf3_json, read_iperf3_text, read_sysbench, read_time
from lab.importers.inputs import NotTextError
from lab.importers.malformed import MalformedInputError
from lab.importers.records import BadLine, Parsed, Sample, infer_direction, known_unit
from lab.importers.tabular import Defaults, read_csv, read_jsonl
from lab.store import Direction, IterationRecord, MetricInfo, Store

FORMATS = ("auto", "csv", "jsonl", "time", "sysbench", "iperf3", "iperf3-json")
RAW_WORKLOAD = {
    "time": "time", "sysbench": "sysbench-memory", "iperf3": "iperf3", "iperf3-json": "iperf3",
}  # fmt: skip
DEFAULT_STUDY = "imported"


@dataclass(frozen=True)
class ImportOptions:
    format: str = "auto"
    study: str | None = None
    variant: str | None = None
    workload: str | None = None
    guest: str | None = None
    host: str | None = None
    unit: str | None = None
    direction: Direction | None = None
    skip_bad: bool = False


@dataclass
class ImportSummary:
    path: Path
    format: str
    read: int = 0  # samples read from the file
    stored: int = 0  # new iterations stored
    already: int = 0  # samples whose file:line is already in the store (skipped)
    duplicates: int = 0  # iterations whose number was already stored (left as they were)
    bad: list[BadLine] = field(default_factory=list)
    groups: dict[tuple[str, str, str, str], int] = field(default_factory=dict)


def detect_format(path: Path, text: str) -> str:
    """The format of a results file, from its name and then its first lines."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    lines = [line for line in text.splitlines() if line.strip()]
    first = lines[0].strip() if lines else ""
    if first.startswith("{"):
        return "jsonl" if first.endswith("}") and '"value"' in first else "iperf3-json"
    if first.startswith("sysbench "):
        return "sysbench"
    if first.startswith("Connecting to host ") or "iperf Done." in text:
        return "iperf3"
    if first.split()[:1] in (["real"], ["user"], ["sys"]):
        return "time"
    if "," in first and "value" in first.split(","):
        return "csv"
    raise UsageError(
        f"cannot tell the format of {path} from its name or its first line {first[:40]!r}",
        hint=f"Pass --format (one of {', '.join(FORMATS[1:])})",
    )


def read_text(path: Path) -> str:
    """The file as text; a binary file (a NUL byte, or bytes that are not UTF-8) is refused."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise UsageError(
            f"{path} does not exist", hint="Check the path of the results file"
        ) from None
    except OSError as err:
        raise UsageError(
            f"cannot read {path}: {err.strerror or err}", hint="Check the path and its permissions"
        ) from None
    if b"\0" in data:
        raise NotTextError(path, f"it holds a NUL byte at offset {data.index(0)}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise NotTextError(
            path, f"byte {data[err.start]:#04x} at offset {err.start} is not UTF-8"
        ) from None


def read(path: Path, options: ImportOptions) -> Parsed:
    text = read_text(path)
    fmt = detect_format(path, text) if options.format == "auto" else options.format
    defaults: Defaults = {
        "variant": options.variant, "workload": options.workload, "guest": options.guest,
        "host": options.host, "study": options.study, "unit": options.unit,
        "direction": options.direction,
    }  # fmt: skip
    if fmt == "csv":
        return read_csv(text, str(path), defaults)
    if fmt == "jsonl":
        return read_jsonl(text, str(path), defaults)
    readers = {"time": read_time, "sysbench": read_sysbench, "iperf3": read_iperf3_text,
               "iperf3-json": read_iperf3_json}  # fmt: skip
    if fmt not in readers:
        raise UsageError(f"unknown format {fmt!r}", hint=f"Known formats: {', '.join(FORMATS)}")
    if not options.variant:
        raise UsageError(
            f"{path} holds raw {fmt} output, which does not say which variant made it",
            hint="Pass --variant V (and --workload W to name the workload)",
        )
    return readers[fmt](text)


Group = tuple[str, str, str, str, str]  # study, workload, variant, guest, host


def _group(sample: Sample, options: ImportOptions, fmt: str) -> Group:
    variant = sample.variant or options.variant or ""
    return (
        sample.study or options.study or DEFAULT_STUDY,
        sample.workload or options.workload or RAW_WORKLOAD.get(fmt, fmt),
        variant,
        sample.guest or options.guest or variant,
        sample.host or options.host or "local",
    )


def _metric_infos(
    path: Path, samples: list[Sample], options: ImportOptions
) -> tuple[dict[str, MetricInfo], list[BadLine]]:
    infos: dict[str, MetricInfo] = {}
    bad: list[BadLine] = []
    for s in samples:
        for name in s.metrics:
            unit = s.units.get(name) or options.unit or known_unit(name) or ""
            direction = s.directions.get(name) or options.direction or infer_direction(name, unit)
            if direction is None:
                raise UsageError(
                    f"{path}:{s.line}: cannot tell whether a lower or a higher {name!r} is better",
                    hint="Pass --direction lower (times) or --direction higher (throughput),"
                    " or add a direction column",
                )
            info = MetricInfo(name, unit, direction)
            earlier = infos.setdefault(name, info)
            if earlier != info:
                message = (
                    f"metric {name!r} has unit {unit!r} ({direction}), earlier"
                    f" {earlier.unit!r} ({earlier.direction})"
                )
                bad.append(BadLine(s.line, message))
    return infos, bad


def _already(store: Store, run_id: int, guest_id: int, path: str) -> set[int]:
    lines: set[int] = set()
    for source in store.sources(run_id, guest_id):
        file, _, numbers = source.rpartition(":")
        if file == path:
            lines.update(int(n) for n in numbers.split(",") if n.isdigit())
    return lines


def _iterations(samples: list[Sample], first: int, bad: list[BadLine]) -> dict[int, list[Sample]]:
    """Samples by iteration: the file's own numbers, or file order after ``first - 1``."""
    by_iteration: dict[int, list[Sample]] = defaultdict(list)
    counters: dict[str, int] = defaultdict(int)
    for s in samples:
        if s.iteration is not None:
            number = s.iteration
        else:
            metric = next(iter(s.metrics))
            number = first + counters[metric]
            counters[metric] += 1
        clash = [m for other in by_iteration[number] for m in other.metrics if m in s.metrics]
        if clash:
            bad.append(BadLine(s.line, f"a second {clash[0]!r} value for iteration {number}"))
            continue
        by_iteration[number].append(s)
    return by_iteration


def read_checked(path: Path, options: ImportOptions) -> Parsed:
    """:func:`read`, refusing a file without samples, or with malformed lines unless
    ``skip_bad``: what can be told without the store, so a bad file never opens one."""
    parsed = read(path, options)
    if parsed.bad and not options.skip_bad:
        raise MalformedInputError(path, sorted(parsed.bad, key=lambda b: b.line))
    if not parsed.samples:
        raise UsageError(
            f"no samples found in {path} (read as {parsed.format})",
            hint="Check the file, or pass --format if it was detected wrongly",
        )
    return parsed


def import_file(
    store: Store, path: Path, options: ImportOptions, parsed: Parsed | None = None
) -> ImportSummary:
    """Read ``path`` (unless ``parsed`` is what it holds) and store its samples in one
    transaction."""
    if parsed is None:
        parsed = read(path, options)
    summary = ImportSummary(path=path, format=parsed.format, read=len(parsed.samples))
    bad = list(parsed.bad)
    infos, unit_bad = _metric_infos(path, parsed.samples, options)
    bad.extend(unit_bad)
    groups: dict[Group, list[Sample]] = defaultdict(list)
    for s in parsed.samples:
        if not any(b.line == s.line for b in unit_bad):
            groups[_group(s, options, parsed.format)].append(s)
    source_path = str(path.resolve())
    with store.transaction():
        for key, samples in sorted(groups.items()):
            study, workload, variant, guest, host = key
            study_id = store.ensure_study(study, "imported with lab import")
            metrics = sorted({m for s in samples for m in s.metrics})
            run_id = store.ensure_run(
                study_id, f"{study}/import/{workload}", workload, {"imported": True}, None, None,
                [infos[m] for m in metrics],
            )  # fmt: skip
            guest_id = store.ensure_guest(study_id, guest, variant, host=host)
            done = _already(store, run_id, guest_id, source_path)
            fresh = [s for s in samples if s.line not in done]
            summary.already += len(samples) - len(fresh)
            by_iteration = _iterations(fresh, store.max_iteration(run_id, guest_id) + 1, bad)
            records = [
                IterationRecord(
                    iteration=number, attempt=1, ok=True, started=group[0].started,
                    source=f"{source_path}:{','.join(str(s.line) for s in group)}",
                    metrics={m: v for s in group for m, v in s.metrics.items()},
                )
                for number, group in sorted(by_iteration.items())
            ]  # fmt: skip
            new = store.record(run_id, guest_id, records)
            summary.stored += new
            summary.duplicates += len(records) - new
            summary.groups[(study, workload, variant, guest)] = new
        if bad and not options.skip_bad:
            raise MalformedInputError(path, sorted(bad, key=lambda b: b.line))
    if not parsed.samples:
        raise UsageError(
            f"no samples found in {path} (read as {parsed.format})",
            hint="Check the file, or pass --format if it was detected wrongly",
        )
    summary.bad = sorted(bad, key=lambda b: b.line)
    return summary
