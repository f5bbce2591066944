"""The in-guest runner, run for real as a local process, from the zipapp the controller ships.

Every test writes the runner's zipapp into a temporary "guest" directory and runs
``python -I -S runner-HASH.pyz``: isolated, without site-packages, as a guest with only python3.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lab.inguest.journal import SYNCED, JournalEntry, JournalEvent, read_journal
from lab.run.shipping import members, write_zipapp

CAPTURES = Path(__file__).parent.parent / "fixtures" / "captures"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id").read_text().strip()


@dataclass
class GuestDir:
    """A copy of the runner and its parsers, and a run directory, like the guest has."""

    root: Path
    app: Path
    started: set[str] = field(default_factory=set)

    @property
    def dir(self) -> Path:
        return self.root / "run"

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-I", "-S", str(self.app), *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    def start(self, key: str, **spec: Any) -> dict[str, Any]:
        path = self.root / f"{key}.spec.json"
        path.write_text(json.dumps({"workload": "test", "argv": ["true"], **spec}))
        self.started.add(key)
        proc = self.cli("start", "--dir", str(self.dir), "--run-key", key, "--spec", str(path))
        assert proc.returncode == 0, proc.stderr
        return dict(json.loads(proc.stdout))

    def status(self, key: str) -> dict[str, Any]:
        proc = self.cli("status", "--dir", str(self.dir), "--run-key", key)
        assert proc.returncode == 0, proc.stderr
        return dict(json.loads(proc.stdout))

    def stop(self, key: str) -> dict[str, Any]:
        proc = self.cli("stop", "--dir", str(self.dir), "--run-key", key)
        return dict(json.loads(proc.stdout))

    def all_records(self, key: str) -> list[JournalEntry | JournalEvent]:
        path = self.dir / f"{key}.journal"
        return read_journal(path.read_text()) if path.exists() else []

    def records(self, key: str) -> list[JournalEntry | JournalEvent]:
        """The journal without its ``synced`` lines (tests of durability read them)."""
        return [r for r in self.all_records(key) if getattr(r, "event", None) != SYNCED]

    def entries(self, key: str) -> list[JournalEntry]:
        return [r for r in self.records(key) if isinstance(r, JournalEntry)]

    def events(self, key: str) -> list[str]:
        return [r.event for r in self.records(key) if isinstance(r, JournalEvent)]

    def wait(self, key: str, until: Callable[[list[JournalEntry | JournalEvent]], bool],
             timeout: float = 30.0) -> list[JournalEntry | JournalEvent]:  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            records = self.records(key)
            if until(records):
                return records
            time.sleep(0.01)
        raise AssertionError(f"timed out; journal: {self.records(key)}")

    def finish(self, key: str, timeout: float = 30.0) -> list[JournalEntry | JournalEvent]:
        """Wait for a terminal event and for the runner to let go of its lock."""
        terminal = ("done", "gave_up", "stopped")
        self.wait(key, lambda rs: any(getattr(r, "event", None) in terminal for r in rs), timeout)
        deadline = time.monotonic() + 10
        while self.status(key)["running"]:
            assert time.monotonic() < deadline, "the runner did not exit after its last event"
            time.sleep(0.02)
        return self.records(key)


def copied_guest(tmp_path: Path) -> Iterator[GuestDir]:
    """The runner's zipapp, as the controller copies it; ends the runners a test started."""
    root = tmp_path / "guest"
    root.mkdir()
    guest_dir = GuestDir(root, write_zipapp(root))
    yield guest_dir
    for key in guest_dir.started:  # end only the runners this test started, with their commands
        if guest_dir.status(key)["running"] and not guest_dir.stop(key)["stopped"]:
            os.kill(guest_dir.status(key)["pid"], signal.SIGKILL)


@pytest.fixture(name="guest")
def guest_fixture(tmp_path: Path) -> Iterator[GuestDir]:
    yield from copied_guest(tmp_path)


