"""The sysbench-oltp workload: its spec, the parameters it refuses before anything runs, and
its setup script run for real against stand-ins for sudo, systemctl, mariadb and sysbench
(which log what they are asked), alone and through the real runner, as a guest would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.app.study import parse_study
from lab.core.errors import ConfigError, UsageError
from lab.inguest.journal import JournalEntry, JournalEvent, read_journal
from lab.run.shipping import write_zipapp
from lab.run.workload import GuestInfo, get_workload
from lab.run.workloads.sysbench_oltp import CONF, MARKER, SETUP, setup_argv

OLTP = get_workload("sysbench-oltp")
CAPTURE = (
    Path(__file__).parent.parent
    / "fixtures"
    / "captures"
    / ("sysbench-1.0.20-oltp_read_only-guest-tcg.txt")
)
CONNECT = [
    "--db-driver=mysql", "--mysql-socket=/run/mysqld/mysqld.sock", "--mysql-user=lab",
    "--mysql-db=sbtest",
]  # fmt: skip


def guest(
    work_dir: str = "/home/lab/lab-runner", vcpus: int = 1, memory_kib: int = 2**20
) -> GuestInfo:
    return GuestInfo("lab-thp", vcpus, memory_kib, "198.18.0.1", 5201, "198.18.0.1:/lab", work_dir)


def test_defaults_run_read_only_on_two_small_tables_with_the_guests_vcpus() -> None:
    spec = OLTP.spec({}, guest(vcpus=2))
    assert spec.argv == [
        "sysbench", "oltp_read_only", *CONNECT, "--tables=2", "--table-size=10000",
        "--time=10", "--threads=2", "--percentile=95", "run",
    ]  # fmt: skip
    assert spec.parser == "sysbench-oltp"
    assert spec.metrics_from == {
        "transactions_per_s": "transactions_per_s", "queries_per_s": "queries_per_s",
        "latency_avg_ms": "latency_avg_ms", "latency_p95_ms": "latency_p95_ms",
        "errors": "errors",
    }  # fmt: skip
    assert spec.clean_argv is None
    assert spec.timeout_s == 10 * 1.5 + 120


def test_the_setup_prepares_the_tables_the_iterations_read() -> None:
    params = {"script": "oltp_read_write", "tables": "4", "table_size": "100000",
              "time": "60", "threads": "3", "buffer_pool_size": "256M"}  # fmt: skip
    spec = OLTP.spec(params, guest())
    assert spec.argv[1] == "oltp_read_write"
    assert spec.argv[6:10] == ["--tables=4", "--table-size=100000", "--time=60", "--threads=3"]
    assert spec.setup_argv is not None
    sh, flag, script, _name, marker, shape, conf, pool, sql, *prepare = spec.setup_argv
    assert (sh, flag, script) == ("sh", "-c", SETUP)
    assert marker == f"/home/lab/lab-runner/{MARKER}"
    assert shape == "tables=4 table_size=100000 buffer_pool_size=256M"
    assert (conf, pool) == (CONF, "256M")
    assert "DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest;" in sql
    assert "CREATE USER IF NOT EXISTS lab@localhost IDENTIFIED VIA unix_socket;" in sql
    assert prepare == [
        "sysbench", "oltp_read_write", *CONNECT, "--tables=4", "--table-size=100000",
        "--threads=3", "--rand-seed=1", "prepare",
    ]  # fmt: skip


def test_the_tables_do_not_depend_on_the_script() -> None:
    """One marker for every script: what it says is the tables and the pool, not the script."""
    shapes = {
        tuple(OLTP.spec({"script": script}, guest()).setup_argv[4:8])  # type: ignore[index]
        for script in ("oltp_read_only", "oltp_point_select", "oltp_read_write")
    }
    assert shapes == {
        (f"/home/lab/lab-runner/{MARKER}", "tables=2 table_size=10000 buffer_pool_size=default",
         CONF, ""),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"script": "oltp_insert"}, "script='oltp_insert' does not look right"),
        ({"script": "oltp_read_only; reboot"}, "does not look right"),
        ({"tables": "0"}, "tables=0 does not look right"),
        ({"tables": "1000"}, "tables=1000 does not look right"),
        ({"table_size": "-1"}, "table_size=-1 does not look right"),
        ({"table_size": "1e6"}, "table_size must be an integer, not '1e6'"),
        ({"time": "0"}, "time=0 does not look right"),  # sysbench's 0: no limit at all
        ({"threads": "0"}, "threads=0 does not look right"),
        ({"buffer_pool_size": "536870912"}, "buffer_pool_size='536870912' does not look right"),
        ({"buffer_pool_size": "512MB"}, "buffer_pool_size='512MB' does not look right"),
        ({"buffer_pool_size": "1.5G"}, "buffer_pool_size='1.5G' does not look right"),
        ({"buffer_pool_size": ""}, "buffer_pool_size='' does not look right"),
    ],
)
def test_bad_parameters_are_refused_when_resolved(params: dict[str, str], message: str) -> None:
    """`lab run` resolves the parameters before it looks for a lab (check_request)."""
    with pytest.raises(UsageError, match=message):
        OLTP.resolve(params)


def test_a_buffer_pool_mariadb_or_the_guest_cannot_take_is_refused() -> None:
    with pytest.raises(UsageError, match=r"buffer_pool_size=1024K is below MariaDB's smallest"):
        OLTP.spec({"buffer_pool_size": "1024K"}, guest())
    with pytest.raises(UsageError, match=r"900M is more than 75% of the guest's 1024 MiB"):
        OLTP.spec({"buffer_pool_size": "900M"}, guest(memory_kib=2**20))
    assert OLTP.spec({"buffer_pool_size": "768M"}, guest(memory_kib=2**20)).setup_argv
    assert OLTP.spec({"buffer_pool_size": "900M"}, guest(memory_kib=2 * 2**20)).setup_argv


def test_a_study_file_is_refused_a_pool_its_guests_cannot_hold() -> None:
    text = (
        'name = "s"\nvariants = ["thp", "shp1g"]\nvcpus = 1\nmemory = "1G"\n\n'
        '[[workload]]\nname = "sysbench-oltp"\nn = 3\nparams = { buffer_pool_size = "1G" }\n'
    )
    with pytest.raises(ConfigError, match=r"\(sysbench-oltp\): sysbench-oltp: buffer_pool_size"):
        parse_study(text, "s.toml")
    fits = text.replace('buffer_pool_size = "1G"', 'buffer_pool_size = "512M"')
    assert parse_study(fits, "s.toml").workloads[0].params == {"buffer_pool_size": "512M"}


# -- the setup script, against stand-ins that log what they are asked ----------------------

FAKES = {
    # sudo runs the command as it is (the stand-ins below, or the real tee and rm)
    "sudo": 'exec "$@"\n',
    "systemctl": (
        'echo "systemctl $*" >> "$FAKE/log"\n'
        'case "$1" in\n'
        '  is-active) [ -e "$FAKE/active" ] ;;\n'
        '  start|restart) touch "$FAKE/active" ;;\n'
        '  stop) rm -f "$FAKE/active" ;;\n'
        "esac\n"
    ),
    "mariadb": 'echo "mariadb $*" >> "$FAKE/log"\n',
    "sysbench": (
        "for last; do :; done\n"
        'echo "sysbench $last" >> "$FAKE/log"\n'
        'if [ "$last" = prepare ] && [ -e "$FAKE/fail" ]; then\n'
        '  echo "FATAL: disk full"; exit 1\n'
        "fi\n"
        'if [ "$last" = run ]; then cat "$FAKE/capture"; fi\n'
    ),
}


class FakeGuest:
    """A folder of stand-ins on PATH, their log, and MariaDB's state (a file: running)."""

    def __init__(self, root: Path) -> None:
        self.root, self.bin = root, root / "bin"
        self.bin.mkdir(parents=True)
        for name, body in FAKES.items():
            path = self.bin / name
            path.write_text("#!/bin/sh\n" + body)
            path.chmod(0o755)
        (root / "capture").write_text(CAPTURE.read_text())
        self.runner_dir = root / "lab-runner"
        self.runner_dir.mkdir()
        self.conf = root / "90-lab-sysbench-oltp.cnf"
        self.env = {**os.environ, "PATH": f"{self.bin}:{os.environ['PATH']}", "FAKE": str(root)}

    @property
    def marker(self) -> Path:
        return self.runner_dir / MARKER

    def setup(self, key: str | None, pool: str | None = None) -> subprocess.CompletedProcess[str]:
        argv = setup_argv("oltp_read_only", 2, 10000, 1, pool, str(self.marker), "lab",
                          str(self.conf))  # fmt: skip
        env = dict(self.env)
        if key is not None:
            env["LAB_RUN_KEY"] = key
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60,
                              check=False)  # fmt: skip

    def log(self) -> list[str]:
        path = self.root / "log"
        lines = path.read_text().splitlines() if path.exists() else []
        path.unlink(missing_ok=True)
        return lines

    def running(self, value: bool) -> None:
        (self.root / "active").touch() if value else (self.root / "active").unlink(True)


