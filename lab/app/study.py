"""A study file: the whole design of an A/B study in one TOML file, checked before anything runs.

``lab study check FILE`` validates it and prints the plan; ``lab study run FILE`` brings the
twins up (when no lab is up), runs every ``[[workload]]`` in file order with ``lab run``
and writes the report. The file's text and its sha256 are stored with the results, so a
report says exactly which design produced it, and a changed file cannot silently continue
a study made from another one.

The keys, their types, defaults and meanings are :data:`STUDY_KEYS` and
:data:`WORKLOAD_KEYS`, one record per key; :func:`key_reference` lays them out as the
table that ``lab study --help`` and docs/studies.md show.

Unknown keys and wrong types are refused with the file, the key and what to write instead.
"""

from __future__ import annotations

import hashlib
import math
import textwrap
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

from lab.app.design import Design, parse_design
from lab.core.errors import ConfigError, LabError, UsageError
from lab.core.names import check_name
from lab.core.plugins import Plugins
from lab.core.sweeps import MAX_SWEEP_RUNS, ORDERS, Axis, axis_of
from lab.core.tomlfile import parse, read_text
from lab.core.units import parse_size_kib
from lab.guests.variants import load_variants
from lab.run.sweep import SweepPlan, plan_sweep
from lab.run.workload import GuestInfo, ParamValue, Workload, get_workload, load_workloads
from lab.stats.verdict import parse_threshold

# Bounds of a study's numbers, so that a typo (vcpus = n = 10^20) is refused by `lab study check`
# and not met at bring-up or hours into a run. KVM on x86 takes at most 4096 vCPUs a guest; ten
# million iterations of even one second each are four months of a pair.
MAX_VCPUS = 4096
MAX_ITERATIONS = 10_000_000

SCHEDULES = ("concurrent", "alternate", "sync")
DEFAULT_CONFIDENCE = 99.99
DEFAULT_THRESHOLD = "1%"
WORKLOAD_EXAMPLE = 'Write [[workload]] tables, e.g. [[workload]] name = "null" n = 30'


@dataclass(frozen=True)
class Key:
    """One key of a study file: the TOML types it takes and what it means.

    ``doc`` is the short meaning an error's hint gives; ``kind`` ("type, default") and
    ``meaning`` are the columns of :func:`key_reference`'s table."""

    types: tuple[type, ...]
    required: bool
    doc: str
    kind: str = ""
    meaning: str = ""

    @property
    def type_name(self) -> str:
        names = {str: "a string", int: "an integer", float: "a number", list: "a list",
                 dict: "a table"}  # fmt: skip
        return " or ".join(names[t] for t in self.types)


STUDY_KEYS: Mapping[str, Key] = {
    "name": Key((str,), True, "the study's name in the result store", "string, required",
                "the study's name in the result store (a plain name: letters, digits, '.',"
                " '_', '-')"),
    "description": Key((str,), False, "what the study asks", 'string, ""',
                       "what the study asks, for the report"),
    "variants": Key((list,), False, 'the twins\' two variants, e.g. ["thp", "shp1g"]',
                    "2 strings, or factors", "the twins' variants (`lab variants`); the first"
                    ' is the baseline A, e.g. ["thp", "shp1g"]'),
    "factors": Key((dict,), False, 'factors crossed, e.g. factors = { page = ["thp", "1g"] }',
                   "table, or variants", "instead of variants: the lab's factors and levels"
                   " to cross (`lab variants`); every cell libvirt can express runs, two at a"
                   " time, every pair of cells once, and `lab compare` gives each factor's"
                   ' effect; age = ["fresh", "f80"] runs every block at each host age'
                   " (docs/studies.md)"),
    "design": Key((dict,), False, 'how the factors run, e.g. [design] blocks = "mirror", or'
                  ' fraction = ["guest-thp = page * prealloc"]', "table, none", "with factors of"
                  " two levels: blocks = \"mirror\" runs each cell beside its mirror (2^(k-1)"
                  " blocks; even-order interactions confounded with them), or fraction ="
                  " generators of a 2^(k-p) fraction, each an added factor = the product of"
                  " others joined by '*' (a '-' before it: the other half); only its cells run,"
                  " and `lab study check` prints what it confounds"),
    "vcpus": Key((int,), True, "vCPUs per guest", "integer, required", "vCPUs per guest"),
    "memory": Key((str,), True, 'memory per guest, e.g. "12G"', "string, required",
                  'memory per guest, e.g. "12G"'),
    "image": Key((str,), False, "base image name (default: image of lab.toml)",
                 "string, lab.toml's", "the base image the twins are cloned from"),
    "reserve_host_cpus": Key((int,), False, "host CPUs kept free of vCPUs (default: lab.toml)",
                             "integer, lab.toml's", "host CPUs kept free of vCPUs"),
    "confidence": Key((int, float), False, "confidence level in percent, e.g. 99.99",
                      "number, 99.99", "confidence level in percent, of the verdicts and of"
                      " the `until` rules"),
    "threshold": Key((str,), False, 'smallest change that matters, e.g. "1%"', 'string, "1%"',
                     "the smallest change that matters: a percentage of A's mean (with its %"
                     " sign), or a value in the metric's own unit"),
    "workload": Key((list,), True, "the [[workload]] tables, run in file order",
                    "tables, at least 1", "the runs, in the order they run"),
}  # fmt: skip