def running(pid: int) -> bool:
    """True while ``pid`` runs: a zombie has ended, whenever its new parent (here pid 1, which
    in a container may reap late) gets round to reaping it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_the_zipapp_imports_only_the_standard_library_and_itself() -> None:
    shipped = {name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
               for name in members()}  # fmt: skip
    for name, path in members().items():
        tree = ast.parse(path.read_text())
        imported = {alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.Import) for alias in node.names}  # fmt: skip
        imported |= {node.module for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module}  # fmt: skip
        outside = {m for m in imported if m not in shipped
                   and m.split(".")[0] not in sys.stdlib_module_names}  # fmt: skip
        assert outside <= {"__future__"}, (name, outside)


def test_null_iterations_each_get_one_ok_line_then_done(guest: GuestDir) -> None:
    reply = guest.start("null", end_iteration=5, metrics_from={"wall_s": "wall_s"})
    assert reply["started"] is True and isinstance(reply["pid"], int)
    records = guest.finish("null")
    entries = [r for r in records if isinstance(r, JournalEntry)]
    assert [e.key for e in entries] == [(i, 1) for i in range(1, 6)]
    for entry in entries:
        assert entry.ok and entry.exit_status == 0 and entry.error is None
        assert entry.boot_id == BOOT_ID
        assert entry.wall is not None and 0 < entry.wall < 5
        assert entry.metrics == {"wall_s": entry.wall}
        assert entry.ended is not None and entry.started <= entry.ended
    assert guest.events("null") == ["start", *["begin"] * 5, "done"]
    done = records[-1]
    assert isinstance(done, JournalEvent) and done.fields["ok"] == 5
    assert guest.status("null")["finished"] is True


def test_failed_iterations_are_recorded_not_dropped(guest: GuestDir) -> None:
    guest.start("fail", end_iteration=3, argv=["sh", "-c", "echo out; echo oops >&2; exit 3"])
    guest.finish("fail")
    entries = guest.entries("fail")
    assert [e.key for e in entries] == [(1, 1), (2, 1), (3, 1)]
    for entry in entries:
        assert not entry.ok and entry.exit_status == 3 and entry.metrics == {}
        assert entry.error == "sh exited with status 3"
        assert entry.output_tail == "out\noops\n"
    assert guest.events("fail")[-1] == "done"


def test_gives_up_after_max_failures(guest: GuestDir) -> None:
    guest.start("giveup", end_iteration=10, argv=["false"], max_failures=2)
    records = guest.finish("giveup")
    assert [e.key for e in guest.entries("giveup")] == [(1, 1), (2, 1)]
    last = records[-1]
    assert isinstance(last, JournalEvent) and last.event == "gave_up"
    assert last.fields["failures"] == 2 and "false exited" in last.fields["error"]
    assert "done" not in guest.events("giveup")


def test_timeout_kills_the_command_and_fails_the_attempt(guest: GuestDir) -> None:
    guest.start("slow", end_iteration=1, argv=["sleep", "30"], timeout_s=0.3)
    guest.finish("slow")
    (entry,) = guest.entries("slow")
    assert not entry.ok and entry.exit_status == -signal.SIGTERM
    assert entry.error == "timed out after 0.3 s and was killed"
    assert entry.wall is not None and 0.3 <= entry.wall < 5


def test_parser_output_becomes_the_named_metrics(guest: GuestDir) -> None:
    capture = CAPTURES / "sysbench-1.0.20-memory-guest-tcg.txt"
    guest.start("sb", end_iteration=2, argv=["cat", str(capture)], parser="sysbench-memory",
                metrics_from={"total_time_s": "total", "throughput_mib_s": "mib_s"})  # fmt: skip
    guest.finish("sb")
    for entry in guest.entries("sb"):
        assert entry.ok and entry.metrics == {"total": 0.5005, "mib_s": 4053.53}
        assert entry.output_tail.endswith("execution time (avg/stddev):   0.4872/0.00\n\n")


def test_parser_can_read_stderr(guest: GuestDir) -> None:
    script = "printf 'real\\t0m1.500s\\nuser\\t0m1.000s\\nsys\\t0m0.250s\\n' >&2"
    guest.start("t", end_iteration=1, argv=["sh", "-c", script], parser="time",
                parse_from="stderr", metrics_from={"real_s": "real", "sys_s": "sys"})  # fmt: skip
    guest.finish("t")
    assert guest.entries("t")[0].metrics == {"real": 1.5, "sys": 0.25}


def test_a_configured_parser_reads_what_its_options_say(guest: GuestDir) -> None:
    script = "echo 'run 1: 10 ops/s'; echo 'run 2: 12.5 ops/s in 3 s' >&2"
    guest.start("rx", end_iteration=2, argv=["sh", "-c", script], parser="regex",
                parser_options={"pattern": r"(?P<rate>[0-9.]+) ops/s in (?P<took>[0-9]+) s"},
                parse_from="stderr", metrics_from={"rate": "rate", "took": "took",
                                                   "wall_s": "wall_s"})  # fmt: skip
    guest.finish("rx")
    for entry in guest.entries("rx"):
        assert entry.ok, entry
        assert (entry.metrics["rate"], entry.metrics["took"]) == (12.5, 3.0)
        assert entry.metrics["wall_s"] == entry.wall


def test_parse_error_fails_the_attempt_with_the_parsers_message(guest: GuestDir) -> None:
    guest.start("pe", end_iteration=1, argv=["echo", "nothing"], parser="sysbench-memory",
                metrics_from={"total_time_s": "total_time_s"})  # fmt: skip
    guest.finish("pe")
    (entry,) = guest.entries("pe")
    assert not entry.ok and entry.exit_status == 0 and entry.metrics == {}
    assert entry.error is not None and entry.error.startswith("parse error: sysbench memory: ")
    assert "total_time_s" in entry.error


def test_a_metric_nobody_produces_fails_the_attempt(guest: GuestDir) -> None:
    guest.start("nometric", end_iteration=1, metrics_from={"speed": "speed"})
    guest.finish("nometric")
    (entry,) = guest.entries("nometric")
    assert not entry.ok and entry.error == "no speed in the output of parser 'none'"


def test_user_and_sys_are_the_childs(guest: GuestDir) -> None:
    burn = "import time\nwhile time.process_time() < 0.3: pass"
    guest.start("cpu", end_iteration=1, argv=[sys.executable, "-S", "-c", burn],
                metrics_from={"user_s": "user_s", "sys_s": "sys_s"})  # fmt: skip
    guest.finish("cpu")
    (entry,) = guest.entries("cpu")
    assert entry.user is not None and entry.sys is not None and entry.wall is not None
    assert entry.user + entry.sys >= 0.3
    assert entry.metrics == {"user_s": entry.user, "sys_s": entry.sys}


def test_setup_runs_once_per_start_and_clean_before_each_attempt(guest: GuestDir) -> None:
    trace = guest.root / "trace"
    step = lambda letter: ["sh", "-c", f"printf {letter} >> {trace}"]  # noqa: E731
    spec = dict(setup_argv=step("s"), clean_argv=step("c"), argv=step("t"))
    guest.start("steps", end_iteration=3, **spec)
    guest.finish("steps")
    assert trace.read_text() == "sctctct"
    guest.start("steps", end_iteration=5, **spec)  # resumes with 4 and 5
    guest.finish("steps")
    assert trace.read_text() == "sctctct" + "sctct"
    assert [e.key for e in guest.entries("steps")] == [(i, 1) for i in range(1, 6)]
    assert guest.events("steps").count("setup") == 2


def test_setup_failure_gives_up_before_any_iteration(guest: GuestDir) -> None:
    guest.start("badsetup", end_iteration=3, setup_argv=["sh", "-c", "echo no nfs; exit 32"])
    records = guest.finish("badsetup")
    assert guest.entries("badsetup") == []
    setup = next(r for r in records if isinstance(r, JournalEvent) and r.event == "setup")
    assert setup.fields["ok"] is False and setup.fields["output_tail"] == "no nfs\n"
    assert guest.events("badsetup")[-1] == "gave_up"


def test_failed_clean_fails_the_attempt_without_running_it(guest: GuestDir) -> None:
    trace = guest.root / "trace"
    guest.start("badclean", end_iteration=1, clean_argv=["false"],
                argv=["sh", "-c", f"echo ran > {trace}"])  # fmt: skip
    guest.finish("badclean")
    (entry,) = guest.entries("badclean")
    assert not entry.ok and entry.error == "clean command failed: false exited with status 1"
    assert not trace.exists()
    assert "begin" not in guest.events("badclean")


def test_a_command_that_cannot_start_is_a_failed_attempt(guest: GuestDir) -> None:
    guest.start("nocmd", end_iteration=1, argv=["/nonexistent/benchmark"])
    guest.finish("nocmd")
    (entry,) = guest.entries("nocmd")
    assert not entry.ok and entry.exit_status is None
    assert entry.error is not None and entry.error.startswith(
        "cannot start '/nonexistent/benchmark'"
    )


def test_cwd_env_and_iteration_variables_reach_the_command(guest: GuestDir) -> None:
    work = guest.root / "work"
    work.mkdir()
    script = 'echo "$PWD $COLOR $LAB_ITERATION $LAB_ATTEMPT $LAB_RUN_KEY"'
    guest.start("env", end_iteration=2, argv=["sh", "-c", script], cwd=str(work),
                env={"COLOR": "blue"}, attempt_base=7)  # fmt: skip
    guest.finish("env")
    tails = [(e.key, e.output_tail) for e in guest.entries("env")]
    assert tails == [((1, 7), f"{work} blue 1 7 env\n"), ((2, 7), f"{work} blue 2 7 env\n")]


def test_start_detaches_from_the_caller(guest: GuestDir) -> None:
    began = time.monotonic()
    reply = guest.start("detached", end_iteration=1, argv=["sleep", "30"])
    assert time.monotonic() - began < 10
    pid = reply["pid"]
    assert guest.status("detached")["running"] is True
    assert os.getsid(pid) != os.getsid(0)  # its own session: a hang-up does not reach it
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    assert os.readlink(f"/proc/{pid}/fd/2") == str(guest.dir / "detached.log")
    assert guest.stop("detached")["stopped"] is True


def test_killing_the_callers_session_does_not_stop_the_run(guest: GuestDir) -> None:
    """What a dropped SSH connection does: SIGHUP, then SIGKILL, to the caller's group."""
    spec = guest.root / "spec.json"
    spec.write_text(json.dumps({"workload": "t", "argv": ["sleep", "0.2"], "end_iteration": 5}))
    guest.started.add("hup")
    start = [sys.executable, "-I", "-S", str(guest.app), "start",
             "--dir", str(guest.dir), "--run-key", "hup", "--spec", str(spec)]  # fmt: skip
    script = f"{' '.join(start)} > {guest.root / 'reply'}; sleep 60"
    caller = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    guest.wait("hup", lambda rs: "begin" in guest.events("hup"))
    for signum in (signal.SIGHUP, signal.SIGKILL):
        os.killpg(caller.pid, signum)
    caller.wait(timeout=10)
    assert guest.status("hup")["running"] is True
    guest.finish("hup")
    assert [(e.key, e.ok) for e in guest.entries("hup")] == [((i, 1), True) for i in range(1, 6)]


