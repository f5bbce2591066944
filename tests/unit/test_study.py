"""Study files: loading, every refusal, the plan's command lines, running it with fake steps."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lab.app.study import Study, load_study, parse_study
from lab.app.studyrun import (
    estimate_seconds,
    format_duration,
    report_argv,
    report_dir,
    report_request,
    run_argv,
    run_request,
)
from lab.cli import build_parser, main
from lab.commands import report as report_command
from lab.commands import run as run_command
from lab.commands.study import describe_plan
from lab.core.errors import ConfigError
from lab.core.paths import CHECKOUT
from lab.guests.variants import load_variants
from lab.run.workload import load_workloads

STUDIES = CHECKOUT / "studies"
WORKLOADS = load_workloads()
VARIANTS = list(load_variants())

HEAD = """\
name = "s"
variants = ["thp", "shp1g"]
vcpus = 1
memory = "1G"
"""
ONE = """
[[workload]]
name = "null"
n = 3
"""


def study(text: str) -> Study:
    return parse_study(text, "s.toml", WORKLOADS, VARIANTS)


@pytest.fixture(autouse=True)
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "lab.toml"
    path.write_text(f'libvirt_uri = "test:///default"\nstate_dir = "{tmp_path / "state"}"\n')
    monkeypatch.setenv("LAB_CONFIG", str(path))
    return path


# -- loading -----------------------------------------------------------------------------------


def test_a_small_study_with_its_defaults() -> None:
    got = study(HEAD + ONE)
    assert (got.name, got.variants, got.vcpus, got.memory) == ("s", ("thp", "shp1g"), 1, "1G")
    assert (got.confidence, got.threshold, got.image, got.reserve_host_cpus) == (
        99.99, "1%", None, None,
    )  # fmt: skip
    (run,) = got.workloads
    assert (run.name, dict(run.params), run.n, run.schedule, run.until) == (
        "null", {}, 3, "sync", None,
    )  # fmt: skip
    assert got.sha256 == hashlib.sha256((HEAD + ONE).encode()).hexdigest()


@pytest.mark.parametrize("name", ["demo.toml", "thp-vs-shp1g.toml"])
def test_shipped_study_files_validate(name: str) -> None:
    path = STUDIES / name
    got = load_study(path)
    assert got.path == path and got.text == path.read_text()
    assert got.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert got.variants == ("thp", "shp1g") and got.workloads


def test_shipped_demo_is_short_and_the_reference_study_as_he_ran_it() -> None:
    demo = load_study(STUDIES / "demo.toml")
    assert [(w.name, w.n, w.schedule) for w in demo.workloads] == [
        ("sysbench-memory", 5, "concurrent"), ("iperf3", 5, "concurrent"),
        ("demo-build", 5, "sync"),
    ]  # fmt: skip
    assert dict(demo.workloads[0].params) == {"time": 2, "total_size": "256M", "block_size": "1M"}
    ref = load_study(STUDIES / "thp-vs-shp1g.toml")
    assert (ref.vcpus, ref.memory, ref.confidence) == (14, "12G", 99.99)
    sysbench, iperf3, gdb = ref.workloads
    assert dict(sysbench.params) == {"block_size": "64M", "total_size": "4096G", "time": 500,
                                     "threads": 14}  # fmt: skip
    assert (sysbench.n, iperf3.n, iperf3.schedule) == (5000, 37000, "alternate")
    assert (gdb.name, gdb.n, gdb.until, gdb.params["jobs"]) == ("gdb-build", 24000, "verdict", 12)


@pytest.mark.parametrize("name", ["demo.toml", "thp-vs-shp1g.toml"])
def test_lab_study_check_accepts_the_shipped_files(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    assert main(["study", "check", str(STUDIES / name), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(": valid")
    for workload in load_study(STUDIES / name).workloads:
        assert f"lab run {workload.name} --n {workload.n}" in out
    assert not db.exists()  # check reads a store that exists; it never makes one


# -- refusals: each names the file and the key, and says what to write -------------------------


def head(old: str, new: str) -> str:
    """A study whose top-level keys have ``old`` replaced by ``new``."""
    return HEAD.replace(old, new) + ONE


def work(name: str = "null", extra: str = "", n: str = "n = 3\n") -> str:
    """A study with one [[workload]] of ``name``, its ``n`` line and ``extra`` lines."""
    return HEAD + f'\n[[workload]]\nname = "{name}"\n{n}{extra}'


WL = r"\[\[workload\]\]"
REFUSALS = [
    ("unknown top-level key", HEAD + "colour = 1\n" + ONE,
     r"s\.toml: unknown key 'colour'.*Known keys: name"),
    ("unknown workload key", work(extra="repeat = 2\n"), WL + r" 1: unknown key 'repeat'"),
    ("wrong type", head("vcpus = 1", 'vcpus = "1"'), r"key 'vcpus' must be an integer, not str"),
    ("bool is not an integer", head("vcpus = 1", "vcpus = true"), r"'vcpus' must be an integer"),
    ("n of the wrong type", work(n='n = "3"\n'), WL + r" 1: key 'n' must be an integer"),
    ("params not a table", work(extra='params = "time=2"\n'), r"key 'params' must be a table"),
    ("unknown workload", work("fio"),
     WL + r" 1: unknown workload 'fio'.*Known workloads: .*sysbench-memory"),
    ("unknown parameter", work("iperf3", "params = { seconds = 2 }\n"),
     r"\(iperf3\): workload iperf3 has no parameter seconds.*duration"),
    ("parameter of the wrong type", work("iperf3", 'params = { duration = "x" }\n'),
     r"parameter duration must be an integer"),
    ("integer parameter given a fraction", work("iperf3", "params = { duration = 2.5 }\n"),
     r"parameter duration must be an integer, not '2.5'"),
    ("parameter that is a list", work("iperf3", "params = { duration = [2] }\n"),
     r"params\.duration must be a string, an integer or a number"),
    ("n and until both missing", work(n=""), WL + r" 1 \(null\) has neither n nor until"),
    ("until without n", work(n='until = "verdict"\n'), r"until needs n"),
    ("unknown schedule", work(extra='schedule = "parallel"\n'),
     r"schedule = 'parallel': must be one of 'concurrent', 'alternate', 'sync'"),
    ("bad until rule", work(extra='until = "soon"\n'),
     r"until = 'soon': cannot read the stopping rule"),
    ("until with too small a maximum", work(n="n = 1\n", extra='until = "verdict"\n'),
     r"at least 2 iterations"),
    ("n below 1", work(n="n = 0\n"), r"n = 0: must be 1 or more"),
    ("unknown variant", head('"shp1g"', '"shp3g"'), r"unknown variant 'shp3g'"),
    ("one variant", head(', "shp1g"', ""), r"must be two variant names"),
    ("twins that do not differ", head('"shp1g"', '"thp"'), r"same variant twice"),
    ("missing name", head('name = "s"\n', ""), r"s\.toml: missing name"),
    ("study name that is a path", head('"s"', '"../s"'), r"not a plain name"),
    ("memory that is no size", head('"1G"', '"lots"'), r"memory = 'lots'"),
    ("threshold in words", HEAD + 'threshold = "1 percent"\n' + ONE, r"in the metric's unit"),
    ("threshold of 0", HEAD + 'threshold = "0"\n' + ONE, r"must be above 0"),
    ("confidence of 100", HEAD + "confidence = 100\n" + ONE, r"confidence = 100"),
    ("no workloads", HEAD + "workload = []\n", r"no " + WL + " tables"),
    ("workload not a table", HEAD + "workload = [1]\n", r"must be " + WL + " tables"),
    ("a workload twice", HEAD + ONE + ONE, WL + r" 2 runs null again"),
    ("gdb-build without its source", work("gdb-build"), r"gdb-build needs its source"),
    ("not TOML", HEAD + "[[workload]\n", r"s\.toml: not valid TOML"),
]  # fmt: skip


@pytest.mark.parametrize(("why", "text", "message"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_name_the_file_and_the_key(why: str, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        study(text)
    assert str(refused.value).startswith("s.toml: ")


def test_check_of_a_bad_file_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(HEAD + ONE + 'schedule = "parallel"\n')
    assert main(["study", "check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"lab: error: {path}: [[workload]] 1 (null)")
    assert main(["study", "check", str(tmp_path / "none.toml")]) == 2
    assert "no study file at" in capsys.readouterr().err


# -- the plan ----------------------------------------------------------------------------------


def test_run_argv_is_the_lab_run_command_the_real_parser_accepts() -> None:
    demo = load_study(STUDIES / "demo.toml")
    argv = run_argv(demo, demo.workloads[0], "/r/lab.db")
    assert argv == [
        "run", "sysbench-memory", "--n", "5", "--schedule", "concurrent", "--study", "demo",
        "--db", "/r/lab.db", "-p", "time=2", "-p", "total_size=256M", "-p", "block_size=1M",
    ]  # fmt: skip
    args = build_parser().parse_args(argv)
    assert (args.workload, args.n, args.schedule, args.study, args.db) == (
        "sysbench-memory", 5, "concurrent", "demo", "/r/lab.db",
    )  # fmt: skip
    assert args.param == ["time=2", "total_size=256M", "block_size=1M"] and args.until is None
    sync = build_parser().parse_args(run_argv(demo, demo.workloads[2], "/r/lab.db"))
    assert sync.schedule == "sync" and sync.param == []
    for workload in demo.workloads:  # the command shown is the request the study runs
        args = build_parser().parse_args(run_argv(demo, workload, "/r/lab.db"))
        assert run_command.request(args) == run_request(demo, workload, "/r/lab.db")


def test_an_until_workload_passes_its_rule_and_the_study_s_confidence_and_threshold() -> None:
    settings = 'confidence = 99.9\nthreshold = "0.5%"\n'
    got = study(HEAD + settings + ONE + 'until = "ci-halfwidth<1%"\n')
    argv = run_argv(got, got.workloads[0], "lab.db")
    assert argv[argv.index("--until") + 1] == "ci-halfwidth<1%"
    assert argv[argv.index("--confidence") + 1] == "99.9"
    assert argv[argv.index("--threshold") + 1] == "0.5%"
    args = build_parser().parse_args(argv)
    assert (args.until, args.confidence, args.threshold, args.n) == ("ci-halfwidth<1%", 99.9,
                                                                     "0.5%", 3)  # fmt: skip
    assert run_command.request(args) == run_request(got, got.workloads[0], "lab.db")


def test_a_sync_workload_may_swap_the_cpu_sets_and_passes_it_to_lab_run() -> None:
    got = study(HEAD + ONE + 'schedule = "sync"\nswap_every = 5\n')
    (run,) = got.workloads
    assert (run.schedule, run.swap_every) == ("sync", 5)
    argv = run_argv(got, run, "lab.db")
    assert argv[argv.index("--swap-every") + 1] == "5"
    args = build_parser().parse_args(argv)
    assert (args.schedule, args.swap_every) == ("sync", 5)
    assert run_command.request(args) == run_request(got, run, "lab.db")
    plain = study(HEAD + ONE)
    assert plain.workloads[0].swap_every is None
    assert "--swap-every" not in run_argv(plain, plain.workloads[0], "lab.db")


def test_a_sweep_makes_a_run_per_value_and_passes_it_to_lab_run() -> None:
    got = study(work("sysbench-memory", 'params = { time = 1 }\n'
                     'sweep = { total_size = ["16M", "64M"], threads = "1..2:+1" }\n'))  # fmt: skip
    (run,) = got.workloads
    assert [(a.key, a.values) for a in run.sweep] == [("total_size", ("16M", "64M")),
                                                       ("threads", ("1", "2"))]  # fmt: skip
    assert run.runs == 4 and run.sweep_order == "interleaved"
    assert run.sweep_plan is not None
    assert run.sweep_plan.labels()[1] == "total_size=16M, threads=2"
    argv = run_argv(got, run, "lab.db")
    assert argv[argv.index("--sweep") + 1] == "total_size=16M,64M"
    assert argv[-4:] == ["--sweep", "threads=1,2", "--sweep-order", "interleaved"]
    assert run_command.request(build_parser().parse_args(argv)) == run_request(got, run, "lab.db")
    blocked = study(work("sysbench-memory", 'sweep = { time = [1, 2] }\nsweep_order = "blocked"\n'))
    assert blocked.workloads[0].sweep_order == "blocked"
    assert "--sweep-order" in run_argv(blocked, blocked.workloads[0], "lab.db")
    assert "--sweep" not in run_argv(study(HEAD + ONE), study(HEAD + ONE).workloads[0], "lab.db")


SWEEP_REFUSALS = [
    ("unknown key", 'sweep = { colour = [1, 2] }\n',
     r"sweep colour: workload sysbench-memory has no parameter colour"),
    ("a value the workload refuses", 'sweep = { total_size = ["16M", "64Q"] }\n',
     r"sweep total_size=64Q: sysbench-memory: parameter total_size='64Q' does not look right"),
    ("an empty list", "sweep = { total_size = [] }\n", r"sweep.total_size: total_size is an"
     r" empty list"),
    ("an empty table", "sweep = {}\n", r"sweep is an empty table"),
    ("a range that does not parse", 'sweep = { total_size = "4M..4G" }\n',
     r"cannot read the range sweep.total_size total_size=4M..4G"),
    ("too many runs", 'sweep = { total_size = "4K..4T:x1.1" }\n', r"makes more than 64 runs"),
    ("given and swept", 'params = { time = 1 }\nsweep = { time = [1, 2] }\n',
     r"time is both given \(-p\) and swept \(sweep\)"),
    ("with a rule", 'until = "verdict"\nsweep = { time = [1, 2] }\n',
     r"a sweep cannot stop on a rule"),
    ("an order alone", 'sweep_order = "blocked"\n', r"sweep_order needs a sweep"),
    ("an unknown order", 'sweep = { time = [1, 2] }\nsweep_order = "shuffled"\n',
     r"sweep_order = 'shuffled': must be one of 'interleaved', 'blocked'"),
    ("not a table", 'sweep = ["16M"]\n', r"key 'sweep' must be a table, not list"),
]  # fmt: skip


@pytest.mark.parametrize(("why", "extra", "message"), SWEEP_REFUSALS,
                         ids=[r[0] for r in SWEEP_REFUSALS])  # fmt: skip
def test_sweep_refusals_name_the_file_and_the_key(why: str, extra: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        study(work("sysbench-memory", extra))
    assert str(refused.value).startswith("s.toml: ")


def test_a_sweep_s_time_is_each_value_s_stored_time_or_the_workload_s() -> None:
    from lab.app.studyrun import run_time_key

    got = study(work("sysbench-memory", 'sweep = { total_size = ["16M", "64M"] }\n'))
    (run,) = got.workloads
    assert run.sweep_plan is not None
    _, large = run.sweep_plan.params
    assert estimate_seconds(run, None) is None
    assert estimate_seconds(run, 10.0) == 2 * 3 * 10.0  # two runs of n = 3
    stored = {run_time_key("sysbench-memory", large): 100.0}
    assert estimate_seconds(run, 10.0, stored) == 3 * 10.0 + 3 * 100.0
    assert estimate_seconds(run, None, stored) is None  # 16M is not timed
    lines = describe_plan(got, "lab.db", {"sysbench-memory": 10.0})
    assert "     sweep: 2 runs: total_size = 16M, 64M, interleaved, each n = 3:" in lines
    assert "       2. total_size=64M" in lines
    assert lines[-1] == "  estimated time: 1 min 00 s"


SWAP_REFUSALS = [
    ("with concurrent", 'schedule = "concurrent"\nswap_every = 5\n',
     r"\(null\): swap_every needs schedule = \"sync\", not 'concurrent'"),
    ("with alternate", 'schedule = "alternate"\nswap_every = 5\n', r"not 'alternate'"),
    ("below 1", 'schedule = "sync"\nswap_every = 0\n', r"swap_every = 0: must be 1 or more"),
    ("not an integer", 'schedule = "sync"\nswap_every = "5"\n',
     r"key 'swap_every' must be an integer, not str"),
]  # fmt: skip


@pytest.mark.parametrize(("why", "extra", "message"), SWAP_REFUSALS,
                         ids=[r[0] for r in SWAP_REFUSALS])  # fmt: skip
def test_swap_every_refusals_name_the_file_and_the_key(why: str, extra: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        study(work(extra=extra))
    assert str(refused.value).startswith("s.toml: ")


@pytest.mark.parametrize(("line", "rule"), [("warmup = 2", "2"), ('warmup = "auto"', "auto"),
                                            ("warmup = 0", "0")])  # fmt: skip
def test_a_declared_warmup_reaches_lab_run(line: str, rule: str) -> None:
    got = study(HEAD + ONE + line + "\n")
    (run,) = got.workloads
    assert run.warmup == rule
    argv = run_argv(got, run, "lab.db")
    assert argv[argv.index("--warmup") + 1] == rule
    assert build_parser().parse_args(argv).warmup == rule
    assert run_command.request(build_parser().parse_args(argv)) == run_request(got, run, "lab.db")
    plain = study(HEAD + ONE)
    assert plain.workloads[0].warmup is None
    assert "--warmup" not in run_argv(plain, plain.workloads[0], "lab.db")


WARMUP_REFUSALS = [
    ("a fraction", "warmup = 2.5\n",
     WL + r" 1: key 'warmup' must be an integer or a string, not float \(2\.5\)"),
    ("a boolean", "warmup = true\n", r"key 'warmup' must be an integer or a string, not bool"),
    ("negative", "warmup = -1\n", WL + r" 1 \(null\): warmup = -1: must be 0 or more"),
    ("another word", 'warmup = "soon"\n',
     r"\(null\): warmup = 'soon': must be a count of iterations \(0 or more\) or 'auto'$"),
    ("a count in quotes", 'warmup = "2"\n',
     r"warmup = '2': a count is an integer: write warmup = 2, without quotes"),
    ("all of n", "warmup = 3\n", r"warmup = 3: discards every one of the n = 3 iterations"),
]  # fmt: skip


@pytest.mark.parametrize(("why", "extra", "message"), WARMUP_REFUSALS,
                         ids=[r[0] for r in WARMUP_REFUSALS])  # fmt: skip
def test_warmup_refusals_name_the_file_and_the_key(why: str, extra: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        study(work(extra=extra))
    assert str(refused.value).startswith("s.toml: ")


def test_the_report_goes_beside_the_store_in_a_folder_named_after_the_study() -> None:
    demo = load_study(STUDIES / "demo.toml")
    assert report_dir(demo, "/r/lab.db") == Path("/r/report-demo")
    args = build_parser().parse_args(report_argv(demo, "/r/lab.db"))
    assert (args.out, args.study, args.db, args.baseline) == (
        "/r/report-demo", "demo", "/r/lab.db", "thp,shp1g",
    )  # fmt: skip
    assert (args.confidence, args.threshold) == (99.99, "1%")
    assert report_command.request(args) == report_request(demo, "/r/lab.db")


def test_estimates_from_stored_iteration_times() -> None:
    got = study(HEAD + ONE + ONE.replace("null", "iperf3") + 'schedule = "alternate"\n')
    null, iperf3 = got.workloads
    assert estimate_seconds(null, None) is None
    assert estimate_seconds(null, 10.0) == 30.0
    assert estimate_seconds(iperf3, 10.0) == 60.0  # one guest after the other
    assert [format_duration(s) for s in (5, 125, 7260, 90000)] == [
        "5 s", "2 min 05 s", "2 h 01 min", "1 d 1 h",
    ]  # fmt: skip
    lines = describe_plan(got, "lab.db", {"null": 10.0, "iperf3": 10.0})
    assert lines[-1] == "  estimated time: 1 min 30 s"
    lines = describe_plan(got, "lab.db", {"null": 10.0})
    assert "time unknown" in lines[-4] and lines[-1].startswith("  estimated time: unknown")


# -- the key reference: one table, from the keys the loader checks ------------------------------


def test_the_key_table_is_made_from_the_keys_the_loader_checks() -> None:
    from lab.app.study import STUDY_KEYS, WORKLOAD_KEYS, key_reference

    table = key_reference()
    for keys in (STUDY_KEYS, WORKLOAD_KEYS):
        for name, key in keys.items():
            assert key.kind and key.meaning, name  # every key has its row
            label = f"[[{name}]]" if name == "workload" else name
            assert f"\n    {label:<19}{key.kind}" in table
    assert table.index("Keys of each [[workload]] table") > table.index("    threshold ")


def test_readme_and_help_show_the_same_key_table(capsys: pytest.CaptureFixture[str]) -> None:
    from lab.app.study import key_reference

    assert f"```text\n{key_reference()}\n```" in (CHECKOUT / "docs" / "studies.md").read_text()
    with pytest.raises(SystemExit):
        main(["study", "--help"])
    assert key_reference() in capsys.readouterr().out


BIG = "100000000000000000000"  # 10^20: the study that `lab study check` called valid
ONE_BIG = ONE.replace("n = 3", f"n = {BIG}")
BOUNDS = [
    ("vcpus of 10^20", HEAD.replace("vcpus = 1", f"vcpus = {BIG}") + ONE,
     r"vcpus = 100000000000000000000: must be 4,096 or less"),
    ("reserve_host_cpus of 10^20", HEAD + f"reserve_host_cpus = {BIG}\n" + ONE,
     r"reserve_host_cpus = 100000000000000000000: must be 4,096 or less"),
    ("n of 10^20", HEAD + ONE_BIG, r"n = 100000000000000000000: must be 10,000,000 or less"),
    ("swap_every of 10^20", HEAD + ONE + f"swap_every = {BIG}\n",
     r"swap_every = 100000000000000000000: must be 10,000,000 or less"),
    ("reboot_every of 10^20", HEAD + ONE + f"reboot_every = {BIG}\n",
     r"reboot_every = 100000000000000000000: must be 10,000,000 or less"),
    ("an integer param of 10^20", HEAD + ONE + f"params = {{ threads = {BIG} }}\n",
     r"params\.threads = 100000000000000000000: params\.threads must be between -2\^63"),
    ("a param of inf", HEAD + ONE + "params = { time = inf }\n",
     r"params\.time = inf: params\.time must be a finite number"),
    ("a param of nan", HEAD + ONE + "params = { time = nan }\n",
     r"params\.time = nan: params\.time must be a finite number"),
]  # fmt: skip


@pytest.mark.parametrize(("why", "text", "message"), BOUNDS, ids=[r[0] for r in BOUNDS])
def test_every_number_is_bounded_and_the_refusal_names_key_and_bound(
    why: str, text: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        study(text)
    assert str(refused.value).startswith("s.toml: ")


def test_numbers_at_their_bounds_are_accepted() -> None:
    at = HEAD.replace("vcpus = 1", "vcpus = 4096") + ONE.replace("n = 3", "n = 10000000")
    loaded = study(at + "reboot_every = 10000000\n")
    assert (loaded.vcpus, loaded.workloads[0].n) == (4096, 10_000_000)