WORKLOAD_KEYS: Mapping[str, Key] = {
    "name": Key((str,), True, "a workload (see `lab workloads`)", "string, required",
                "a workload (`lab workloads`), at most once per study: the analysis pools"
                " a study's runs of one"),
    "params": Key((dict,), False, "its parameters, e.g. params = { time = 10 }", "table, {}",
                  "its parameters, checked against those it declares"),
    "n": Key((int,), True, "iterations per guest (with until: the most it may take)",
             "integer, required", "iterations per guest; with `until`, the most"),
    "until": Key((str,), False, "a stopping rule: 'verdict' or 'ci-halfwidth<0.5%'",
                 "string, none", 'a stopping rule as `lab run --until` takes it: "verdict"'
                 ' or "ci-halfwidth<0.5%"'),
    "schedule": Key((str,), False, "sync, alternate or concurrent", "string, sync",
                    '"sync" (iteration i starts on both together, so the samples pair up),'
                    ' "alternate" (one guest at a time) or "concurrent" (both guests at'
                    " once, each at its own pace)"),
    "swap_every": Key((int,), False, "with schedule 'sync': swap the CPU sets every K iterations",
                      "integer, none", 'with schedule "sync" only: swap the twins\' CPU sets'
                      " every K iterations (`lab run --swap-every`)"),
    "reboot_every": Key((int,), False, "power-cycle the guests every K iterations",
                        "integer, none", "power-cycle the guests after every K iterations, so"
                        " the run holds several boots (`lab run --reboot-every`)"),
    "warmup": Key((int, str), False, 'iterations discarded after every boot, or "auto"',
                  'integer or "auto"', "the warm-up the analysis leaves out (`lab run"
                  ' --warmup`): K iterations after every boot, or "auto" (a CUSUM test);'
                  " none by default"),
    "sweep": Key((dict,), False, 'one run per value, e.g. sweep = { total_size = ["4M", "64M"] }',
                 "table, none", "one run per value of each parameter (`lab run --sweep`),"
                 ' several keys giving their product: a list, e.g. total_size = ["4M", "64M",'
                 ' "1G"], or a range, "4M..4G:x4" or "1..8:+1"; at most'
                 f" {MAX_SWEEP_RUNS} runs"),
    "sweep_order": Key((str,), False, "interleaved or blocked", "string, interleaved",
                       '"interleaved" (iteration i of every value before i+1 of any) or'
                       ' "blocked" (one value after the other)'),
}  # fmt: skip


def _key_rows(keys: Mapping[str, Key]) -> list[str]:
    rows = []
    for name, key in keys.items():
        label = f"[[{name}]]" if name == "workload" else name
        lines = textwrap.wrap(key.meaning, 43) or [""]
        rows.append(f"    {label:<19}{key.kind:<20}{lines[0]}")
        rows += [" " * 43 + line for line in lines[1:]]
    return rows


def key_reference() -> str:
    """The study file's keys as a table: key, type and default, meaning."""
    return "\n".join(
        ["Top-level keys (key, type and default, meaning):", "", *_key_rows(STUDY_KEYS), "",
         "Keys of each [[workload]] table:", "", *_key_rows(WORKLOAD_KEYS)]
    )  # fmt: skip


@dataclass(frozen=True)
class StudyWorkload:
    """One ``[[workload]]`` of a study: what ``lab run`` is asked to do."""

    name: str
    params: Mapping[str, ParamValue]  # as the file gives them, in file order
    n: int
    schedule: str = "sync"
    until: str | None = None
    swap_every: int | None = None  # sync only: swap the twins' CPU sets every K iterations
    reboot_every: int | None = None  # power-cycle the guests every K iterations
    warmup: str | None = None  # "auto" or a count K per boot (lab.stats.discard)
    sweep: tuple[Axis, ...] = ()  # one run per point of these axes' product
    sweep_order: str = "interleaved"
    sweep_plan: SweepPlan | None = field(default=None, compare=False)  # the points, checked

    @property
    def runs(self) -> int:
        """How many runs the step makes: 1, or one per value of its sweep."""
        return len(self.sweep_plan.points) if self.sweep_plan else 1

    def describe(self) -> str:
        """'n = 24000' or 'until a verdict, at most 24000 iterations'."""
        if self.until is None:
            return f"n = {self.n}"
        from lab.stats.sequential import parse_until  # deferred: heavy (scipy)

        return parse_until(self.until, self.n).describe()