def test_second_start_while_running_starts_nothing(guest: GuestDir) -> None:
    first = guest.start("once", end_iteration=1, argv=["sleep", "30"])
    second = guest.start("once", end_iteration=1, argv=["sleep", "30"])
    assert (second["started"], second["running"], second["pid"]) == (False, True, first["pid"])
    guest.stop("once")
    assert guest.events("once").count("start") == 1


def test_stop_records_the_attempt_in_progress_as_stopped(guest: GuestDir) -> None:
    child_pid = guest.root / "child.pid"
    guest.start("stopme", end_iteration=5,
                argv=["sh", "-c", f"echo $$ > {child_pid}; exec sleep 30"])  # fmt: skip
    guest.wait("stopme", lambda rs: child_pid.exists() and "begin" in guest.events("stopme"))
    in_flight = guest.status("stopme")["in_flight"]
    assert in_flight is not None and (in_flight["iteration"], in_flight["attempt"]) == (1, 1)
    reply = guest.stop("stopme")
    assert (reply["stopped"], reply["running"]) == (True, False)
    (entry,) = guest.entries("stopme")
    assert not entry.ok and entry.exit_status == -signal.SIGTERM
    assert entry.error == "stopped: the runner was asked to stop"
    assert guest.events("stopme")[-1] == "stopped"
    deadline = time.monotonic() + 5
    while running(int(child_pid.read_text())):  # the command went too
        assert time.monotonic() < deadline, "the stopped command still runs"
        time.sleep(0.02)
    status = guest.status("stopme")
    assert (status["running"], status["in_flight"], status["finished"]) == (False, None, True)


