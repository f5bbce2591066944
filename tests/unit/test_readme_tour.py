"""The README's five-minute tour is real: its commands, run in order on the CSV it writes,
print exactly what it shows; the commands it shows without output (they need guests, or
files of the reader's) are command lines lab accepts."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from lab.cli import build_parser, command_word, main

pytestmark = pytest.mark.usefixtures("no_config")

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
TOUR = README[README.index("## A five-minute tour") : README.index("## KVM or TCG")]
BLOCK = re.compile(r"```(sh|text)\n(.*?)```", re.DOTALL)


def shown() -> list[tuple[str, str, str | None]]:
    """Each sh block of the tour: (what it is, its text, the text block shown after it)."""
    blocks = BLOCK.findall(TOUR)
    out: list[tuple[str, str, str | None]] = []
    for i, (kind, body) in enumerate(blocks):
        if kind == "sh":
            after = blocks[i + 1] if i + 1 < len(blocks) else None
            output = after[1] if after and after[0] == "text" else None
            what = "file" if body.startswith("cat > ") else "run" if output else "parse"
            out.append((what, body, output))
    return out


def lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip("\n").split("\n")]


def test_the_tour_prints_what_the_readme_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LAB_DB", str(tmp_path / "lab.db"))
    monkeypatch.setenv("COLUMNS", "100")  # as the README says it shows lab compare
    ran = []
    for what, body, output in shown():
        if what == "file":
            subprocess.run(["bash", "-e", "-c", body], check=True)
        elif what == "run":
            (line,) = body.strip().split("\n")
            capsys.readouterr()
            assert main(shlex.split(line)[1:]) == 0, line
            got = capsys.readouterr()
            assert lines(got.out + got.err) == lines(output or ""), line
            ran.append(line)
    assert ran == ["lab import results.csv", "lab compare", "lab report --out report"]
    assert (tmp_path / "report" / "index.html").stat().st_size > 0


def test_the_tour_commands_it_does_not_run_are_command_lines_lab_takes() -> None:
    commands = [
        words
        for what, body, _ in shown()
        if what == "parse"
        for words in (shlex.split(line, comments=True) for line in body.split("\n"))
        if words
    ]
    assert len(commands) >= 8  # the guests' walk and the imports of results you have
    for words in commands:
        assert words[0] == "lab", words
        args = build_parser(command_word(words[1:])).parse_args(words[1:])
        assert getattr(args, "run", None), words
