"""The command workload: argument lists split as a shell would, metrics read from the output by
a regular expression or JSON paths with the unit and direction declared beside them, every
bad parameter refused before anything runs, and a run through the real runner into a store."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from lab.app.study import parse_study
from lab.core.errors import ConfigError, UsageError
from lab.inguest.spec import parse_spec
from lab.parsers import tools
from lab.run.workload import GuestInfo, get_workload
from tests.unit.test_controller import make

COMMAND = get_workload("command")
GUEST = GuestInfo("lab-thp", 2, 2**20, "198.18.0.1", 5201, "198.18.0.1:/lab", "/home/lab/run")
TIMES = [("wall_s", "s", "lower"), ("user_s", "s", "lower"), ("sys_s", "s", "lower")]


def metrics(params: dict[str, str]) -> list[tuple[str, str, str]]:
    return [(m.name, m.unit, m.direction) for m in COMMAND.metrics_for(params)]


def test_argument_lists_are_split_as_a_shell_would_and_run_without_one() -> None:
    params = {
        "argv": """sh -c 'make && echo "$(date)"; true' "a b" \\$HOME""",
        "setup": "mkdir -p /tmp/x",
        "clean": "make -C '/src dir' clean",
    }
    spec = COMMAND.spec(params, GUEST)
    assert spec.argv == ["sh", "-c", 'make && echo "$(date)"; true', "a b", "$HOME"]
    assert spec.setup_argv == ["mkdir", "-p", "/tmp/x"]
    assert spec.clean_argv == ["make", "-C", "/src dir", "clean"]
    assert (spec.parser, spec.parser_options, spec.cwd) == ("none", {}, "/home/lab/run")
    assert spec.metrics_from == {"wall_s": "wall_s", "user_s": "user_s", "sys_s": "sys_s"}
    assert spec.timeout_s == 3600.0
    assert metrics(params) == TIMES


def test_without_setup_or_clean_there_is_none() -> None:
    spec = COMMAND.spec({"argv": "true"}, GUEST)
    assert (spec.setup_argv, spec.clean_argv) == (None, None)


def test_a_regex_metric_carries_its_unit_and_direction_and_leads() -> None:
    params = {
        "argv": "sysbench cpu run",
        "regex": r"events per second: *(?P<eps>[0-9.]+)(?:.|\n)*avg: *(?P<avg_ms>[0-9.]+)",
        "metrics": "eps:events/s:higher, avg_ms:ms:lower",
        "output": "stderr",
        "timeout": "60",
    }
    spec = COMMAND.spec(params, GUEST)
    assert spec.parser == "regex"
    assert spec.parser_options == {"pattern": params["regex"]}
    assert (spec.parse_from, spec.timeout_s) == ("stderr", 60.0)
    assert spec.metrics_from == {
        "eps": "eps", "avg_ms": "avg_ms", "wall_s": "wall_s", "user_s": "user_s", "sys_s": "sys_s",
    }  # fmt: skip
    assert metrics(params) == [("eps", "events/s", "higher"), ("avg_ms", "ms", "lower"), *TIMES]
    # the spec the runner reads back builds the same parser
    parsed = parse_spec(json.loads(spec.for_range(1, 3).to_json()), tools.parser_names())
    parse = tools.parser_for(parsed.parser, parsed.parser_options)
    assert parse("events per second:  812.50\nlatency\n  avg:   1.23\n") == {
        "eps": 812.5,
        "avg_ms": 1.23,
    }


def test_json_paths_name_their_metrics() -> None:
    params = {
        "argv": "iperf3 -c 198.18.0.1 -J",
        "json": "bps=end.sum_sent.bits_per_second, retr=end.sum_sent.retransmits",
        "metrics": "retr:count:lower,bps:bit/s:higher",
    }
    spec = COMMAND.spec(params, GUEST)
    assert spec.parser == "json"
    assert spec.parser_options == {
        "bps": "end.sum_sent.bits_per_second",
        "retr": "end.sum_sent.retransmits",
    }
    assert metrics(params) == [("retr", "count", "lower"), ("bps", "bit/s", "higher"), *TIMES]


REFUSED = [
    ({}, "command needs the command to time (argv)"),
    ({"argv": ""}, "command needs the command to time (argv)"),
    ({"argv": "  "}, "command needs the command to time (argv)"),
    ({"argv": "echo 'unterminated"}, "command: argv=\"echo 'unterminated\": No closing quotation"),
    ({"argv": "echo a\\"}, "No escaped character"),
    ({"argv": "true", "setup": 'mkdir "x'}, "command: setup='mkdir \"x': No closing quotation"),
    ({"argv": "true", "clean": "rm 'x"}, "command: clean=\"rm 'x\": No closing quotation"),
    ({"argv": "true", "regex": "(?P<r>[0-9]+", "metrics": "r:s:lower"},
     "regex '(?P<r>[0-9]+' does not compile: missing ), unterminated subpattern"),
    ({"argv": "true", "regex": "([0-9]+) ops/s", "metrics": "r:s:lower"},
     "has no named group: name each number (?P<NAME>...)"),
    ({"argv": "true", "regex": "(?P<r>[0-9]+)"}, "command: regex reads r, not in metrics"),
    ({"argv": "true", "regex": "(?P<r>[0-9]+)", "metrics": "r:s:lower,q:s:lower"},
     "metrics declares q, which regex does not read"),
    ({"argv": "true", "metrics": "r:s:lower"},
     "metrics declares r, which neither regex nor json reads"),
    ({"argv": "true", "regex": "(?P<r>1)", "metrics": "r:s:faster"},
     "r's direction 'faster' is neither lower nor higher"),
    ({"argv": "true", "regex": "(?P<r>1)", "metrics": "r::lower"}, "r's unit '' is not a unit"),
    ({"argv": "true", "regex": "(?P<r>1)", "metrics": "r:ops per s:higher"},
     "r's unit 'ops per s' is not a unit"),
    ({"argv": "true", "regex": "(?P<r>1)", "metrics": "r:s"}, "'r:s' is not NAME:UNIT:DIRECTION"),
    ({"argv": "true", "regex": "(?P<r>1)", "metrics": "r:s:lower,r:s:lower"},
     "metrics: r is declared twice"),
    ({"argv": "true", "regex": "(?P<wall_s>1)", "metrics": "wall_s:s:lower"},
     "metrics: wall_s is always recorded"),
    ({"argv": "true", "regex": "(?P<r>1)", "metrics": "9r:s:lower"}, "'9r' is not a metric name"),
    ({"argv": "true", "json": "end.bps", "metrics": "bps:bit/s:higher"},
     "json: 'end.bps' is not NAME=PATH"),
    ({"argv": "true", "json": "bps=end..bps", "metrics": "bps:bit/s:higher"},
     "json path 'end..bps' of bps has an empty key"),
    ({"argv": "true", "json": "b=x", "regex": "(?P<b>1)", "metrics": "b:s:lower"},
     "command reads its output with regex or with json, not both"),
    ({"argv": "true", "output": "both"}, "parameter output='both' does not look right"),
    ({"argv": "true", "timeout": "0"}, "parameter timeout=0 does not look right"),
]  # fmt: skip


@pytest.mark.parametrize(("params", "message"), REFUSED)
def test_bad_parameters_are_refused_when_resolved(params: dict[str, str], message: str) -> None:
    """`lab run` and `lab study check` resolve the parameters before anything runs."""
    with pytest.raises(UsageError) as info:
        COMMAND.resolve(params)
    assert message in info.value.message
    assert info.value.hint


def test_a_study_file_gives_the_parameters_in_toml() -> None:
    text = """\