@pytest.fixture
def fake(tmp_path: Path) -> FakeGuest:
    return FakeGuest(tmp_path)


FIRST_START = [
    "systemctl restart mariadb",
    "mariadb -e DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest; CREATE USER IF NOT"
    " EXISTS lab@localhost IDENTIFIED VIA unix_socket; GRANT ALL ON sbtest.* TO lab@localhost;",
    "sysbench prepare",
]


def test_the_first_start_of_a_run_restarts_mariadb_and_fills_the_tables(fake: FakeGuest) -> None:
    done = fake.setup("run-a")
    assert done.returncode == 0, done.stderr
    assert fake.log() == FIRST_START
    assert fake.marker.read_text() == (
        "run=run-a tables=2 table_size=10000 buffer_pool_size=default\n"
    )
    assert "sysbench-oltp: prepared run=run-a" in done.stdout
    assert not fake.conf.exists()  # MariaDB's own pool


def test_a_later_start_of_the_run_only_makes_sure_mariadb_runs(fake: FakeGuest) -> None:
    fake.setup("run-a")
    fake.log()
    done = fake.setup("run-a")
    assert done.returncode == 0, done.stderr
    assert fake.log() == ["systemctl is-active --quiet mariadb"]
    assert "with the tables of this run" in done.stdout
    fake.running(False)  # the guest restarted: MariaDB does not start at boot
    assert fake.setup("run-a").returncode == 0
    assert fake.log() == ["systemctl is-active --quiet mariadb", "systemctl start mariadb"]