@dataclass(frozen=True)
class Study:
    """A validated study file; ``text`` and ``sha256`` are what the store keeps."""

    name: str
    variants: tuple[str, str]
    vcpus: int
    memory: str
    workloads: tuple[StudyWorkload, ...]
    description: str = ""
    image: str | None = None  # None: the configured image
    reserve_host_cpus: int | None = None  # None: the configured reserve
    confidence: float = DEFAULT_CONFIDENCE
    threshold: str = DEFAULT_THRESHOLD
    path: Path | None = None
    text: str = ""
    sha256: str = field(default="")
    design: Design | None = None  # factors crossed: the pairs of cells run in turn

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The pairs brought up in turn: the design's blocks, or the one pair of variants."""
        return self.design.blocks if self.design is not None else (self.variants,)

    @property
    def steps(self) -> tuple[tuple[tuple[str, str], str | None], ...]:
        """(pair, host age level or None) in the order they are brought up: a design's blocks,
        each once per age level of its age factor (:attr:`Design.steps`), or the one pair."""
        return self.design.steps if self.design is not None else ((self.variants, None),)


def load_study(
    path: str | Path,
    workloads: Mapping[str, Workload] | None = None,
    variants: Collection[str] | None = None,
) -> Study:
    """Read and validate the study file at ``path`` (also hashed, byte for byte).

    ``workloads`` and ``variants`` default to the registered plug-ins.
    """
    path = Path(path)
    text = read_text(path, "study file", hint="See studies/*.toml for examples")
    study = parse_study(text, str(path), workloads, variants)
    return replace(study, path=path)


