"""The import-linter contracts in pyproject.toml name every command: their lists are built
here from lab.cli's table and the files of lab/, so a new command or package cannot be left
out of them (lint-imports checks only the modules a contract names)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import lab
from lab.cli import COMMAND_MODULES

LAB = Path(lab.__file__).parent
PYPROJECT = LAB.parent / "pyproject.toml"


def _contract(name: str) -> dict[str, Any]:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    (found,) = [c for c in contracts if c["name"] == name]
    return found


def test_every_command_imports_only_the_application_report_and_core() -> None:
    contract = _contract("commands import only lab.app, lab.report and lab.core")
    assert contract["type"] == "forbidden"
    modules = {f"lab.commands.{p.stem}" for p in (LAB / "commands").glob("*.py")} - {
        "lab.commands.__init__"
    }
    assert set(COMMAND_MODULES) <= modules
    assert sorted(contract["source_modules"]) == sorted(modules)
    packages = {f"lab.{p.parent.name}" for p in LAB.glob("*/__init__.py")}
    allowed = {"lab.app", "lab.report", "lab.core", "lab.commands"}
    assert sorted(contract["forbidden_modules"]) == sorted(packages - allowed)
    # No exception: a command that needs more of the lab asks lab.app for it (issue 33 §6);
    # an ignore_imports would let a new crossing pass lint-imports unseen.
    assert "ignore_imports" not in contract


def test_no_command_imports_another_names_every_command() -> None:
    contract = _contract("no command imports another")
    assert sorted(contract["modules"]) == sorted(COMMAND_MODULES)
