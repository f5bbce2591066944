"""No shell strings: every command the lab runs is an argument list.

The source of ``lab/``, ``guest/`` and ``domains/`` is read as syntax trees (not grepped, so
comments and strings do not count) for the ways Python hands a string to a shell.
"""

from __future__ import annotations

import ast
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
PACKAGES = ("lab", "guest", "domains")
# module -> functions of it that run a command line through /bin/sh
SHELL_FUNCTIONS = {
    "os": {"system", "popen"},
    "subprocess": {"getoutput", "getstatusoutput"},
    "commands": {"getoutput", "getstatusoutput"},
    "pty": {"spawn"},
}


def shell_uses(source: str, filename: str) -> list[str]:
    """Every ``shell=True`` (or any shell= but False) and every shell function, by line."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "shell" and not (
                    isinstance(keyword.value, ast.Constant) and keyword.value.value is False
                ):
                    found.append(f"{filename}:{node.lineno}: shell={ast.unparse(keyword.value)}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in SHELL_FUNCTIONS.get(node.value.id, ()):
                found.append(f"{filename}:{node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in SHELL_FUNCTIONS:
            for alias in node.names:
                if alias.name in SHELL_FUNCTIONS[node.module]:
                    found.append(
                        f"{filename}:{node.lineno}: from {node.module} import {alias.name}"
                    )
    return found


def sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (PROJECT / package).rglob("*.py"))


def test_the_scan_sees_every_form() -> None:
    bad = """
import os, subprocess
from os import popen
subprocess.run("ls", shell=True)
subprocess.Popen(cmd, shell=flag)
os.system("ls")
subprocess.getoutput("ls")
subprocess.run(["ls"], shell=False)  # fine
"""
    assert [hit.split(": ", 1)[1] for hit in shell_uses(bad, "x.py")] == [
        "from os import popen",
        "shell=True",
        "shell=flag",
        "os.system",
        "subprocess.getoutput",
    ]


def test_there_are_sources_to_scan() -> None:
    names = {p.relative_to(PROJECT).as_posix() for p in sources()}
    assert {"lab/core/hostexec.py", "lab/inguest/child.py", "lab/guests/ssh.py"} <= names


def test_no_shell_strings_in_the_lab_the_guest_runner_or_the_variants() -> None:
    found = [
        hit
        for path in sources()
        for hit in shell_uses(path.read_text(), path.relative_to(PROJECT).as_posix())
    ]
    assert found == []
