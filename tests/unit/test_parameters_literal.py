"""Workload parameters reach the timed command literally: quotes, ``;``, ``$(...)``,
newlines and the rest become one argv element of the spec, through the shell hop that
writes it and the runner that runs it."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.commands.run import pair_items
from lab.inguest.journal import JournalEntry, read_journal
from lab.run.guestrunner import WRITE_SPEC
from lab.run.shipping import write_zipapp
from lab.run.workload import GuestInfo, get_workload

# -- workload parameters reach the timed command literally -------------------------------------

NASTY = [
    "it's",
    'say "hi"',
    "a; reboot",
    "$(touch /tmp/lab-pwned)",
    "`id`",
    "line\nbreak",
    "tab\there",
    "$HOME ${IFS} * ? ~ \\ | & > <",
    "--help",
    "",
]
WRITE_ARGV = "import json, sys; open(sys.argv[1], 'w').write(json.dumps(sys.argv[2:]))"


def read_if(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def guest_info(root: Path) -> GuestInfo:
    return GuestInfo("lab-thp", 1, 1048576, "198.18.0.1", 5201, "198.18.0.1:/lab", str(root))


@pytest.mark.parametrize("value", NASTY)
def test_parameters_become_one_argv_element_of_the_spec(tmp_path: Path, value: str) -> None:
    workload = get_workload("demo-build")
    spec = workload.spec(workload.resolve({"target": value}), guest_info(tmp_path))
    assert spec.argv[-1] == value


def nasty_argv(workload_name: str, out: Path, guest: Path) -> list[str]:
    """A command that writes its arguments to ``out``, with NASTY among them, as the
    workload's spec holds it: demo-build's target, or command's whole argv as a user types it."""
    write = [sys.executable, "-c", WRITE_ARGV, str(out)]
    workload = get_workload(workload_name)
    if workload_name == "command":
        ((key, value),) = pair_items([f"argv={shlex.join([*write, *NASTY])}"])
        return workload.spec(workload.resolve({key: value}), guest_info(guest)).argv
    argvs = [workload.spec(workload.resolve({"target": v}), guest_info(guest)).argv for v in NASTY]
    return [*write, *[a[-1] for a in argvs]]


@pytest.mark.parametrize("workload", ["demo-build", "command"])
def test_parameters_reach_the_command_literally_through_the_shell_hop_and_the_runner(
    tmp_path: Path, workload: str
) -> None:
    """The spec travels as the controller sends it (one argument of a command that an SSH
    server hands to ``sh -c``), and the real runner execs the argument list it holds."""
    guest = tmp_path / "guest"
    guest.mkdir()
    app = write_zipapp(guest)
    out = guest / "argv.json"
    spec = {
        "workload": workload,
        "argv": nasty_argv(workload, out, guest),
        "cwd": str(guest),
        "start_iteration": 1,
        "end_iteration": 1,
    }
    spec_path = guest / "key.spec.json"
    # Exactly how Controller.start_runner writes the spec, through `sh -c` as sshd would.
    send = [sys.executable, "-c", WRITE_SPEC]
    command = shlex.join([*send, str(spec_path), json.dumps(spec)])
    subprocess.run(["sh", "-c", command], check=True, timeout=30)
    assert json.loads(spec_path.read_text()) == spec
    runner = [sys.executable, "-I", "-S", str(app)]
    start = [*runner, "start", "--dir", str(guest / "run"), "--run-key", "key"]
    subprocess.run(["sh", "-c", shlex.join([*start, "--spec", str(spec_path)])], check=True)
    journal = guest / "run" / "key.journal"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        entries = [r for r in read_journal(read_if(journal)) if isinstance(r, JournalEntry)]
        if entries:
            break
        time.sleep(0.02)
    assert entries and entries[0].ok, entries
    assert json.loads(out.read_text()) == NASTY
    assert not Path("/tmp/lab-pwned").exists()