name = "s"
variants = ["thp", "shp1g"]
vcpus = 1
memory = "1G"

[[workload]]
name = "command"
n = 5
params = { argv = "sh -c 'echo rate: 5 ops/s'", regex = 'rate: (?P<rate>\\S+) ops/s', metrics = "rate:ops/s:higher" }
"""  # noqa: E501
    study = parse_study(text, "s.toml")
    assert dict(study.workloads[0].params)["regex"] == r"rate: (?P<rate>\S+) ops/s"
    with pytest.raises(
        ConfigError, match=r"\(command\): command: regex reads rate, not in metrics"
    ):
        parse_study(text.replace(', metrics = "rate:ops/s:higher"', ""), "s.toml")


def test_a_run_stores_the_extracted_metric_with_its_unit_and_direction(tmp_path: Path) -> None:
    """The controller, the real runner (as a local process) and the store."""
    script = "import os; print(f'done {int(os.environ[\"LAB_ITERATION\"]) * 1.5} ops/s')"
    params = COMMAND.resolve(
        {
            "argv": shlex.join([sys.executable, "-S", "-c", script]),
            "regex": r"done (?P<rate>[0-9.]+) ops/s",
            "metrics": "rate:ops/s:higher",
        }
    )
    controller, store = make(
        tmp_path, [], n=3, guests=("lab-thp",), workload=COMMAND, params=params
    )
    controller.run()
    (run,) = store.runs()
    assert run.workload == "command"
    performance = [(m.name, m.unit, m.direction) for m in run.metrics if m.direction]
    assert sorted(performance) == sorted([("rate", "ops/s", "higher"), *TIMES])
    (rates,) = store.values(metric="rate")
    assert sorted(rates.values.tolist()) == [1.5, 3.0, 4.5]
    assert [len(s.values) for s in store.values(metric="wall_s")] == [3]