def test_stop_when_nothing_runs(guest: GuestDir) -> None:
    assert guest.stop("idle") == {
        "stopped": False,
        "running": False,
        "pid": None,
        "run_key": "idle",
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"workload": "x", "end_iteration": 1}, "'argv' is missing"),
        ({"workload": "x", "argv": "true", "end_iteration": 1}, "'argv' must be a non-empty list"),
        ({"workload": "x", "argv": ["true"], "end_iteration": 1, "parser": "perf"},
         "unknown parser 'perf'; known: ['iperf3', 'json', 'lab-stream', 'none', 'regex',"
         " 'sysbench-memory', 'sysbench-oltp', 'time']"),
        ({"workload": "x", "argv": ["true"], "end_iteration": 1, "parser_options": {"a": 1}},
         "spec field 'parser_options' must be an object of strings"),
        ({"workload": "x", "argv": ["true"], "end_iteration": 1, "parser": "regex",
          "parser_options": {"pattern": "([0-9]+"}},
         "spec field 'parser_options': regex '([0-9]+' does not compile: missing ), unterminated"),
        ({"workload": "x", "argv": ["true"], "end_iteration": 1, "parser": "time",
          "parser_options": {"pattern": "x"}},
         "spec field 'parser_options': parser 'time' takes no options, not ['pattern']"),
        ({"workload": "x", "argv": ["true"], "end_iteration": 1, "argvv": []},
         "unknown spec field(s) ['argvv']"),
        ({"workload": "x", "argv": ["true"], "end_iteration": 1, "timeout_s": 0}, "'timeout_s'"),
        ({"workload": "x", "argv": ["true"], "start_iteration": 5, "end_iteration": 1},
         "end_iteration 1 < start_iteration"),
        ([], "must be a JSON object"),
    ],
)  # fmt: skip
def test_bad_spec_is_refused_naming_the_field(guest: GuestDir, spec: object, message: str) -> None:
    path = guest.root / "bad.json"
    path.write_text(json.dumps(spec))
    proc = guest.cli("start", "--dir", str(guest.dir), "--run-key", "bad", "--spec", str(path))
    assert proc.returncode == 2 and message in proc.stderr
    assert not (guest.dir / "bad.journal").exists()


