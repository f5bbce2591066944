"""command: any argument list timed in the guest, as hyperfine times one on a host.

``argv``, ``setup`` and ``clean`` are split on the host with the shell's quoting rules
(:func:`shlex.split`) and run as argument lists, never through a shell (ask for one:
``-p argv='sh -c "make && make check"'``). The runner's wall, user and sys time are always
recorded. Numbers in the command's output become metrics too, read in the guest's runner by
a regular expression with named groups (``regex``) or by JSON paths (``json``), each named
in ``metrics`` with its unit and which way is better::

    lab run command --n 50 -p argv='make -C /src -j2' -p clean='make -C /src clean'
    lab run command --n 20 -p argv='sysbench cpu run' \\
        -p regex='events per second: *(?P<eps>[0-9.]+)' -p metrics=eps:events/s:higher
    lab run command --n 10 -p argv='iperf3 -c 198.18.0.1 -p 5300 -J' \\
        -p json=bps=end.sum_sent.bits_per_second -p metrics=bps:bit/s:higher

(the last against an iperf3 server started on the host by hand: command starts nothing there).

Every parameter is checked when the run is asked for, before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from lab.inguest.spec import Spec
from lab.run.workload import GuestInfo, Metric, Param, ParamValue, Workload
from lab.run.workloads._command import TIMES, read_params


class Command(Workload):
    name = "command"
    description = "any argument list, timed (wall, user, sys), and numbers from its output"
    parameters = MappingProxyType(
        {
            "argv": Param(
                "",
                "the command to time (required), split as a shell would (shlex) and run"
                " without one, e.g. 'make -C /src -j2'",
            ),
            "setup": Param(
                "", "untimed, once before the iterations of each start, split like argv"
            ),
            "clean": Param("", "untimed, before every iteration, split like argv"),
            "regex": Param(
                "",
                "a Python regular expression searched in the output, the last match counting:"
                " each named group (?P<NAME>...) is a metric NAME, e.g. '(?P<rate>[0-9.]+) ops/s'",
            ),
            "json": Param(
                "",
                "when the output is JSON: NAME=PATH[,NAME=PATH...], keys joined by dots and"
                " list indexes as numbers, e.g. bps=end.streams.0.sender.bits_per_second",
            ),
            "metrics": Param(
                "",
                "NAME:UNIT:DIRECTION[,...] for each metric regex or json reads, DIRECTION lower"
                " or higher, e.g. rate:ops/s:higher; the first leads the summaries",
            ),
            "output": Param(
                "stdout", "what regex or json reads: stdout or stderr", str, "stdout|stderr"
            ),
            "timeout": Param(
                3600,
                "seconds after which the clean or timed command is killed",
                int,
                r"[1-9][0-9]{0,6}",
            ),
        }
    )
    metrics = TIMES

    def resolve(self, overrides: Mapping[str, object] | None = None) -> dict[str, ParamValue]:
        params = super().resolve(overrides)
        read_params(params)  # refuse now what could not run
        return params

    def metrics_for(self, params: Mapping[str, object]) -> tuple[Metric, ...]:
        return (*read_params(self.resolve(params)).extracted, *TIMES)

    def spec(self, params: Mapping[str, object], guest: GuestInfo) -> Spec:
        p = self.resolve(params)
        plan = read_params(p)
        return self._spec(
            guest,
            plan.argv,
            parser=plan.parser,
            parser_options=plan.options,
            parse_from=str(p["output"]),
            metrics_from={m.name: m.name for m in (*plan.extracted, *TIMES)},
            clean_argv=plan.clean,
            setup_argv=plan.setup,
            timeout_s=float(p["timeout"] or 0),
        )


WORKLOAD = Command()
