"""lab.toml and study files read in bounded time and memory, in real processes: a device, a
FIFO, a folder, a file over 1 MiB, nesting 100,000 deep and a 1 MB argv are each refused in
one line (exit 2) naming the file, where they grew to 11 GB, hung, printed a 194 KB
traceback or took 60 s."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.core.errors import ConfigError
from lab.core.tomlfile import MAX_BYTES, MAX_DEPTH, bracket_depth, parse, value_depth

CHECKOUT = Path(__file__).resolve().parents[2]
DEMO = (CHECKOUT / "studies" / "demo.toml").read_text()
HEAD = DEMO.split("[[workload]]")[0]


def lab(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, float]:
    """``python -m lab ARGS`` in ``tmp_path`` (no lab.toml there) with ``env`` added:
    its status, its standard error and how long it took. 512 MiB of address space at most,
    so a command that reads without bound fails instead of filling the machine."""
    environ = {k: v for k, v in os.environ.items() if k != "LAB_CONFIG"}
    environ.update({"PYTHONPATH": str(CHECKOUT), "COLUMNS": "200", **env})
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "lab", *args],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: __import__("resource").setrlimit(
            __import__("resource").RLIMIT_AS, (1 << 30, 1 << 30)
        ),
    )
    return done.returncode, done.stderr, time.monotonic() - started


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err[:2000]
    assert len(err) < 400, err[:2000]
    return err


# -- devices, FIFOs, folders, size ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["config", "study"])
def test_dev_zero_is_refused_before_a_byte_is_read(tmp_path: Path, kind: str) -> None:
    if kind == "config":
        status, err, _ = lab(tmp_path, "config", LAB_CONFIG="/dev/zero")
    else:
        status, err, _ = lab(tmp_path, "study", "check", "/dev/zero")
    assert status == 2
    assert one_line(err).startswith(f"lab: error: the {kind} file /dev/zero is a character device")


def test_dev_null_is_an_empty_config(tmp_path: Path) -> None:
    status, err, _ = lab(tmp_path, "config", LAB_CONFIG="/dev/null")
    assert (status, err) == (0, "")


def test_a_fifo_without_a_writer_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "study.toml"
    os.mkfifo(fifo)
    status, err, took = lab(tmp_path, "study", "check", str(fifo))
    assert status == 2
    assert f"the study file {fifo} is a FIFO, not a file" in one_line(err)
    assert took < 20


def test_lab_config_naming_a_folder(tmp_path: Path) -> None:
    status, err, _ = lab(tmp_path, "config", LAB_CONFIG=str(tmp_path))
    assert status == 2
    assert one_line(err).startswith(f"lab: error: the config file {tmp_path} is a folder")


@pytest.mark.parametrize("kind", ["config", "study"])
def test_a_file_over_1_mib_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "big.toml"
    path.write_text("#" * MAX_BYTES + "\n")  # a comment: valid TOML, but over the bound
    if kind == "config":
        status, err, _ = lab(tmp_path, "config", LAB_CONFIG=str(path))
    else:
        status, err, _ = lab(tmp_path, "study", "check", str(path))
    assert status == 2
    assert f"the {kind} file {path} is over 1 MiB" in one_line(err)


def test_a_file_of_exactly_1_mib_is_read(tmp_path: Path) -> None:
    path = tmp_path / "lab.toml"
    line = 'image = "alpine"\n'
    path.write_text(line + "#" * (MAX_BYTES - len(line) - 1) + "\n")
    assert path.stat().st_size == MAX_BYTES
    status, err, _ = lab(tmp_path, "config", LAB_CONFIG=str(path))
    assert (status, err) == (0, "")


def test_lab_toml_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "lab.toml"
    path.write_bytes(b'image = "caf\xe9"\n')
    status, err, _ = lab(tmp_path, "config", LAB_CONFIG=str(path))
    assert status == 2
    assert f"the config file {path} is not UTF-8 text (byte 0xe9 at offset 12)" in one_line(err)


def test_a_home_that_cannot_be_searched(tmp_path: Path) -> None:
    """Root reads any folder, so the home is one whose name the kernel refuses
    (ENAMETOOLONG), which os.stat raises as a mode-000 home does for a user."""
    status, err, _ = lab(tmp_path, "config", HOME="/" + "h" * 5000)
    assert status == 2
    assert "cannot look for /hhhh" in err and "File name too long" in err
    assert "Traceback" not in err


def test_a_current_folder_that_was_removed(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    environ = {k: v for k, v in os.environ.items() if k != "LAB_CONFIG"}
    done = subprocess.run(
        ["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "$0" -m lab config', sys.executable],
        env={**environ, "PYTHONPATH": str(CHECKOUT)}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")


def test_a_home_under_a_file_is_no_home(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    status, err, _ = lab(tmp_path, "config", HOME=str(tmp_path / "file" / "home"))
    assert (status, err) == (0, "")


# -- nesting -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 100_000 + "]" * 100_000,
        "a = " + "{b = " * 100_000 + "}" * 100_000,
        "a" + ".b" * 100_000 + " = 1",
        "[" + ".".join(["t"] * 100_000) + "]",
    ],
    ids=["arrays", "inline tables", "dotted key", "table header"],
)
@pytest.mark.parametrize("kind", ["config", "study"])
def test_nesting_100000_deep_is_one_line(tmp_path: Path, text: str, kind: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(text + "\n")
    if kind == "config":
        status, err, _ = lab(tmp_path, "config", LAB_CONFIG=str(path))
    else:
        status, err, _ = lab(tmp_path, "study", "check", str(path))
    assert status == 2
    assert one_line(err) == (
        f"lab: error: {path}: tables, arrays or dotted keys nested deeper than {MAX_DEPTH}"
        " levels. Nothing the lab reads nests that deep; check the file\n"
    )


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ('a = "[[[[{{{{"', 0),
        ("a = '[[[['  # [[[[", 0),
        ('a = """\n[[[[\n"""', 0),
        ("a = '''\n{{{{\n'''", 0),
        ("a = [1.5, 2.5, 3.5]\nb = 4.5", 2),  # a float's dot counts as a level in an array
        ("[t.u]\nq.r.s = {a.b = [1]}", 2),  # per line; tomllib's result is checked as a whole
        ('"x.y".z = 1', 1),
        ('a = "unterminated [[[[\nb = 1', 0),
        ("a = [[1], [2]]", 2),
    ],
)
def test_bracket_depth_skips_strings_and_comments(text: str, depth: int) -> None:
    assert bracket_depth(text) == depth


def test_bracket_depth_is_linear_on_hostile_text() -> None:
    """Unterminated strings scanned from each quote made this quadratic: minutes for 1 MB."""
    for text in ('"' * 1_000_000, '"' + '\\"' * 500_000, "'''" * 300_000, "\\" * 1_000_000):
        started = time.monotonic()
        assert bracket_depth(text) == 0
        assert time.monotonic() - started < 5


def test_what_tomllib_returns_is_checked_too() -> None:
    deep: dict[str, object] = {}
    value = deep
    for _ in range(MAX_DEPTH + 5):
        value["k"] = {}
        value = value["k"]  # type: ignore[assignment]
    assert value_depth(deep) == MAX_DEPTH + 1
    with pytest.raises(ConfigError, match="nested deeper than 32"):
        parse("[" + ".".join(["t"] * (MAX_DEPTH + 1)) + "]", "x.toml")
    assert parse("[" + ".".join(["t"] * (MAX_DEPTH - 1)) + "]", "x.toml")


def command_study(argv: str) -> str:
    return f'{HEAD}[[workload]]\nname = "command"\nn = 5\nparams = {{ argv = "{argv}" }}\n'


# -- argv ------------------------------------------------------------------------------------


def test_a_1_mb_argv_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "study.toml"
    argv = "a" * 1_000_000
    path.write_text(command_study(argv))
    status, err, took = lab(tmp_path, "study", "check", str(path))
    assert status == 2
    assert one_line(err).startswith(
        f"lab: error: {path}: [[workload]] 1 (command): command: argv is 1,000,000 characters"
        " long, over 65,536"
    )
    assert took < 10  # 83 s before


def test_a_long_argv_under_the_bound_is_still_split(tmp_path: Path) -> None:
    path = tmp_path / "study.toml"
    argv = " ".join(["word"] * 12_000)  # 59,999 characters
    path.write_text(command_study(argv))
    status, err, _ = lab(tmp_path, "study", "check", str(path))
    assert (status, err) == (0, "")
