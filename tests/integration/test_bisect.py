"""`lab bisect` on the session's pair (issue 43; at most 90 s): a repository of four commits
of a small program, the third of which makes it 60 % slower. The program sleeps rather than
loops: under emulation a loop's time varies by tens of per cent between the twins and the
bisection would take minutes (the loop's bisection, 16 commits, is the closing note's and
docs/benchmarks.md's); the commands, the checkouts over NFS, the twins, the swaps, the
stored steps and the verdicts are the same.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import Pair

pytestmark = pytest.mark.integration

SECONDS = ["0.1", "0.1", "0.16", "0.16"]  # each commit's program; the third is the first slow


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=lab", "-c", "user.email=lab@localhost", *args],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def test_bisect_names_the_commit_that_made_the_program_slower_and_resumes(
    pair: Pair, tmp_path: Path
) -> None:
    repo = tmp_path / "prog"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commits = []
    for i, seconds in enumerate(SECONDS):
        (repo / "prog.sh").write_text(f"#!/bin/sh\n# version {i}\nsleep {seconds}\n")
        git(repo, "add", "prog.sh")
        git(repo, "commit", "-q", "-m", f"version {i}: sleep {seconds}")
        commits.append(git(repo, "rev-parse", "HEAD"))
    db = str(tmp_path / "bisect.db")
    # 20 pairs a measurement: a run's start costs more than ten pairs of this program
    argv = ["bisect", "--repo", str(repo), "--good", commits[0], "--bad", "main", "--db", db,
            "--batch", "20", "--build", "sh -n prog.sh", "--format", "json", "--", "sh",
            "prog.sh"]  # fmt: skip
    result = json.loads(pair.lab(*argv, timeout=600).stdout)
    assert result["first_bad"] == commits[2]
    outcomes = {s["commit"]: s["outcome"] for s in result["steps"] if s["role"] == "probe"}
    assert outcomes.get(commits[2]) == "bad" and outcomes.get(commits[1], "good") == "good"
    assert 0.2 < result["gap_percent"] / 100 < 0.9  # 0.16 s against 0.1 s, and the overheads

    # every measurement is a stored run; each twin recorded the commit it ran, resolved
    runs = json.loads(pair.lab("runs", "--db", db, "--json").stdout)
    assert runs and all(r["workload"] == "revision" for r in runs)
    shown = json.loads(pair.lab("runs", "--db", db, "show", runs[0]["key"], "--json").stdout)
    revisions = {g["source_revision"] for name, g in shown["environment"].items()
                 if name.startswith("guest ")}  # fmt: skip
    assert revisions <= set(commits) and commits[0] in revisions

    # the same command resumes from its stored steps: the same answer, nothing measured again
    again = json.loads(pair.lab(*argv, timeout=300).stdout)
    assert again["first_bad"] == commits[2] and again["pairs"] == result["pairs"]
    assert len(json.loads(pair.lab("runs", "--db", db, "--json").stdout)) == len(runs)