def test_another_run_fills_the_tables_anew(fake: FakeGuest) -> None:
    fake.setup("run-a")
    fake.log()
    assert fake.setup("run-b").returncode == 0
    assert fake.log() == FIRST_START
    assert fake.marker.read_text().startswith("run=run-b ")


def test_a_pool_size_is_written_for_mariadb_and_taken_back_by_a_run_without(
    fake: FakeGuest,
) -> None:
    assert fake.setup("run-a", pool="64M").returncode == 0
    assert fake.conf.read_text().splitlines()[1:] == ["[mysqld]", "innodb_buffer_pool_size = 64M"]
    assert fake.log()[0] == "systemctl restart mariadb"  # after the file: InnoDB reads it there
    assert fake.setup("run-a", pool="128M").returncode == 0  # same run, another pool: redone
    assert "innodb_buffer_pool_size = 128M" in fake.conf.read_text()
    assert fake.log() == FIRST_START
    assert fake.setup("run-b").returncode == 0
    assert not fake.conf.exists()


def test_a_failed_prepare_leaves_no_marker_so_the_next_start_prepares_again(
    fake: FakeGuest,
) -> None:
    (fake.root / "fail").touch()
    done = fake.setup("run-a")
    assert done.returncode != 0 and "FATAL: disk full" in done.stdout
    assert not fake.marker.exists()
    (fake.root / "fail").unlink()
    fake.log()
    assert fake.setup("run-a").returncode == 0
    assert fake.log() == FIRST_START


def test_the_setup_needs_the_run_key_the_runner_gives(fake: FakeGuest) -> None:
    done = fake.setup(None)
    assert done.returncode != 0 and "set by the lab runner" in done.stderr
    assert fake.log() == []


def start_runner(fake: FakeGuest, spec_json: str, key: str) -> None:
    spec = fake.root / f"{key}.json"
    spec.write_text(spec_json)
    app = write_zipapp(fake.root)
    run = [sys.executable, "-I", "-S", str(app), "start", "--foreground", "--dir",
           str(fake.runner_dir), "--run-key", key, "--spec", str(spec)]  # fmt: skip
    subprocess.run(run, check=True, timeout=120, capture_output=True, env=fake.env)


def test_through_the_real_runner_one_start_per_iteration_prepares_once(fake: FakeGuest) -> None:
    """The sync schedule's way: a runner start for each iteration, the setup at each."""
    spec = OLTP.spec({}, guest(str(fake.runner_dir)))
    for iteration in (1, 2):
        start_runner(fake, spec.for_range(iteration, iteration).to_json(), "k")
    records = read_journal((fake.runner_dir / "k.journal").read_text())
    setups = [r for r in records if isinstance(r, JournalEvent) and r.event == "setup"]
    assert [s.fields["ok"] for s in setups] == [True, True], setups
    assert "prepared run=k " in setups[0].fields["output_tail"]
    assert "with the tables of this run" in setups[-1].fields["output_tail"]
    assert [line for line in fake.log() if line == "sysbench prepare"] == ["sysbench prepare"]
    entries = {r.key: r for r in records if isinstance(r, JournalEntry)}
    assert sorted(entries) == [(1, 1), (2, 1)]
    assert entries[(2, 1)].ok, entries[(2, 1)].error
    assert entries[(2, 1)].metrics == {
        "transactions_per_s": 35.34, "queries_per_s": 565.50, "latency_avg_ms": 28.01,
        "latency_p95_ms": 36.89, "errors": 0.0,
    }  # fmt: skip
