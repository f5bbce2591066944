"""Workload plug-ins: registry, parameters, the specs they give the runner, host-side hooks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from lab.core.errors import ConfigError, UnknownNameError, UsageError
from lab.core.hostexec import Host, RecordingHost
from lab.inguest.journal import JournalEntry, read_journal
from lab.inguest.spec import SpecError, parse_spec
from lab.parsers import tools
from lab.run.shipping import write_zipapp
from lab.run.workload import GuestInfo, Metric, Workload, get_workload, load_workloads
from lab.run.workloads._build import NFS_MOUNT
from lab.run.workloads.demo_build import demo_tree_files, write_demo_tree
from lab.run.workloads.gdb_build import tree_name, unpack_source
from lab.run.workloads.iperf3 import BASE_PORT, host_servers, iperf_port_for

GUEST = GuestInfo(
    name="thp", vcpus=14, memory_kib=12 * 1024**2, host_ip="198.18.0.1", iperf_port=5202,
    nfs_export="198.18.0.1:/lab", work_dir="/var/lib/lab/run",
)  # fmt: skip
GDB = "/srv/gdb_13.1.orig.tar.xz"
WORKLOADS = load_workloads()


def params_for(name: str) -> dict[str, object]:
    return {"gdb-build": {"source": GDB}, "command": {"argv": "make -j2"},
            "revision": {"repo": "/src/prog", "revs": "thp=a1b2c3", "argv": "./prog"}}.get(
        name, {}
    )  # fmt: skip


def test_the_built_in_workloads_are_found() -> None:
    assert sorted(WORKLOADS) == [
        "command", "demo-build", "gdb-build", "iperf3", "null", "revision", "stream",
        "sysbench-memory", "sysbench-oltp",
    ]  # fmt: skip
    assert all(w.description and w.metrics for w in WORKLOADS.values())


def test_get_workload_unknown_lists_the_known() -> None:
    with pytest.raises(UnknownNameError, match="Known workloads: command, demo-build, gdb-build"):
        get_workload("fio")
    assert get_workload("null").name == "null"


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_spec_is_accepted_by_the_real_runner(name: str) -> None:
    spec = WORKLOADS[name].spec(params_for(name), GUEST).for_range(1, 20, attempt_base=2)
    parsed = parse_spec(json.loads(spec.to_json()), tools.parser_names())
    assert (parsed.workload, parsed.start_iteration, parsed.end_iteration) == (name, 1, 20)
    metric_names = sorted(m.name for m in WORKLOADS[name].metrics)
    assert sorted(parsed.metrics_from.values()) == metric_names
    assert parsed.env == {"LC_ALL": "C"}


def test_metrics_units_and_directions() -> None:
    table = {
        name: [(m.name, m.unit, m.direction) for m in w.metrics] for name, w in WORKLOADS.items()
    }
    assert table == {
        "sysbench-memory": [
            ("total_time_s", "s", "lower"), ("throughput_mib_s", "MiB/s", "higher"),
        ],
        "iperf3": [("sender_bits_per_s", "bit/s", "higher"), ("retransmits", "count", "lower")],
        "gdb-build": [("wall_s", "s", "lower"), ("user_s", "s", "lower"), ("sys_s", "s", "lower")],
        "demo-build": [("wall_s", "s", "lower"), ("user_s", "s", "lower"), ("sys_s", "s", "lower")],
        "null": [("wall_s", "s", "lower")],
        "command": [("wall_s", "s", "lower"), ("user_s", "s", "lower"), ("sys_s", "s", "lower")],
        "revision": [("wall_s", "s", "lower"), ("user_s", "s", "lower"), ("sys_s", "s", "lower")],
        "stream": [
            ("copy_mb_s", "MB/s", "higher"), ("scale_mb_s", "MB/s", "higher"),
            ("add_mb_s", "MB/s", "higher"), ("triad_mb_s", "MB/s", "higher"),
        ],
        "sysbench-oltp": [
            ("transactions_per_s", "transactions/s", "higher"),
            ("queries_per_s", "queries/s", "higher"),
            ("latency_avg_ms", "ms", "lower"), ("latency_p95_ms", "ms", "lower"),
            ("errors", "count", "lower"),
        ],
    }  # fmt: skip


def test_a_run_records_the_declared_metrics_unless_the_parameters_declare_more() -> None:
    fixed = {name for name, w in WORKLOADS.items() if not w.params_declare_metrics}
    assert fixed == set(WORKLOADS) - {"command"}
    for name in fixed:
        assert WORKLOADS[name].metrics_for(params_for(name)) == WORKLOADS[name].metrics


def test_metric_direction_is_checked() -> None:
    with pytest.raises(ConfigError, match="neither 'lower' nor 'higher'"):
        Metric("x", "s", "faster")  # type: ignore[arg-type]


def test_every_param_is_documented() -> None:
    for workload in WORKLOADS.values():
        assert sorted(workload.params) == sorted(workload.parameters)
        for name, param in workload.parameters.items():
            assert len(param.help) > 5, (workload.name, name)


# -- sysbench-memory ------------------------------------------------------------------------


def test_sysbench_defaults_are_the_studys_with_guest_vcpus() -> None:
    spec = WORKLOADS["sysbench-memory"].spec({}, GUEST)
    assert spec.argv == [
        "sysbench", "memory", "--memory-block-size=64M", "--memory-total-size=4096G",
        "--time=500", "--threads=14", "run",
    ]  # fmt: skip
    assert spec.parser == "sysbench-memory" and spec.cwd == GUEST.work_dir
    assert spec.timeout_s > 500


def test_sysbench_params_from_the_command_line_are_converted() -> None:
    overrides = {"block_size": "1M", "total_size": "2G", "time": "10", "threads": "2"}
    spec = WORKLOADS["sysbench-memory"].spec(overrides, GUEST)
    assert spec.argv[2:6] == [
        "--memory-block-size=1M", "--memory-total-size=2G", "--time=10", "--threads=2",
    ]  # fmt: skip
    assert WORKLOADS["sysbench-memory"].resolve(overrides)["time"] == 10


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"threads": "many"}, "parameter threads must be an integer, not 'many'"),
        ({"block_size": "64 MB"}, "parameter block_size='64 MB' does not look right"),
        ({"blocksize": "1M"}, "has no parameter blocksize"),
    ],
)
def test_bad_params_are_usage_errors(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        WORKLOADS["sysbench-memory"].spec(overrides, GUEST)


def test_unknown_param_error_lists_the_known_ones() -> None:
    with pytest.raises(UsageError) as info:
        WORKLOADS["sysbench-memory"].resolve({"blocksize": "1M"})
    assert str(info.value).endswith("Its parameters: block_size, threads, time, total_size")


def test_resolved_params_do_not_depend_on_the_guest() -> None:
    resolved = WORKLOADS["sysbench-memory"].resolve({})
    assert resolved == {"block_size": "64M", "total_size": "4096G", "time": 500, "threads": None}
    assert WORKLOADS["sysbench-memory"].params == resolved  # the defaults


def test_spec_takes_defaults_overlaid_with_command_line_strings() -> None:
    """What ``lab run -p threads=4`` hands in: every default, some replaced by strings."""
    params = {**WORKLOADS["sysbench-memory"].params, "threads": "4"}
    assert WORKLOADS["sysbench-memory"].spec(params, GUEST).argv[5] == "--threads=4"


# -- iperf3 ---------------------------------------------------------------------------------


def test_iperf3_client_command() -> None:
    spec = WORKLOADS["iperf3"].spec({"duration": "3"}, GUEST)
    assert spec.argv == ["iperf3", "-c", "198.18.0.1", "-p", "5202", "-t", "3", "-P", "1", "-J"]
    assert (spec.parser, spec.timeout_s) == ("iperf3", 63.0)


def test_iperf3_one_server_per_guest_on_its_port(tmp_path: Path) -> None:
    guests = [
        GuestInfo(f"g{i}", 1, 1024**2, "198.18.0.1", iperf_port_for(i), "x:/lab", "/w")
        for i in range(2)
    ]
    assert [g.iperf_port for g in guests] == [BASE_PORT, BASE_PORT + 1] == [5201, 5202]
    servers = WORKLOADS["iperf3"].host_servers(guests, tmp_path)
    assert servers == host_servers(guests, tmp_path)
    # in the foreground: the controller keeps them as children and stops them after the run
    assert servers[1] == ["iperf3", "-s", "-B", "198.18.0.1", "-p", "5202"]
    assert WORKLOADS["null"].host_servers(guests, tmp_path) == []


# -- gdb-build ------------------------------------------------------------------------------


def test_gdb_build_spec() -> None:
    spec = WORKLOADS["gdb-build"].spec({"source": GDB, "target": "all-libiberty"}, GUEST)
    build = f"{NFS_MOUNT}/build/thp/gdb_13.1"
    assert spec.argv == ["make", "-j14", "all-libiberty"]
    assert spec.clean_argv == ["make", "clean"]
    assert spec.cwd == build
    assert spec.metrics_from == {"wall_s": "wall_s", "user_s": "user_s", "sys_s": "sys_s"}
    shell, flag, script = spec.setup_argv
    assert (shell, flag) == ("sh", "-c")
    assert "mount -t nfs4 -o vers=4.1 198.18.0.1:/lab /mnt/lab-nfs" in script
    assert f"mkdir -p {build}\ncd {build}\n" in script
    assert script.endswith(f"[ -f config.status ] || {NFS_MOUNT}/src/gdb_13.1/configure")
    assert WORKLOADS["gdb-build"].uses_nfs


def test_gdb_build_configure_args_get_their_own_tree() -> None:
    spec = WORKLOADS["gdb-build"].spec({"source": GDB, "configure_args": "--disable-werror"}, GUEST)
    assert spec.cwd.startswith(f"{NFS_MOUNT}/build/thp/gdb_13.1-")
    assert spec.setup_argv[2].endswith("/src/gdb_13.1/configure --disable-werror")


def test_gdb_build_without_source_says_how_to_get_one() -> None:
    with pytest.raises(UsageError, match="apt-get source --download-only gdb"):
        WORKLOADS["gdb-build"].spec({}, GUEST)


@pytest.mark.parametrize(
    ("source", "tree"),
    [(GDB, "gdb_13.1"), ("/x/gdb-14.2.tar.gz", "gdb-14.2"), ("binutils.tar.bz2", "binutils")],
)
def test_tree_name(source: str, tree: str) -> None:
    assert tree_name(source) == tree


@pytest.mark.parametrize("source", ["/x/gdb.zip", "/x/.tar.xz"])
def test_tree_name_refuses_other_files(source: str) -> None:
    with pytest.raises(UsageError, match=r"not a \.tar\.xz"):
        tree_name(source)


def test_unpack_source_runs_tar_once(tmp_path: Path) -> None:
    export = tmp_path / "export"
    dest = export / "src" / "gdb_13.1"
    host = RecordingHost(files={GDB: "", str(dest / "configure"): "#!/bin/sh"})
    assert unpack_source(host, GDB, export) == dest
    assert host.commands == [
        ("rm", "-rf", str(dest)),
        ("mkdir", "-p", str(dest)),
        ("tar", "-xf", GDB, "-C", str(dest), "--strip-components=1"),
    ]
    assert host.written == {str(dest / ".lab-unpacked"): f"{GDB}\n"}
    host.commands.clear()
    assert unpack_source(host, GDB, export) == dest
    assert host.commands == []


def test_unpack_source_for_real(tmp_path: Path) -> None:
    tree = tmp_path / "gdb-13.1"
    tree.mkdir()
    (tree / "configure").write_text("#!/bin/sh\necho configured\n")
    archive = tmp_path / "gdb_13.1.orig.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(tree, arcname="gdb-13.1")
    export = tmp_path / "export"
    WORKLOADS["gdb-build"].host_prepare({"source": str(archive)}, Host(), export)
    unpacked = export / "src" / "gdb_13.1"
    assert (unpacked / "configure").read_text() == "#!/bin/sh\necho configured\n"
    assert (unpacked / ".lab-unpacked").exists()


@pytest.mark.parametrize(
    ("source", "message"),
    [("https://ftp.gnu.org/gdb-13.1.tar.xz", "is a URL"), (GDB, "no GDB source archive at")],
)
def test_unpack_source_refuses(tmp_path: Path, source: str, message: str) -> None:
    host = RecordingHost()
    with pytest.raises(UsageError, match=message):
        unpack_source(host, source, tmp_path)
    assert host.commands == []


def test_unpack_source_without_configure_is_refused(tmp_path: Path) -> None:
    host = RecordingHost(files={GDB: ""})
    with pytest.raises(UsageError, match="no configure script"):
        unpack_source(host, GDB, tmp_path)
    assert not host.written


# -- demo-build -----------------------------------------------------------------------------


def test_demo_tree_is_deterministic_and_sized() -> None:
    tree = demo_tree_files(4)
    assert tree == demo_tree_files(4)
    assert sorted(tree) == [
        "Makefile",
        "demo.h",
        "main.c",
        "unit_1.c",
        "unit_2.c",
        "unit_3.c",
        "unit_4.c",
    ]
    assert "OBJS = unit_1.o unit_2.o unit_3.o unit_4.o main.o" in tree["Makefile"]
    assert tree["unit_1.c"] != tree["unit_2.c"]
    assert len(demo_tree_files()) == 9 + 3


def test_write_demo_tree_leaves_unchanged_files_alone(tmp_path: Path) -> None:
    host = RecordingHost()
    write_demo_tree(tmp_path / "src", 2, host)
    assert len(host.written) == 5
    host.written.clear()
    write_demo_tree(tmp_path / "src", 2, host)
    assert host.written == {}
    assert host.commands == [("mkdir", "-p", str(tmp_path / "src"))] * 2


def test_demo_build_spec() -> None:
    spec = WORKLOADS["demo-build"].spec({"jobs": "2"}, GUEST)
    src = f"{NFS_MOUNT}/src/demo-9"
    assert spec.argv == ["make", "-f", f"{src}/Makefile", f"SRC={src}", "-j2", "all"]
    assert spec.clean_argv == ["make", "-f", f"{src}/Makefile", f"SRC={src}", "clean"]
    assert spec.cwd == f"{NFS_MOUNT}/build/thp/demo-9"
    assert "configure" not in spec.setup_argv[2]


@pytest.mark.skipif(not (shutil.which("make") and shutil.which("cc")), reason="needs make and cc")
def test_demo_build_through_the_real_runner(tmp_path: Path) -> None:
    """The demo spec, with the NFS mount replaced by a local directory, really builds."""
    export = tmp_path / "export"
    workload = WORKLOADS["demo-build"]
    workload.host_prepare({"files": "3"}, Host(), export)
    spec = workload.spec({"files": "3", "jobs": "2"}, GUEST).for_range(1, 2)
    local = json.loads(spec.to_json().replace(NFS_MOUNT, str(export)))
    local["setup_argv"] = ["mkdir", "-p", local["cwd"]]  # instead of mounting
    (tmp_path / "spec.json").write_text(json.dumps(local))
    run = [sys.executable, "-I", "-S", str(write_zipapp(tmp_path)), "start", "--foreground",
           "--dir", str(tmp_path / "run"), "--run-key", "demo",
           "--spec", str(tmp_path / "spec.json")]  # fmt: skip
    subprocess.run(run, check=True, timeout=120, capture_output=True)
    entries = [r for r in read_journal((tmp_path / "run" / "demo.journal").read_text())
               if isinstance(r, JournalEntry)]  # fmt: skip
    assert [(e.key, e.ok) for e in entries] == [((1, 1), True), ((2, 1), True)], entries
    assert all(e.metrics["wall_s"] > 0 and "user_s" in e.metrics for e in entries)
    binary = Path(local["cwd"]) / "demo"
    assert (
        subprocess.run([binary], capture_output=True, text=True, check=True)
        .stdout.strip()
        .isdigit()
    )


# -- the registry's checks ------------------------------------------------------------------


def test_plugin_without_workload_is_refused(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("X = 1\n")
    found = load_workloads([tmp_path])
    assert list(found) == [] and list(found.broken) == ["broken"]
    with pytest.raises(ConfigError, match="does not define WORKLOAD"):
        get_workload("broken", found)


def test_plugin_named_unlike_its_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "fio_read.py").write_text(
        "from lab.run.workload import Workload\n"
        "class W(Workload):\n    name = 'fio-write'\nWORKLOAD = W()\n"
    )
    with pytest.raises(
        ConfigError, match=r"Name the file fio_write\.py or the workload 'fio-read'"
    ):
        get_workload("fio-read", load_workloads([tmp_path]))


def test_a_new_workload_is_one_small_file(tmp_path: Path) -> None:
    (tmp_path / "_helper.py").write_text("raise RuntimeError('not a plug-in')\n")
    (tmp_path / "fio_read.py").write_text(
        "from lab.run.workload import Metric, Workload\n"
        "class W(Workload):\n"
        "    name = 'fio-read'\n"
        "    metrics = (Metric('iops', 'IO/s', 'higher'),)\n"
        "    def spec(self, params, guest):\n"
        "        return self._spec(guest, ['fio', '--output-format=json'])\n"
        "WORKLOAD = W()\n"
    )
    found = load_workloads([tmp_path])
    assert list(found) == ["fio-read"]
    assert isinstance(found["fio-read"], Workload)
    assert found["fio-read"].spec({}, GUEST).metrics_from == {"iops": "iops"}


def test_for_range_adds_the_range_and_the_failure_budget() -> None:
    spec = WORKLOADS["null"].spec({}, GUEST).for_range(3, 9, attempt_base=2, max_failures=5)
    data = json.loads(spec.to_json())
    assert (data["start_iteration"], data["end_iteration"]) == (3, 9)
    assert (data["attempt_base"], data["max_failures"]) == (2, 5)
    assert parse_spec(data, tools.PARSERS) == spec
    with pytest.raises(SpecError, match=r"5\.\.4 are not a range"):
        spec.for_range(5, 4)
