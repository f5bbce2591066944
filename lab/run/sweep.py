"""A parameter sweep: one run per value of the swept parameters, all made by one command.

Each value is a run of its own (its own key and parameters, so nothing is ever pooled) with
its own :class:`~lab.run.controller.Controller`; the sweep only orders their work:

* ``interleaved`` (the default): round i runs iteration i of every value, in the sweep's
  order, before iteration i+1 of any, so a drift of the host over the hours of a sweep
  spreads over every value instead of reading as an effect of the parameter;
* ``blocked``: one value's n iterations, then the next value's.

Each value's controller begins (the environment, the runner in each guest) just before its
first round and ends (the memory backing, now that the work has faulted it in) just after
its last; within a round the value's own schedule (concurrent, alternate or sync, with
swaps) runs as it would for a single run. A value whose iterations of a round are all
stored is skipped without a word to its guests, so a resumed sweep (the same command again,
after Ctrl-C or a SIGKILL) goes straight to the first missing iteration, and each value
ends with exactly n iterations per guest: the store keeps each (run, guest, iteration,
attempt) once, and each controller resumes its own run.

The sweep's key is a hash of what was asked, like a run's; each value's run key includes it,
so a sweep never takes over a run made alone (or by another sweep) with the same parameters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lab.core.errors import UsageError
from lab.core.sweeps import ORDERS, Axis, check_axes, label, points
from lab.run.workload import ParamValue, Workload

if TYPE_CHECKING:  # the store is opened by the caller; lab run's parser needs none of it
    from lab.store import Store

Point = tuple[tuple[str, str], ...]  # the swept parameters' values, as given: ((key, value), …)


@dataclass(frozen=True)
class SweepPlan:
    """A sweep checked against its workload: its points and each one's parameters."""

    axes: tuple[Axis, ...]
    order: str
    fixed: dict[str, ParamValue]  # the parameters the sweep keeps, resolved
    points: tuple[Point, ...]
    params: tuple[dict[str, ParamValue], ...]  # each point's parameters, resolved

    def labels(self) -> list[str]:
        return [label(p) for p in self.points]

    def describe(self) -> str:
        """'3 runs: total_size = 16M, 64M, 256M, interleaved'."""
        axes = "; ".join(a.describe() for a in self.axes)
        return f"{len(self.points)} run{'s' if len(self.points) > 1 else ''}: {axes}, {self.order}"


def plan_sweep(
    workload: Workload,
    given: Sequence[tuple[str, str]],
    axes: Sequence[Axis],
    order: str = "interleaved",
    what: str = "--sweep",
) -> SweepPlan:
    """The sweep's points with the parameters ``given`` (as ``-p`` gives them), each
    resolved by the workload: an unknown key, a key also given with ``-p``, a value the
    workload refuses, an order that does not exist, a value twice or too many runs are
    refused here, before anything runs."""
    if order not in ORDERS:
        raise UsageError(f"unknown sweep order {order!r}", hint=f"Use one of: {', '.join(ORDERS)}")
    check_axes(axes, what)
    fixed_keys = {key for key, _ in given}
    for axis in axes:
        if axis.key not in workload.parameters:
            known = ", ".join(sorted(workload.parameters)) or "(none)"
            raise UsageError(
                f"{what} {axis.key}: workload {workload.name} has no parameter {axis.key}",
                hint=f"Its parameters: {known} (see `lab workloads`)",
            )
        if axis.key in fixed_keys:
            raise UsageError(
                f"{axis.key} is both given (-p) and swept ({what})",
                hint=f"Drop -p {axis.key}=…, or sweep another parameter",
            )
    base = dict(given)
    swept = {a.key for a in axes}
    made = tuple(points(axes))
    resolved = []
    for point in made:
        try:
            resolved.append(workload.resolve({**base, **dict(point)}))
        except UsageError as err:
            raise UsageError(
                f"{what} {label(point)}: {err.message}",
                hint=err.hint or f"See `lab workloads` for what {workload.name} takes",
            ) from None
    fixed = {k: v for k, v in workload.resolve(base).items() if k not in swept}
    return SweepPlan(tuple(axes), order, fixed, made, tuple(resolved))


class Value(Protocol):
    """What the sweep asks of one value's controller (``lab.run.controller.Controller``)."""

    @property
    def guests(self) -> Sequence[Any]: ...

    def remaining(self, guest: Any) -> list[int]: ...
    def begin(self) -> None: ...
    def advance(self, upto: int | None = None) -> None: ...
    def end(self) -> None: ...


def sweep_key(
    study: str,
    workload: str,
    params: Mapping[str, Any],
    axes: Sequence[Axis],
    guests: Sequence[str],
    n: int,
    schedule: str,
    order: str,
    swap_every: int | None = None,
) -> str:
    """The same sweep asked again gives the same key: that is how it resumes. ``params`` are
    the parameters the sweep keeps fixed."""
    asked: list[Any] = [study, workload, dict(params), [[a.key, list(a.values)] for a in axes],
                        sorted(guests), n, schedule, order]  # fmt: skip
    if swap_every:
        asked.append({"swap_every": swap_every})
    text = json.dumps(asked, sort_keys=True)
    return f"{workload}-sweep-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def record_sweep(
    store: Store,
    study_id: int,
    key: str,
    workload: str,
    axes: Sequence[Axis],
    order: str,
    runs: Sequence[tuple[int, Mapping[str, str]]],
) -> int:
    """Store the sweep and its runs ((run id, point) in the sweep's order); returns its id."""
    sweep_id = store.ensure_sweep(study_id, key, workload, [(a.key, a.values) for a in axes], order)
    for position, (run_id, point) in enumerate(runs):
        store.add_sweep_run(sweep_id, run_id, position, point)
    return sweep_id


class SweepRun:
    """Drives the values' controllers in the sweep's order; :attr:`active` is the one
    running now, and after an interruption the one that was (whose runners to stop)."""

    def __init__(self, values: Sequence[Value], order: str, n: int) -> None:
        if order not in ORDERS:
            raise ValueError(f"unknown sweep order {order!r}")
        self.values, self.order, self.n = list(values), order, n
        self.active: Any = None  # the Value running now
        self._begun: list[Value] = []

    def run(self) -> None:
        try:
            if self.order == "interleaved":
                for upto in range(1, self.n + 1):
                    for value in self.values:
                        self._advance(value, upto)
            else:
                for value in self.values:
                    self._advance(value, self.n)
        finally:  # `active` stays: the value whose runners Ctrl-C must stop
            for value in self._begun:  # those a stop left before their last round
                value.end()

    def _advance(self, value: Value, upto: int) -> None:
        if not any(i <= upto for g in value.guests for i in value.remaining(g)):
            return  # stored already: nothing to ask its guests
        if value not in self._begun:
            self._begun.append(value)
            value.begin()
        self.active = value
        value.advance(upto)
        self.active = None
        if not any(value.remaining(g) for g in value.guests):
            self._begun.remove(value)
            value.end()  # its last iteration is done: its backing now, not at the sweep's end
