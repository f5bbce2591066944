"""The README's exit-status table is the truth: every error class of the lab is in the row of
its status, no status means two things, and a closed stdout is not a traceback."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import lab
from lab.cli import BROKEN_PIPE, INTERRUPTED
from lab.core.errors import LabError

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_rows() -> dict[int, str]:
    text = README.read_text()
    section = text[text.index("## Exit status") :]
    section = section[: section.index("\n## ", 1)]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"^\| (\d+) \| (.*) \|$", line)
        if match:
            rows[int(match.group(1))] = match.group(2)
    return rows


def error_classes() -> set[type[LabError]]:
    for module in pkgutil.walk_packages(lab.__path__, "lab."):
        if ".shipped" not in module.name and module.name != "lab.__main__":
            importlib.import_module(module.name)
    found: set[type[LabError]] = set()
    todo: list[type[LabError]] = [LabError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return {c for c in found if c.__module__.startswith("lab.")}


def test_every_error_class_is_in_the_row_of_its_status() -> None:
    rows = readme_rows()
    classes = error_classes()
    assert len(classes) >= 15
    for cls in classes:
        assert cls.exit_code in rows, f"{cls.__name__}: status {cls.exit_code} not in the README"
        assert f"`{cls.__name__}`" in rows[cls.exit_code], (cls.__name__, cls.exit_code)


def test_no_class_is_named_in_a_row_other_than_its_own() -> None:
    rows = readme_rows()
    for cls in error_classes():
        elsewhere = [code for code, row in rows.items() if f"`{cls.__name__}`" in row]
        assert elsewhere == [cls.exit_code], (cls.__name__, elsewhere)


def test_the_statuses_the_cli_returns_itself_are_in_the_table() -> None:
    rows = readme_rows()
    assert {0, INTERRUPTED, BROKEN_PIPE} <= set(rows)


def test_a_closed_stdout_ends_quietly_with_its_status() -> None:
    """`lab workloads | head -1`: no BrokenPipeError traceback, the documented status."""
    reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    done = subprocess.run(
        [sys.executable, "-m", "lab", "workloads"],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert reader.stdin is not None
    reader.stdin.close()
    reader.wait()
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, BROKEN_PIPE), done.stderr


def test_version_answers_without_importing_numpy() -> None:
    script = (
        "import sys\nfrom lab.cli import main\nassert main(['--version']) == 0\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'lxml', 'libvirt') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["lab 0.1.0", "[]"]
