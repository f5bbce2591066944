"""The stream workload: its spec, the parameters it refuses before anything runs, and its C
program built and run by the real runner, as the guest's setup and iterations would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.app.study import parse_study
from lab.core.errors import ConfigError, UsageError
from lab.inguest.journal import JournalEntry, JournalEvent, read_journal
from lab.run.shipping import write_zipapp
from lab.run.workload import GuestInfo, get_workload
from lab.run.workloads.stream import SOURCE, program_name

STREAM = get_workload("stream")


def guest(
    work_dir: str = "/home/lab/lab-runner", vcpus: int = 1, memory_kib: int = 2**20
) -> GuestInfo:
    return GuestInfo("lab-thp", vcpus, memory_kib, "198.18.0.1", 5201, "198.18.0.1:/lab", work_dir)


def test_defaults_run_the_built_program_with_the_guests_vcpus() -> None:
    spec = STREAM.spec({}, guest(vcpus=2))
    binary = f"/home/lab/lab-runner/{program_name(SOURCE.read_text())}"
    assert spec.argv == [binary, "4000000", "2", "3"]
    assert spec.parser == "lab-stream"
    assert spec.metrics_from == {
        "copy_mb_s": "copy_mb_s", "scale_mb_s": "scale_mb_s",
        "add_mb_s": "add_mb_s", "triad_mb_s": "triad_mb_s",
    }  # fmt: skip
    assert spec.clean_argv is None
    assert spec.timeout_s is not None and 60 < spec.timeout_s < 3600


def test_the_setup_compiles_the_shipped_source_into_the_binary_the_iterations_run() -> None:
    spec = STREAM.spec({"threads": "4", "repetitions": "5", "array_size": "8000000"}, guest())
    assert spec.argv[1:] == ["8000000", "4", "5"]
    assert spec.setup_argv is not None
    sh, flag, script, _name, binary, source = spec.setup_argv
    assert (sh, flag, binary, source) == ("sh", "-c", spec.argv[0], SOURCE.read_text())
    assert "gcc -O2 -fopenmp" in script and '[ -x "$1" ] && exit 0' in script


def test_another_program_gets_another_binary() -> None:
    source = SOURCE.read_text()
    assert program_name(source) != program_name(source + "\n")
    assert program_name(source) == program_name(source)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"array_size": "99999"}, "array_size=99999 does not look right"),
        ({"array_size": "0"}, "array_size=0 does not look right"),
        ({"array_size": "-4000000"}, "array_size=-4000000 does not look right"),
        ({"array_size": "4e6"}, "array_size must be an integer, not '4e6'"),
        ({"array_size": "4M"}, "array_size must be an integer, not '4M'"),
        ({"threads": "0"}, "threads=0 does not look right"),
        ({"threads": "-1"}, "threads=-1 does not look right"),
        ({"repetitions": "0"}, "repetitions=0 does not look right"),
        ({"repetitions": "2.5"}, "repetitions must be an integer"),
    ],
)
def test_bad_parameters_are_refused_when_resolved(params: dict[str, str], message: str) -> None:
    """`lab run` resolves the parameters before it looks for a lab (check_request)."""
    with pytest.raises(UsageError, match=message):
        STREAM.resolve(params)


def test_arrays_larger_than_the_guest_are_refused() -> None:
    with pytest.raises(UsageError, match=r"take 2289 MiB, more than 75% of the guest's 1024 MiB"):
        STREAM.spec({"array_size": "100000000"}, guest(memory_kib=2**20))
    assert STREAM.spec({"array_size": "100000000"}, guest(memory_kib=4 * 2**20)).argv


def test_a_study_file_is_refused_the_arrays_its_guests_cannot_hold() -> None:
    text = (
        'name = "s"\nvariants = ["thp", "shp1g"]\nvcpus = 1\nmemory = "1G"\n\n'
        '[[workload]]\nname = "stream"\nn = 3\nparams = { array_size = 100000000 }\n'
    )
    with pytest.raises(ConfigError, match=r"s\.toml: \[\[workload\]\] 1 \(stream\): stream:"):
        parse_study(text, "s.toml")
    assert parse_study(text.replace("100000000", "4000000"), "s.toml").workloads[0].name == "stream"


def compiles_openmp() -> bool:
    if not shutil.which("gcc"):
        return False
    probe = subprocess.run(["gcc", "-fopenmp", "-E", "-x", "c", "-"], input="#include <omp.h>\n",
                           capture_output=True, text=True, check=False)  # fmt: skip
    return probe.returncode == 0


def start(
    root: Path, spec_json: str, key: str, work_dir: Path
) -> list[JournalEntry | JournalEvent]:
    (root / f"{key}.json").write_text(spec_json)
    app = write_zipapp(root)
    run = [sys.executable, "-I", "-S", str(app), "start", "--foreground", "--dir", str(work_dir),
           "--run-key", key, "--spec", str(root / f"{key}.json")]  # fmt: skip
    subprocess.run(run, check=True, timeout=300, capture_output=True)
    return read_journal((work_dir / f"{key}.journal").read_text())


@pytest.mark.skipif(not compiles_openmp(), reason="needs gcc with OpenMP (libgomp)")
def test_the_program_is_built_once_and_measures_through_the_real_runner(tmp_path: Path) -> None:
    """What a guest does, on this machine: setup compiles, each iteration runs and parses."""
    work_dir = tmp_path / "lab-runner"
    params = {"array_size": "200000", "repetitions": "2"}
    spec = STREAM.spec(params, guest(str(work_dir), vcpus=2))
    records = start(tmp_path, spec.for_range(1, 2).to_json(), "s", work_dir)
    entries = [r for r in records if isinstance(r, JournalEntry)]
    setups = [r for r in records if isinstance(r, JournalEvent) and r.event == "setup"]
    assert [s.fields["ok"] for s in setups] == [True], setups
    assert [(e.key, e.ok) for e in entries] == [((1, 1), True), ((2, 1), True)], entries
    for entry in entries:
        assert sorted(entry.metrics) == ["add_mb_s", "copy_mb_s", "scale_mb_s", "triad_mb_s"]
        assert all(value > 0 for value in entry.metrics.values()), entry.metrics
    binary = Path(spec.argv[0])
    built = binary.stat().st_mtime_ns
    again = start(tmp_path, spec.for_range(3, 3).to_json(), "s", work_dir)
    assert [r.ok for r in again if isinstance(r, JournalEntry)][-1]
    assert binary.stat().st_mtime_ns == built  # the second start found it built


def test_one_repetition_is_counted_and_checked(built: Path) -> None:
    out = subprocess.run([built, "100000", "1", "1"], capture_output=True, text=True, check=True)
    head, *kernels, check = out.stdout.splitlines()
    assert head == (
        "lab-stream 1 array_size=100000 array_bytes=800000 threads=1 repetitions=1 counted=1"
    )
    assert [line.split()[0] for line in kernels] == ["copy", "scale", "add", "triad"]
    assert check == "check ok"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not compiles_openmp():
        pytest.skip("needs gcc with OpenMP (libgomp)")
    binary = tmp_path_factory.mktemp("stream") / "lab-stream"
    subprocess.run(["gcc", "-O2", "-fopenmp", "-o", str(binary), str(SOURCE)], check=True)
    return binary


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["999", "1", "1"], "ARRAY_SIZE must be a whole number from 1000"),
        (["100000", "0", "1"], "THREADS must be a whole number from 1"),
        (["100000", "1", "x"], "REPETITIONS must be a whole number from 1"),
        (["100000", "1"], "usage: lab-stream ARRAY_SIZE THREADS REPETITIONS"),
    ],
)
def test_the_program_refuses_bad_arguments_with_status_2(
    built: Path, args: list[str], message: str
) -> None:
    done = subprocess.run([built, *args], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert message in done.stderr


def test_the_spec_survives_json() -> None:
    spec = STREAM.spec({}, guest())
    assert json.loads(spec.to_json())["setup_argv"][-1] == SOURCE.read_text()