def parse_study(
    text: str,
    source: str = "study file",
    workloads: Mapping[str, Workload] | None = None,
    variants: Collection[str] | None = None,
) -> Study:
    """The :class:`Study` that ``text`` describes; ``source`` names it in every error."""
    data = parse(text, source)
    _check_keys(data, STUDY_KEYS, source, "")
    if workloads is None:
        workloads = load_workloads()
    if variants is None:
        variants = load_variants()
    name = _checked(source, "name", data["name"], _plain("study"))
    design = None
    if ("variants" in data) == ("factors" in data):
        raise ConfigError(
            f"{source}: give either variants (a pair) or factors (a factorial design)",
            hint='e.g. variants = ["thp", "shp1g"], or [factors] with page = ["thp", "1g"]',
        )
    if "design" in data and "factors" not in data:
        raise ConfigError(f"{source}: [design] needs [factors]: it blocks them or takes a"
                          " fraction of them",
                          hint='e.g. [factors] with page = ["thp", "2m"]')  # fmt: skip
    if "factors" in data:
        design = parse_design(source, data["factors"], data.get("design"))
        pair = list(design.blocks[0])
    else:
        pair = _checked(source, "variants", data["variants"], _variants(variants))
    vcpus = _checked(source, "vcpus", data["vcpus"], _at_least(1, MAX_VCPUS))
    memory = _checked(source, "memory", data["memory"], _size)
    image = data.get("image")
    if image is not None:
        _checked(source, "image", image, _plain("image"))
    reserve = data.get("reserve_host_cpus")
    if reserve is not None:
        _checked(source, "reserve_host_cpus", reserve, _at_least(0, MAX_VCPUS))
    confidence = float(
        _checked(source, "confidence", data.get("confidence", DEFAULT_CONFIDENCE), _level)
    )
    threshold = _checked(source, "threshold", data.get("threshold", DEFAULT_THRESHOLD), _threshold)
    tables = data["workload"]
    if not tables:
        raise ConfigError(f"{source}: no [[workload]] tables", hint=WORKLOAD_EXAMPLE)
    guest = _dry_guest(vcpus, memory)
    runs: list[StudyWorkload] = []
    for number, table in enumerate(tables, 1):
        run = _workload(source, number, table, workloads, guest)
        earlier = next((i for i, r in enumerate(runs, 1) if r.name == run.name), None)
        if earlier is not None:
            raise ConfigError(
                f"{source}: [[workload]] {number} runs {run.name} again ([[workload]] {earlier}"
                " already does)",
                hint="The analysis pools every run of a workload in a study: give other"
                " parameters a study of their own",
            )
        runs.append(run)
    return Study(
        name=name,
        description=_checked(source, "description", data.get("description", ""), None),
        variants=(pair[0], pair[1]),
        design=design,
        vcpus=vcpus,
        memory=memory,
        image=image,
        reserve_host_cpus=reserve,
        confidence=confidence,
        threshold=threshold,
        workloads=tuple(runs),
        text=text,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def _workload(
    source: str,
    number: int,
    table: object,
    workloads: Mapping[str, Workload],
    guest: GuestInfo,
) -> StudyWorkload:
    where = f"[[workload]] {number}"
    if not isinstance(table, dict):
        raise ConfigError(
            f"{source}: key 'workload' must be [[workload]] tables, not {type(table).__name__}",
            hint=WORKLOAD_EXAMPLE,
        )
    if "n" not in table and "until" in table:
        raise ConfigError(
            f"{source}: {where}: until needs n, the most iterations the run may take",
            hint=f"e.g. n = 1000 beside until = {table['until']!r}",
        )
    if "n" not in table and "name" in table:
        raise ConfigError(
            f"{source}: {where} ({table['name']}) has neither n nor until",
            hint="Give n = ITERATIONS, or until = 'verdict' with n as the most it may take",
        )
    _check_keys(table, WORKLOAD_KEYS, source, f"{where}: ")
    name = table["name"]
    try:
        workload = get_workload(name, workloads)
    except LabError as err:
        raise ConfigError(f"{source}: {where}: {err.message}", hint=err.hint) from None
    where = f"{where} ({name})"
    params: dict[str, ParamValue] = {}
    for key, value in table.get("params", {}).items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ConfigError(
                f"{source}: {where}: params.{key} must be a string, an integer or a number,"
                f" not {type(value).__name__} ({value!r})",
                hint=f"e.g. params = {{ {key} = 10 }} (see `lab workloads`)",
            )
        params[key] = _checked(source, f"{where}: params.{key}", value, partial(_param, key))
    n = _checked(source, f"{where}: n", table["n"], _at_least(1, MAX_ITERATIONS))
    until = table.get("until")
    if until is not None:
        from lab.stats.sequential import parse_until  # deferred: heavy (scipy)

        _checked(source, f"{where}: until", until, lambda v: parse_until(v, n))
    schedule = _checked(source, f"{where}: schedule", table.get("schedule", "sync"),
                        _one_of(SCHEDULES))  # fmt: skip
    swap_every = table.get("swap_every")
    if swap_every is not None:
        _checked(source, f"{where}: swap_every", swap_every, _at_least(1, MAX_ITERATIONS))
        if schedule != "sync":
            raise ConfigError(
                f'{source}: {where}: swap_every needs schedule = "sync", not {schedule!r}:'
                " the CPU sets are swapped between synchronised iterations",
                hint='Add schedule = "sync", or drop swap_every',
            )
    reboot_every = table.get("reboot_every")
    if reboot_every is not None:
        _checked(source, f"{where}: reboot_every", reboot_every, _at_least(1, MAX_ITERATIONS))
    warmup = table.get("warmup")
    if warmup is not None:
        from lab.stats.discard import declared_warmup  # deferred: heavy (scipy)

        check = partial(declared_warmup, n=n, n_name="n", toml=True)
        warmup = check(_checked(source, f"{where}: warmup", warmup, check))
    order = _checked(source, f"{where}: sweep_order", table.get("sweep_order", ORDERS[0]),
                     _one_of(ORDERS))  # fmt: skip
    try:
        # Parameters against what the workload declares, then what it would run: a missing
        # required parameter (gdb-build's source) is found now, not after hours of runs.
        # As text, as `lab run -p KEY=VALUE` reads them: time = 2.5 is refused here too.
        given = {key: str(value) for key, value in params.items()}
        resolved = workload.resolve(given)
        workload.spec(resolved, guest)
        axes = tuple(axis_of(key, values, f"sweep.{key}")
                     for key, values in table.get("sweep", {}).items())  # fmt: skip
        plan = None
        if axes:
            if until is not None:
                raise UsageError(
                    "a sweep cannot stop on a rule (until): its values are read together",
                    hint="Drop until and give n",
                )
            plan = plan_sweep(workload, list(given.items()), axes, order, "sweep")
            for each in plan.params:  # what each value would run, as for the parameters
                workload.spec(each, guest)
    except LabError as err:
        raise ConfigError(f"{source}: {where}: {err.message}", hint=err.hint) from None
    if "sweep" in table and not axes:
        raise ConfigError(
            f"{source}: {where}: sweep is an empty table",
            hint='e.g. sweep = { total_size = ["4M", "64M"] }, or no sweep key',
        )
    if "sweep_order" in table and not axes:
        raise ConfigError(f"{source}: {where}: sweep_order needs a sweep", hint="Drop it")
    return StudyWorkload(
        name=name, params=MappingProxyType(params), n=n, schedule=schedule, until=until,
        swap_every=swap_every, warmup=warmup, sweep=axes, sweep_order=order, sweep_plan=plan,
        reboot_every=reboot_every,
    )  # fmt: skip


def _check_keys(data: Mapping[str, Any], keys: Mapping[str, Key], source: str, where: str) -> None:
    for key, value in data.items():
        if key not in keys:
            raise ConfigError(
                f"{source}: {where}unknown key {key!r}", hint=f"Known keys: {', '.join(keys)}"
            )
        spec = keys[key]
        if isinstance(value, bool) or not isinstance(value, spec.types):
            raise ConfigError(
                f"{source}: {where}key {key!r} must be {spec.type_name},"
                f" not {type(value).__name__} ({value!r})",
                hint=f"{key}: {spec.doc}",
            )
    missing = [key for key, spec in keys.items() if spec.required and key not in data]
    if missing:
        raise ConfigError(
            f"{source}: {where}missing {', '.join(missing)}",
            hint="; ".join(f"{key}: {keys[key].doc}" for key in missing),
        )


def _checked(source: str, key: str, value: Any, check: Callable[[Any], Any] | None) -> Any:
    """``value`` once ``check`` accepts it; else an error naming ``source`` and ``key``."""
    if check is None:
        return value
    try:
        check(value)
    except (ValueError, TypeError, LabError) as err:
        reason = err.message if isinstance(err, LabError) else str(err)
        hint = getattr(err, "hint", None)
        raise ConfigError(f"{source}: {key} = {value!r}: {reason}", hint=hint) from None
    return value


def _at_least(low: int, high: int) -> Callable[[int], None]:
    def check(value: int) -> None:
        if value < low:
            raise ValueError(f"must be {low} or more")
        if value > high:
            raise ValueError(f"must be {high:,} or less")

    return check


def _param(key: str, value: ParamValue) -> None:
    """A TOML integer has 64 bits and a number is finite: a workload's parameter goes on a
    guest's command line, where 10^20 or inf is no value any tool takes."""
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise ValueError(f"params.{key} must be between -2^63 and 2^63 - 1")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"params.{key} must be a finite number")


