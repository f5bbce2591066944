"""`lab completion bash`: the script, generated from the parser, completes in a real bash."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from lab.cli import build_parser
from lab.commands.completion import bash_script

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")


def complete(*words: str) -> list[str]:
    """What the generated _lab function offers for the command line ``words`` (the last
    one being completed), in a real bash."""
    script = bash_script(build_parser())
    quoted = " ".join(f"'{w}'" for w in words)
    probe = f"{script}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _lab\n"
    probe += 'printf "%s\\n" "${COMPREPLY[@]}"\n'
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_commands_then_actions_then_options() -> None:
    assert complete("lab", "ru") == ["run", "runs"]
    assert complete("lab", "host", "") == ["check", "prepare", "release"]
    assert "--hugepages" in complete("lab", "host", "prepare", "--")
    assert complete("lab", "run", "sysbench-memory", "--sw") == [
        "--swap-every", "--sweep", "--sweep-order",
    ]  # fmt: skip


def test_the_value_of_an_option_is_not_taken_for_the_command() -> None:
    assert complete("lab", "--config", "x.toml", "st") == ["status", "study", "store"]
    assert complete("lab", "image", "build", "--recipe", "debian12", "--f") == ["--force"]


def test_every_command_of_the_parser_is_offered() -> None:
    offered = set(complete("lab", ""))
    from lab.cli import COMMAND_MODULES

    assert {m.rsplit(".", 1)[1].rstrip("_") for m in COMMAND_MODULES} <= offered
