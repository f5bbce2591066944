"""What a workload is: the command the in-guest runner times, its parameters and metrics.

A workload plug-in is one small file in ``lab/run/workloads/`` that defines ``WORKLOAD``, an
instance of :class:`Workload`, named like its file with ``-`` for ``_``
(``sysbench_memory.py`` defines ``sysbench-memory``); files starting with ``_`` hold shared
code; ``lab.toml``'s ``workload_dirs`` adds folders of them (:func:`workloads_for`).
:func:`load_workloads` finds them, :func:`get_workload` picks one. A workload never runs
anything itself: :meth:`Workload.spec` describes, as a :class:`~lab.inguest.spec.Spec`, what
the in-guest runner runs in one guest, and the host-side hooks (:meth:`Workload.host_prepare`,
:meth:`Workload.host_servers`) receive the :class:`~lab.core.hostexec.Host` they act through.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from lab.core.config import Config
from lab.core.errors import ConfigError, UnknownNameError, UsageError
from lab.core.hostexec import Host
from lab.core.plugins import PluginKind, Plugins, load_plugins, plugin_dirs
from lab.inguest.spec import Spec

Direction = Literal["lower", "higher"]
ParamValue = int | float | str | None

WORKLOAD_DIRS = (Path(__file__).resolve().parent / "workloads",)


@dataclass(frozen=True)
class Metric:
    """One number a workload records per iteration; ``direction`` says which way is better."""

    name: str
    unit: str
    direction: Direction

    def __post_init__(self) -> None:
        if self.direction not in ("lower", "higher"):
            raise ConfigError(
                f"metric {self.name!r}: direction {self.direction!r} is neither 'lower' nor"
                " 'higher'",
                hint="Say whether a lower value (times) or a higher value (throughput) is better",
            )


@dataclass(frozen=True)
class Param:
    """A workload parameter: its default (None: derived from the guest, as ``help`` says),
    what it means, its type, and for strings an optional regular expression it must match."""

    default: ParamValue
    help: str
    kind: type[int] | type[float] | type[str] = str
    pattern: str | None = None

    def convert(self, workload: str, name: str, value: object) -> ParamValue:
        """``value`` (from the command line, a string, or already typed) as ``kind``."""
        if value is None:
            return None
        wanted = {int: "an integer", float: "a number", str: "a string"}[self.kind]
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise UsageError(f"{workload}: parameter {name} must be {wanted}, not {value!r}")
        try:
            converted: ParamValue = self.kind(value)
        except ValueError:
            raise UsageError(
                f"{workload}: parameter {name} must be {wanted}, not {value!r}",
                hint=f"{name}: {self.help}",
            ) from None
        if self.pattern and not re.fullmatch(self.pattern, str(converted)):
            raise UsageError(
                f"{workload}: parameter {name}={converted!r} does not look right",
                hint=f"{name}: {self.help}",
            )
        return converted


@dataclass(frozen=True)
class GuestInfo:
    """What a workload needs to know about one guest to describe its run there."""

    name: str
    vcpus: int
    memory_kib: int
    host_ip: str  # the host's address on the lab network
    iperf_port: int  # the port of this guest's own iperf3 server on the host
    nfs_export: str  # what the guest mounts, e.g. "198.18.0.1:/lab"
    work_dir: str  # a directory in the guest: the runner's DIR and the default cwd


class Workload:
    """Base class of workload plug-ins. Subclasses set the attributes and override :meth:`spec`.

    ``parameters`` declares each parameter as a :class:`Param` (default, help, type);
    ``metrics`` lists what is recorded, the first being the one summaries lead with; a
    workload whose parameters name further metrics also overrides :meth:`metrics_for`.
    """

    name: str = ""
    description: str = ""
    parameters: Mapping[str, Param] = MappingProxyType({})
    metrics: tuple[Metric, ...] = ()
    uses_nfs: bool = False  # the controller serves the NFS export only when some run needs it

    @property
    def params(self) -> dict[str, ParamValue]:
        """Every parameter's default (None: derived from the guest); ``parameters`` says more."""
        return {name: param.default for name, param in self.parameters.items()}

    def resolve(self, overrides: Mapping[str, object] | None = None) -> dict[str, ParamValue]:
        """Every parameter: its default unless ``overrides`` gives it (strings are converted).

        Guest-derived defaults stay None, so the result is the same for every guest of a run.
        """
        overrides = dict(overrides or {})
        unknown = sorted(set(overrides) - set(self.parameters))
        if unknown:
            raise UsageError(
                f"workload {self.name} has no parameter {', '.join(unknown)}",
                hint=f"Its parameters: {', '.join(sorted(self.parameters)) or '(none)'}",
            )
        return {
            name: param.convert(self.name, name, overrides.get(name, param.default))
            for name, param in self.parameters.items()
        }

    def spec(self, params: Mapping[str, object], guest: GuestInfo) -> Spec:
        """What the runner runs in ``guest``, without the iteration range and attempt base."""
        raise NotImplementedError(f"workload {self.name} does not define spec()")

    def host_prepare(self, params: Mapping[str, object], host: Host, export_dir: Path) -> None:
        """Prepare the host once per run, before any guest starts (e.g. unpack sources)."""

    def source_versions(
        self, params: Mapping[str, object], host: Host, export_dir: Path
    ) -> dict[str, dict[str, str]]:
        """The revision of a user's sources this run builds, read on the host at each start
        of the run, after :meth:`host_prepare`: guest name, or ``"*"`` for every guest ->
        facts (``lab.run.sources``: a git revision's commit, a tarball's SHA-256). None by
        default: the workload builds nothing of the user's."""
        return {}

    @property
    def serves_from_host(self) -> bool:
        """Whether its runs need the lab to serve something on the host (NFS, servers)."""
        return self.uses_nfs or type(self).host_servers is not Workload.host_servers

    def host_servers(self, guests: Sequence[GuestInfo], state_dir: Path) -> list[list[str]]:
        """Commands that start (and detach) the host-side servers this workload talks to."""
        return []

    def metrics_for(self, params: Mapping[str, object]) -> tuple[Metric, ...]:
        """What a run with ``params`` records, the first leading: ``metrics`` unless the
        parameters declare metrics of their own (``command``'s extracted numbers)."""
        return self.metrics

    @property
    def params_declare_metrics(self) -> bool:
        """Whether its parameters add metrics to ``metrics`` (see :meth:`metrics_for`)."""
        return type(self).metrics_for is not Workload.metrics_for

    def metric(self, name: str) -> Metric:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise UsageError(
            f"workload {self.name} records no metric {name!r}",
            hint=f"Its metrics: {', '.join(m.name for m in self.metrics)}",
        )

    def _spec(
        self,
        guest: GuestInfo,
        argv: list[str],
        *,
        parser: str = "none",
        parser_options: Mapping[str, str] | None = None,
        parse_from: str = "stdout",
        metrics_from: Mapping[str, str] | None = None,
        clean_argv: list[str] | None = None,
        setup_argv: list[str] | None = None,
        cwd: str | None = None,
        timeout_s: float | None = None,
    ) -> Spec:
        """A spec without a range; metrics default to this workload's, named by their source."""
        if metrics_from is None:
            metrics_from = {metric.name: metric.name for metric in self.metrics}
        return Spec(
            workload=self.name,
            argv=argv,
            clean_argv=clean_argv,
            setup_argv=setup_argv,
            cwd=cwd or guest.work_dir,
            env={"LC_ALL": "C"},  # one locale, so tools print numbers as the parsers read them
            parser=parser,
            parser_options=dict(parser_options or {}),
            parse_from=parse_from,
            metrics_from=dict(metrics_from),
            timeout_s=timeout_s,
        )


def load_workloads(dirs: Iterable[Path] = WORKLOAD_DIRS) -> Plugins[Workload]:
    """Load every workload plug-in found in ``dirs``; a later directory overrides an earlier."""
    return load_plugins(WORKLOADS, dirs)


def workloads_for(config: Config) -> Plugins[Workload]:
    """The shipped workloads and those of the folders ``config.workload_dirs`` names."""
    return load_workloads(plugin_dirs(WORKLOAD_DIRS, "workload_dirs", config.workload_dirs))


def get_workload(name: str, workloads: Mapping[str, Workload] | None = None) -> Workload:
    """The workload called ``name``, from ``workloads`` or, by default, the built-in ones;
    one whose file failed to load is that file's error."""
    if workloads is None:
        workloads = load_workloads()
    if isinstance(workloads, Plugins):
        return workloads.pick(name)
    try:
        return workloads[name]
    except KeyError:
        raise UnknownNameError("workload", name, list(workloads)) from None


WORKLOADS = PluginKind("workload", "WORKLOAD", Workload, "lab.run.workload.Workload")