def test_run_key_cannot_leave_the_directory(guest: GuestDir) -> None:
    proc = guest.cli("status", "--dir", str(guest.dir), "--run-key", "../escape")
    assert proc.returncode == 2 and "run key '../escape' must match" in proc.stderr


def test_the_command_gets_only_stdin_stdout_stderr_and_default_sigpipe(guest: GuestDir) -> None:
    """posix_spawn keeps every descriptor without close-on-exec: the runner's own must all
    have it (those it keeps open on /proc too), and SIGPIPE, which Python ignores, is the
    default again in the command."""
    # A child that opens nothing lists what it inherited: listing /proc with ls shows the
    # listing's own descriptor, and a pipeline or a redirection makes the shell hold more.
    probe = (
        "import os\nfor fd in range(256):\n try: os.fstat(fd); print(fd, end=' ')\n"
        " except OSError: pass"
    )
    script = f'{sys.executable} -I -S -c "{probe}"; grep SigIgn /proc/$$/status'
    guest.start("fds", end_iteration=1, argv=["sh", "-c", script], backing=True)  # its /proc
    guest.finish("fds")
    (entry,) = guest.entries("fds")
    fds, ignored = entry.output_tail.split("SigIgn:")
    assert entry.ok and sorted(fds.split()) == ["0", "1", "2"]
    assert not int(ignored.strip(), 16) & (1 << (signal.SIGPIPE - 1))


def test_with_backing_an_ok_attempt_carries_the_guests_thp_counters(guest: GuestDir) -> None:
    """The runner (the zipapp, as shipped) reads this machine's /proc around each attempt:
    the counters' differences over the attempt, never negative, and a failed attempt none."""
    guest.start("thp", end_iteration=2, backing=True,
                argv=["sh", "-c", 'test "$LAB_ITERATION" = 1'])  # fmt: skip
    guest.finish("thp")
    ok, failed = sorted(guest.entries("thp"), key=lambda e: not e.ok)
    assert ok.ok and not failed.ok
    thp = {k: v for k, v in ok.metrics.items() if k.startswith("backing.guest_thp_")}
    assert len(thp) == 4 and all(v >= 0 for v in thp.values())
    assert ok.metrics["backing.guest_anon_huge_kib"] >= 0
    assert failed.metrics == {}
    guest.start("plain", end_iteration=1)
    guest.finish("plain")
    assert guest.entries("plain")[0].metrics == {}  # no backing asked: none read
