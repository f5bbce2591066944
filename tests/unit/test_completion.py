"""`lab completion bash|zsh|fish`: shtab's scripts, generated from the parser, complete
commands, options, and variant, workload and run-key names in the real shells."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.cli import COMMAND_MODULES, build_parser, main
from lab.commands.completion import script
from lab.store import IterationRecord, MetricInfo, Store

CHECKOUT = Path(__file__).parents[2]


@pytest.fixture(name="env")
def env_fixture(tmp_path: Path) -> dict[str, str]:
    """A `lab` on PATH (this checkout's) and a store with one run, named by $LAB_DB."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    lab = bin_dir / "lab"
    lab.write_text(f'#!/bin/sh\nPYTHONPATH={CHECKOUT} exec {sys.executable} -m lab "$@"\n')
    lab.chmod(0o755)
    db = tmp_path / "lab.db"
    with Store.open(db) as store:
        study = store.ensure_study("hp")
        guest = store.ensure_guest(study, "lab-thp", "thp")
        run = store.ensure_run(study, "null-cafe12345678", "null", {}, "concurrent", 1,
                               [MetricInfo("time_s", "s", "lower")])  # fmt: skip
        store.record(run, guest, [IterationRecord(1, 1, True, started=1.0, ended=2.0,
                                                  metrics={"time_s": 1.0})])  # fmt: skip
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LAB_DB": str(db),
            "LAB_CONFIG": "/dev/null", "HOME": str(tmp_path)}  # fmt: skip


def bash(env: dict[str, str], *words: str) -> list[str]:
    """What bash offers for the command line ``words`` (the last one being completed)."""
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    quoted = " ".join(f"'{w}'" for w in words)
    probe = (f"{script(build_parser(), 'bash')}\nCOMP_WORDS=({quoted});"
             f" COMP_CWORD={len(words) - 1}; _shtab_lab\n"
             'printf "%s\\n" "${COMPREPLY[@]}"\n')  # fmt: skip
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True,
                          env=env)  # fmt: skip
    return done.stdout.split()


def fish(env: dict[str, str], line: str, tmp_path: Path) -> list[str]:
    if shutil.which("fish") is None:
        pytest.skip("no fish (apt-get install fish)")
    path = tmp_path / "lab.fish"
    path.write_text(script(build_parser(), "fish"))
    done = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C '{line}'"],
                          capture_output=True, text=True, check=True, env=env)  # fmt: skip
    return [row.split("\t")[0] for row in done.stdout.splitlines()]


def test_bash_commands_then_actions_then_options(env: dict[str, str]) -> None:
    assert bash(env, "lab", "ru") == ["run", "runs"]
    assert bash(env, "lab", "host", "") == ["check", "prepare", "release", "age"]
    assert "--hugepages" in bash(env, "lab", "host", "prepare", "--")
    every = set(bash(env, "lab", ""))
    assert {m.rsplit(".", 1)[1].rstrip("_") for m in COMMAND_MODULES} <= every


def test_bash_completes_run_keys_variants_and_workloads(env: dict[str, str]) -> None:
    assert bash(env, "lab", "runs", "show", "") == ["null-cafe12345678"]
    assert bash(env, "lab", "compare", "--run", "nu") == ["null-cafe12345678"]
    variants = bash(env, "lab", "xml", "--variant", "")
    assert {"thp", "shp1g"} <= set(variants)
    assert {"null", "sysbench-memory"} <= set(bash(env, "lab", "run", ""))


def test_fish_completes_commands_and_run_keys(env: dict[str, str], tmp_path: Path) -> None:
    assert fish(env, "lab ru", tmp_path) == ["run", "runs"]
    assert fish(env, "lab runs show ", tmp_path) == ["null-cafe12345678"]
    assert "thp" in fish(env, "lab xml --variant ", tmp_path)


def test_zsh_script_is_valid_zsh_and_asks_lab_for_names(tmp_path: Path) -> None:
    if shutil.which("zsh") is None:
        pytest.skip("no zsh (apt-get install zsh)")
    path = tmp_path / "_lab"
    text = script(build_parser(), "zsh")
    path.write_text(text)
    subprocess.run(["zsh", "-n", str(path)], check=True)  # parses
    assert "lab completion --names runs" in text and "lab completion --names variants" in text


def test_names_without_a_store_print_nothing_and_succeed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAB_CONFIG", "/dev/null")
    monkeypatch.setenv("LAB_DB", str(tmp_path / "none.db"))
    assert main(["completion", "--names", "runs"]) == 0
    assert capsys.readouterr().out == ""
    assert not (tmp_path / "none.db").exists()
