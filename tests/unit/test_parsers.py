"""The tool-output parsers on real captured output; expected values are read off the files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.parsers.tools import (
    PARSERS,
    OptionsError,
    ParseError,
    json_parser,
    parse_bash_time,
    parse_iperf3_json,
    parse_lab_stream,
    parse_sysbench_memory,
    parse_sysbench_oltp,
    parser_for,
    parser_names,
    regex_parser,
)

CAPTURES = Path(__file__).parent.parent / "fixtures" / "captures"


def capture(name: str) -> str:
    return (CAPTURES / name).read_text()


# -- sysbench memory ------------------------------------------------------------------------


def test_sysbench_capture_gives_every_field_exactly() -> None:
    parsed = parse_sysbench_memory(capture("sysbench-1.0.20-memory-guest-tcg.txt"))
    assert parsed == {
        "total_time_s": 0.5005,
        "throughput_mib_s": 4053.53,
        "transferred_mib": 2048.00,
        "operations": 32.0,
        "operations_per_s": 63.34,
        "events": 32.0,
        "latency_min_ms": 10.72,
        "latency_avg_ms": 15.22,
        "latency_max_ms": 21.16,
        "latency_p95_ms": 18.61,
        "latency_sum_ms": 487.19,
    }


def test_sysbench_other_percentile_is_named_after_it() -> None:
    text = capture("sysbench-1.0.20-memory-guest-tcg.txt").replace(
        "95th percentile:                       18.61",
        "99th percentile:                       20.02",
    )
    parsed = parse_sysbench_memory(text)
    assert parsed["latency_p99_ms"] == 20.02
    assert "latency_p95_ms" not in parsed


@pytest.mark.parametrize(
    ("drop", "field"),
    [
        ("    total time:                          0.5005s\n", "total_time_s"),
        ("2048.00 MiB transferred (4053.53 MiB/sec)\n", "throughput_mib_s"),
    ],
)
def test_sysbench_missing_required_line_names_the_field(drop: str, field: str) -> None:
    text = capture("sysbench-1.0.20-memory-guest-tcg.txt")
    assert drop in text
    with pytest.raises(ParseError, match=field):
        parse_sysbench_memory(text.replace(drop, ""))


def test_sysbench_optional_lines_may_be_missing() -> None:
    text = capture("sysbench-1.0.20-memory-guest-tcg.txt").replace(
        "Total operations: 32 (   63.34 per second)\n", ""
    )
    parsed = parse_sysbench_memory(text)
    assert "operations_per_s" not in parsed
    assert parsed["total_time_s"] == 0.5005


def test_sysbench_fatal_message_is_passed_on() -> None:
    text = "sysbench 1.0.20\nFATAL: Invalid value for memory-block-size: 64Q\n"
    with pytest.raises(ParseError, match=r"total_time_s.*FATAL: Invalid value"):
        parse_sysbench_memory(text)


def test_sysbench_absurd_number_is_refused() -> None:
    text = capture("sysbench-1.0.20-memory-guest-tcg.txt").replace("0.5005s", "9" * 400 + "s")
    with pytest.raises(ParseError, match="finite"):
        parse_sysbench_memory(text)


# -- sysbench OLTP --------------------------------------------------------------------------

# `sysbench SCRIPT --db-driver=mysql ... --tables=2 --table-size=10000 --time=5 --threads=1
# --percentile=95 run` against MariaDB in lab-thp under TCG.
OLTP_CAPTURE = "sysbench-1.0.20-{}-guest-tcg.txt"


@pytest.mark.parametrize(
    ("script", "tps", "qps", "avg", "p95", "total"),
    [
        ("oltp_read_only", 35.34, 565.50, 28.01, 36.89, 5.0227),
        ("oltp_point_select", 971.60, 971.60, 1.01, 1.89, 5.0100),
        ("oltp_read_write", 23.04, 460.87, 43.03, 58.92, 5.0221),
    ],
)
def test_sysbench_oltp_captures_give_the_workloads_metrics(
    script: str, tps: float, qps: float, avg: float, p95: float, total: float
) -> None:
    parsed = parse_sysbench_oltp(capture(OLTP_CAPTURE.format(script)))
    assert parsed["transactions_per_s"] == tps
    assert parsed["queries_per_s"] == qps
    assert parsed["latency_avg_ms"] == avg
    assert parsed["latency_p95_ms"] == p95
    assert parsed["total_time_s"] == total
    assert (parsed["errors"], parsed["reconnects"]) == (0.0, 0.0)


def test_sysbench_oltp_read_write_capture_gives_every_field_exactly() -> None:
    """The queries performed block is read apart from the queries line below it."""
    assert parse_sysbench_oltp(capture(OLTP_CAPTURE.format("oltp_read_write"))) == {
        "transactions_per_s": 23.04,
        "queries_per_s": 460.87,
        "errors": 0.0,
        "reconnects": 0.0,
        "total_time_s": 5.0221,
        "transactions": 116.0,
        "queries": 2320.0,
        "queries_read": 1624.0,
        "queries_write": 464.0,
        "queries_other": 232.0,
        "events": 116.0,
        "latency_min_ms": 23.45,
        "latency_avg_ms": 43.03,
        "latency_max_ms": 84.23,
        "latency_p95_ms": 58.92,
        "latency_sum_ms": 4991.37,
    }


def test_sysbench_oltp_counts_ignored_errors_and_reconnects() -> None:
    text = capture(OLTP_CAPTURE.format("oltp_read_write"))
    text = text.replace(
        "ignored errors:                      0      (0.00 per sec.)",
        "ignored errors:                      7      (1.39 per sec.)",
    ).replace(
        "reconnects:                          0      (0.00 per sec.)",
        "reconnects:                          2      (0.40 per sec.)",
    )
    parsed = parse_sysbench_oltp(text)
    assert (parsed["errors"], parsed["reconnects"]) == (7.0, 2.0)


@pytest.mark.parametrize(
    ("drop", "field"),
    [
        (
            "    transactions:                        116    (23.04 per sec.)\n",
            "transactions_per_s",
        ),
        ("    queries:                             2320   (460.87 per sec.)\n", "queries_per_s"),
        ("    ignored errors:                      0      (0.00 per sec.)\n", "errors"),
        ("    reconnects:                          0      (0.00 per sec.)\n", "reconnects"),
        ("    total time:                          5.0221s\n", "total_time_s"),
        ("         avg:                                   43.03\n", "latency_avg_ms"),
        ("Latency (ms):\n", "latency_avg_ms"),
    ],
)
def test_sysbench_oltp_missing_required_line_names_the_field(drop: str, field: str) -> None:
    text = capture(OLTP_CAPTURE.format("oltp_read_write"))
    assert drop in text
    with pytest.raises(ParseError, match=f"^sysbench oltp: no .*, so no {field}$"):
        parse_sysbench_oltp(text.replace(drop, ""))


def test_sysbench_oltp_damaged_rate_is_refused_not_misread() -> None:
    text = capture(OLTP_CAPTURE.format("oltp_read_write")).replace("(23.04 per sec.)", "(23.04")
    with pytest.raises(ParseError, match=r"'transactions: N \(\.\.\. per sec\.\)' line"):
        parse_sysbench_oltp(text)


def test_sysbench_oltp_other_percentile_is_named_after_it() -> None:
    text = capture(OLTP_CAPTURE.format("oltp_read_only")).replace(
        "95th percentile:                       36.89",
        "99th percentile:                       61.08",
    )
    parsed = parse_sysbench_oltp(text)
    assert parsed["latency_p99_ms"] == 61.08 and "latency_p95_ms" not in parsed


def test_sysbench_oltp_refuses_memory_output_and_passes_on_fatal_lines() -> None:
    with pytest.raises(ParseError, match=r"so no transactions_per_s$"):
        parse_sysbench_oltp(capture("sysbench-1.0.20-memory-guest-tcg.txt"))
    # MariaDB not running: the driver's FATAL line, and no statistics
    text = (
        "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\n"
        "FATAL: error 2002: Can't connect to local server through socket"
        " '/run/mysqld/mysqld.sock' (2)\n"
    )
    with pytest.raises(ParseError, match=r"transactions_per_s; the tool said: FATAL: error 2002"):
        parse_sysbench_oltp(text)


# -- iperf3 -J ------------------------------------------------------------------------------


def test_iperf3_json_capture_gives_sender_receiver_and_retransmits() -> None:
    parsed = parse_iperf3_json(capture("iperf3-3.12-client-J-guest-tcg.json"))
    assert parsed == {
        "sender_bits_per_s": 1839860024.10323,
        "receiver_bits_per_s": 1835291531.468327,
        "retransmits": 0.0,
    }


def test_iperf3_text_output_is_refused_with_a_hint_about_json() -> None:
    with pytest.raises(ParseError, match="-J"):
        parse_iperf3_json(capture("iperf3-3.12-client-text-guest-tcg.txt"))


def test_iperf3_error_member_carries_iperf3s_message() -> None:
    text = json.dumps(
        {
            "start": {},
            "intervals": [],
            "end": {},
            "error": "unable to connect to server: Connection refused",
        }
    )
    with pytest.raises(ParseError, match="Connection refused"):
        parse_iperf3_json(text)


def edited_iperf3(edit: str) -> str:
    data = json.loads(capture("iperf3-3.12-client-J-guest-tcg.json"))
    end = data["end"]
    if edit == "no sum_received":
        del end["sum_received"]
    elif edit == "no sender bps":
        del end["sum_sent"]["bits_per_second"]
    elif edit == "string bps":
        end["sum_sent"]["bits_per_second"] = "fast"
    elif edit == "no retransmits":
        del end["sum_sent"]["retransmits"]
    return json.dumps(data)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("no sum_received", "end.sum_received"),
        ("no sender bps", "end.sum_sent.bits_per_second"),
        ("string bps", "end.sum_sent.bits_per_second is not a number"),
    ],
)
def test_iperf3_missing_or_wrong_field_is_named(edit: str, message: str) -> None:
    with pytest.raises(ParseError, match=message.replace(".", r"\.")):
        parse_iperf3_json(edited_iperf3(edit))


def test_iperf3_retransmits_are_optional() -> None:
    parsed = parse_iperf3_json(edited_iperf3("no retransmits"))
    assert parsed == {
        "sender_bits_per_s": 1839860024.10323,
        "receiver_bits_per_s": 1835291531.468327,
    }


HUGE = '{"end": {"sum_sent": {"bits_per_second": 1%s}, "sum_received": {}}}' % ("0" * 400)
NAN = '{"end": {"sum_sent": {"bits_per_second": NaN}, "sum_received": {}}}'


@pytest.mark.parametrize(
    "text", ["[]", '"x"', "{}", '{"end": []}', '{"end": {"sum_sent": 1}}', HUGE, NAN]
)
def test_iperf3_other_json_is_refused(text: str) -> None:
    with pytest.raises(ParseError):
        parse_iperf3_json(text)


# -- bash time ------------------------------------------------------------------------------


def test_bash_time_capture() -> None:
    assert parse_bash_time(capture("bash-time-make-nfs-guest.txt")) == {
        "real_s": 3.166,
        "user_s": 1.978,
        "sys_s": 0.900,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("real\t2m27.08s\nuser\t27m1.50s\nsys\t0m59.01s\n", (147.08, 1621.5, 59.01)),
        ("real 0m3.702s\nuser 0m2.001s\nsys 0m0.300s\n", (3.702, 2.001, 0.3)),
        ("real 3.70\nuser 2.00\nsys 0.30\n", (3.70, 2.0, 0.3)),  # time -p
        ("real\t0m3,166s\nuser\t0m1,978s\nsys\t0m0,900s\n", (3.166, 1.978, 0.9)),  # a comma locale
        ("make: Nothing to be done\nreal 0m1.000s\nuser 0m0.5s\nsys 0m0.1s\n", (1.0, 0.5, 0.1)),
    ],
)
def test_bash_time_forms(text: str, expected: tuple[float, float, float]) -> None:
    parsed = parse_bash_time(text)
    assert (parsed["real_s"], parsed["user_s"], parsed["sys_s"]) == expected


def test_bash_time_last_block_wins() -> None:
    text = (
        "real 0m1.000s\nuser 0m1.000s\nsys 0m1.000s\nreal 0m2.000s\nuser 0m2.000s\nsys 0m2.000s\n"
    )
    assert parse_bash_time(text) == {"real_s": 2.0, "user_s": 2.0, "sys_s": 2.0}


@pytest.mark.parametrize("missing", ["real", "user", "sys"])
def test_bash_time_missing_line_names_the_field(missing: str) -> None:
    lines = [
        line
        for line in capture("bash-time-make-nfs-guest.txt").splitlines()
        if not line.startswith(missing)
    ]
    with pytest.raises(ParseError, match=f"{missing}_s"):
        parse_bash_time("\n".join(lines))


def test_bash_time_ignores_words_that_only_start_like_a_field() -> None:
    with pytest.raises(ParseError):
        parse_bash_time("real world\nuser friendly\nsys admin\n")


# -- lab-stream -----------------------------------------------------------------------------

# `lab-stream 1000000 2 4` on a 2-CPU build host (gcc -O2 -fopenmp), not in a guest.
STREAM_HOST = "stream-lab-host.txt"


def test_lab_stream_capture_gives_best_and_mean_rates() -> None:
    assert parse_lab_stream(capture(STREAM_HOST)) == {
        "copy_mb_s": 1359.6, "copy_mean_mb_s": 1216.0,
        "scale_mb_s": 1998.2, "scale_mean_mb_s": 1332.5,
        "add_mb_s": 2946.2, "add_mean_mb_s": 2185.8,
        "triad_mb_s": 3017.4, "triad_mean_mb_s": 2399.1,
    }  # fmt: skip


# `lab run stream --n 1` (defaults: 4,000,000 doubles, 1 thread, 3 repetitions) in lab-thp,
# a 1-vCPU guest under TCG, built there by the workload's setup.
STREAM_GUEST = "stream-lab-guest-tcg.txt"


def test_lab_stream_guest_capture_gives_the_rates_the_run_stored() -> None:
    parsed = parse_lab_stream(capture(STREAM_GUEST))
    assert (parsed["copy_mb_s"], parsed["scale_mb_s"]) == (5365.4, 2039.0)
    assert (parsed["add_mb_s"], parsed["triad_mb_s"]) == (3039.6, 614.3)
    assert parsed["triad_mean_mb_s"] == 515.5


def test_lab_stream_reads_the_last_run_after_other_output() -> None:
    text = "warming up\n" + capture(STREAM_HOST).replace("1359.6", "1.5") + capture(STREAM_HOST)
    assert parse_lab_stream(text)["copy_mb_s"] == 1359.6


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("triad best_mb_s=3017.4 ", "triad "), "no best_mb_s on the 'triad' line, so no triad"),
        (("\nadd ", "\nsum "), "no 'add' line, so no add_mb_s"),
        (("check ok\n", ""), "no 'check' line: the program stopped before its end"),
        (("check ok", "check failed: element 7 is a=1"), "check failed: element 7 is a=1"),
        (("lab-stream 1 ", "lab-stream 2 "), "output version 2; this lab reads version 1"),
        (("best_mb_s=1998.2", "best_mb_s=inf"), "scale best_mb_s='inf' is not a number >= 0"),
        (("best_mb_s=1998.2", "best_mb_s=-5"), "scale best_mb_s='-5' is not a number >= 0"),
    ],
)
def test_lab_stream_damage_is_named(edit: tuple[str, str], message: str) -> None:
    text = capture(STREAM_HOST).replace(*edit)
    with pytest.raises(ParseError, match=re.escape(message)):
        parse_lab_stream(text)


def test_lab_stream_refuses_its_usage_message() -> None:
    text = "lab-stream: ARRAY_SIZE must be a whole number from 1000 to 2000000000, not '9'\n"
    with pytest.raises(ParseError, match="no 'lab-stream 1' line"):
        parse_lab_stream(text)


# -- configured: a regular expression ---------------------------------------------------------


def test_regex_fields_are_its_named_groups_from_the_last_match() -> None:
    parse = regex_parser({"pattern": r"^rate: (?P<rate>\S+) ops/s, (?P<ms>[0-9.]+) ms$"})
    text = "rate: 1 ops/s, 2 ms\nrate: 1.5e3 ops/s, 0.25 ms\ndone\n"
    assert parse(text) == {"rate": 1500.0, "ms": 0.25}


def test_regex_groups_without_a_name_are_not_fields() -> None:
    parse = regex_parser({"pattern": r"(fast|slow) (?P<n>[0-9]+)"})
    assert parse("slow 7") == {"n": 7.0}


@pytest.mark.parametrize(
    ("pattern", "text", "message"),
    [
        (r"rate: (?P<rate>[0-9.]+)", "speed: 5", "'rate: (?P<rate>[0-9.]+)' matches nothing"),
        (r"rate: (?P<rate>\S+)", "rate: fast", "group rate matched 'fast', not a number"),
        (r"rate: (?P<rate>\S+)", "rate: nan", "rate is not a finite number"),
        (r"rate: (?P<rate>\S+)", "rate: 1e999", "rate is not a finite number"),
        (r"(?P<a>[0-9]+)|(?P<b>x)", "x", "group a took part in no match, so no a"),
    ],
)
def test_regex_output_it_cannot_read_is_a_parse_error(
    pattern: str, text: str, message: str
) -> None:
    with pytest.raises(ParseError, match=re.escape(message)):
        regex_parser({"pattern": pattern})(text)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pattern": "(?P<rate>[0-9]+"}, "does not compile: missing ), unterminated subpattern"),
        ({"pattern": "([0-9]+) ops"}, "has no named group: name each number (?P<NAME>...)"),
        ({"pattern": ""}, "regex: no pattern"),
        ({}, "regex: no pattern"),
        ({"pattern": "(?P<a>1)", "flags": "i"}, "unknown option(s) ['flags']"),
    ],
)
def test_regex_options_are_checked_before_any_output(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionsError, match=re.escape(message)):
        regex_parser(options)


# -- configured: JSON paths ----------------------------------------------------------------------


def test_json_paths_follow_keys_and_list_indexes() -> None:
    parse = json_parser({"sent": "end.sum_sent.bits_per_second", "first": "intervals.0.sum.bytes"})
    parsed = parse(capture("iperf3-3.12-client-J-guest-tcg.json"))
    assert parsed == {"sent": 1839860024.10323, "first": 230162432.0}


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ('{"a": {"b": 1}}', "a.c", "the output has no a.c"),
        ('{"a": [1, 2]}', "a.2", "the output has no a.2"),
        ('{"a": [1, 2]}', "a.x", "the output has no a.x"),
        ('{"a": "12"}', "a", "a is not a number ('12')"),
        ('{"a": true}', "a", "a is not a number (True)"),
        ('{"a": NaN}', "a", "a is not a finite number"),
        ('{"a": 1' + "0" * 400 + "}", "a", "a is too large"),
        ("rate: 5", "a", "the output is not JSON"),
    ],
)
def test_json_output_it_cannot_read_is_a_parse_error(text: str, path: str, message: str) -> None:
    with pytest.raises(ParseError, match=re.escape(message)):
        json_parser({"x": path})(text)


@pytest.mark.parametrize("path", ["", "a..b", ".a", "a."])
def test_json_paths_with_an_empty_key_are_refused(path: str) -> None:
    with pytest.raises(OptionsError, match="has an empty key: join keys with single dots"):
        json_parser({"x": path})


# -- the registry ---------------------------------------------------------------------------


def test_registry_names_and_none() -> None:
    assert sorted(PARSERS) == [
        "iperf3", "lab-stream", "none", "sysbench-memory", "sysbench-oltp", "time",
    ]  # fmt: skip
    assert PARSERS["none"]("anything at all") == {}
    assert PARSERS["time"] is parse_bash_time


def test_parser_for_configures_only_the_parsers_that_take_options() -> None:
    assert parser_names() == [
        "iperf3", "json", "lab-stream", "none", "regex", "sysbench-memory", "sysbench-oltp",
        "time",
    ]  # fmt: skip
    assert parser_for("time") is parse_bash_time
    assert parser_for("regex", {"pattern": "(?P<n>[0-9]+)"})("n 4") == {"n": 4.0}
    with pytest.raises(OptionsError, match=r"parser 'time' takes no options, not \['pattern'\]"):
        parser_for("time", {"pattern": "x"})
    with pytest.raises(OptionsError, match="unknown parser 'perf'; known: "):
        parser_for("perf")


def test_parse_error_is_a_value_error_naming_the_tool() -> None:
    with pytest.raises(ValueError, match=r"^sysbench memory: ") as info:
        parse_sysbench_memory("")
    assert isinstance(info.value, ParseError)
    assert info.value.tool == "sysbench memory"
