"""The CLI's last line of defence, with real processes: a standard output that cannot be
written (a full device, EIO, closed) is one line and status 1 for every command, never a
traceback; and an error line is one line of bounded length whatever the input."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lab.core.text import MESSAGE_CHARS, one_line
from lab.store import IterationRecord, MetricInfo, Store

ROOT = Path(__file__).resolve().parents[2]
FULL = "lab: error: cannot write to standard output: No space left on device\n"
CLOSED = "lab: error: cannot write to standard output: Bad file descriptor\n"
EIO = "lab: error: cannot write to standard output: Input/output error\n"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stdout") / "lab.db"
    (path.parent / "none.toml").write_text("")
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "w-00001", "w", {}, None, 40, [MetricInfo("t", "s", "lower")])
        for k, variant in enumerate(("thp", "shp1g")):
            guest = store.ensure_guest(study, f"g-{variant}", variant)
            store.record(run, guest, [IterationRecord(i, 1, True, metrics={"t": 1.0 + k + i % 3})
                                      for i in range(1, 41)])  # fmt: skip
    return path


def lab(
    db: Path, words: list[str], stdout: int | None, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lab", *[w.replace("DB", str(db)) for w in words]],
        cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120,
        preexec_fn=preexec, env={**os.environ, "LAB_CONFIG": str(db.parent / "none.toml")},
    )  # fmt: skip


COMMANDS = [
    ["--version"],  # a few bytes, written only by the flush at exit
    ["variants"],
    ["workloads"],
    ["runs", "--db", "DB"],
    ["runs", "--db", "DB", "show", "w-00001"],
    ["compare", "--db", "DB"],
    ["compare", "--db", "DB", "--detail"],
    ["compare", "--db", "DB", "--format", "json"],
    ["export", "--db", "DB"],
    ["export", "--db", "DB", "--format", "jsonl"],
    ["store", "check", "--db", "DB"],
    ["plan", "--from-store", "--db", "DB"],
    ["config"],
]


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w[:2]))
def test_a_full_standard_output_is_one_line_and_status_1(db: Path, words: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = lab(db, words, full.fileno())
    assert (done.returncode, done.stderr) == (1, FULL)


def close_stdout() -> None:
    os.close(1)


@pytest.mark.parametrize("words", [["variants"], ["runs", "--db", "DB"], ["export", "--db", "DB"]])
def test_a_closed_standard_output_is_one_line_and_status_1(db: Path, words: list[str]) -> None:
    """`lab variants >&-`; the store opened meanwhile does not take stdout's number, so
    nothing is written into it."""
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    done = lab(db, words, None, preexec=close_stdout)
    assert (done.returncode, done.stderr) == (1, CLOSED)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_an_input_output_error_on_standard_output_is_one_line(db: Path) -> None:
    """A terminal that went away (the pty's other end closed): EIO on every write."""
    controller, terminal = os.openpty()
    os.close(controller)
    try:
        done = lab(db, ["runs", "--db", "DB"], terminal)
    finally:
        os.close(terminal)
    assert (done.returncode, done.stderr) == (1, EIO)


def test_a_command_that_writes_nothing_to_stdout_runs_with_it_closed(
    db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "x.csv"
    done = lab(db, ["export", "--db", "DB", "--out", str(out)], None, preexec=close_stdout)
    assert done.returncode == 0, done.stderr
    assert out.read_text().count("\n") == 81


def test_an_error_on_a_huge_value_is_one_short_line(db: Path) -> None:
    value = "x" * 100_000 + "\nsecond line\x1b[2J"  # an argument holds 128 KiB at most
    done = lab(db, ["compare", "--db", "DB", "--workload", value], subprocess.DEVNULL)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and len(lines[0]) <= len("lab: error: ") + MESSAGE_CHARS, lines
    assert "\x1b" not in done.stderr and "…" in lines[0]
    assert lines[0].endswith("bring them in with `lab import FILE`")  # the hint is kept


def test_an_argument_error_on_a_huge_value_is_cut(db: Path) -> None:
    done = lab(db, ["compare", "--format", "y" * 100_000], subprocess.DEVNULL)
    assert done.returncode == 2
    assert len(done.stderr) < 1000 and "invalid choice" in done.stderr


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("two\nlines\r\nthree", "two lines three"),
        ("bell\x07 and \x1b[2J", "bell\\x07 and \\x1b[2J"),
        (f"unknown column {'z' * 500!r}", f"unknown column '{'z' * 80}…'"),
    ],
)
def test_one_line(raw: str, expected: str) -> None:
    assert one_line(raw) == expected


def test_one_line_cuts_what_is_still_too_long() -> None:
    line = one_line(", ".join(f"c{i}" for i in range(100_000)))
    assert len(line) == MESSAGE_CHARS and line.endswith("…")


# `lab variants` with a bug in it: its listing raises an error that is not the lab's.
BUGGY = """
import sys
import lab.guests.variants as variants
def broken(config):
    raise RuntimeError("a bug\\nover two lines")
variants.variants_for = broken
from lab.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("debug", [False, True])
def test_an_unexpected_error_is_one_line_and_a_traceback_only_with_debug(debug: bool) -> None:
    words = ["--debug", "variants"] if debug else ["variants"]
    done = subprocess.run([sys.executable, "-c", BUGGY, *words], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    if debug:
        assert "Traceback" in done.stderr and "RuntimeError: a bug" in done.stderr
    else:
        assert done.stderr == (
            "lab: error: unexpected RuntimeError: a bug over two lines. This is a bug in lab:"
            " run the same command with --debug for the traceback, and report it\n"
        )


# `lab variants` whose plug-in folder cannot be read: an error from the system, not a bug.
DENIED = """
import errno, sys
import lab.guests.variants as variants
def denied(config):
    raise PermissionError(errno.EACCES, "Permission denied", "/etc/lab/variants")
variants.variants_for = denied
from lab.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_an_error_of_the_system_is_one_line_naming_the_file() -> None:
    done = subprocess.run([sys.executable, "-c", DENIED, "variants"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("lab: error: Permission denied (/etc/lab/variants). Check")
    assert done.stderr.count("\n") == 1 and "a bug in lab" not in done.stderr


def test_a_hint_with_the_command_to_run_next_is_kept_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A lost guest's error names the command that resumes the run, with its store's path:
    cut at 140 characters, the one thing the user needed was gone."""
    from lab.cli import _report
    from lab.core.errors import LabError

    resume = "lab run null --n 300 --study default --db /tmp/" + "d" * 90 + "/lab.db"
    err = LabError(
        "lab-thp did not answer for 21 s (--guest-timeout 20): its domain no longer exists;"
        " the run stopped with 57 of 300 iterations stored for it",
        hint="Every stored iteration is kept. Bring the guest back (lab status; lab up if it"
        f" is gone), then resume with {resume}",
    )
    assert _report(err, 4) == 4
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and line.rstrip().endswith(resume), line