def _one_of(choices: tuple[str, ...]) -> Callable[[str], None]:
    def check(value: str) -> None:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(map(repr, choices))}")

    return check


def _plain(kind: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        check_name(kind, value)

    return check


def _variants(known: Collection[str]) -> Callable[[list[Any]], None]:
    def check(value: list[Any]) -> None:
        if len(value) != 2 or not all(isinstance(v, str) for v in value):
            raise ValueError('must be two variant names, e.g. ["thp", "shp1g"]')
        if value[0] == value[1]:
            raise ValueError("names the same variant twice: the twins must differ")
        for name in value:
            if isinstance(known, Plugins) and name not in known:
                known.pick(name)  # a variant whose file failed to load: that file's error
        unknown = [v for v in value if v not in known]
        if unknown:
            raise ValueError(
                f"unknown variant {unknown[0]!r} (known variants: {', '.join(sorted(known))})"
            )

    return check


def _size(value: str) -> None:
    parse_size_kib(value)


def _level(value: float) -> None:
    if not 50 <= value < 100:
        raise ValueError("must be a percentage from 50 up to (not including) 100, e.g. 99.99")


def _threshold(value: str) -> None:
    """A percentage of A's mean ("1%") or a value in the metric's unit ("0.5"), above 0."""
    try:
        threshold = parse_threshold(value, "threshold")
    except UsageError as err:
        raise ValueError(
            f'{err} (e.g. "1%" of A\'s mean, or "0.5" in the metric\'s unit)'
        ) from None
    if threshold.value <= 0:
        raise ValueError('must be above 0, e.g. "1%"')


def _dry_guest(vcpus: int, memory: str) -> GuestInfo:
    """A guest of the study's size, to ask each workload what it would run there."""
    return GuestInfo(
        name="lab-study-check",
        vcpus=vcpus,
        memory_kib=parse_size_kib(memory),
        host_ip="198.18.0.1",
        iperf_port=5201,
        nfs_export="198.18.0.1:/lab",
        work_dir="/home/lab/lab-runner",
    )
