"""`stream` and `command` on the real pair: the C program built in each guest by its setup,
a user's command timed with a metric read from its output, each stored with its metrics'
units and directions."""

from __future__ import annotations

import json
import shlex
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Pair

pytestmark = pytest.mark.integration

KERNELS = ("copy_mb_s", "scale_mb_s", "add_mb_s", "triad_mb_s")


def performance(run: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The workload's metrics that get a verdict (not the backing.* evidence, nor the perf.*
    counts the sync schedule adds), sorted."""
    return sorted((m["name"], m["unit"], m["direction"]) for m in run["metrics"]
                  if m["direction"] != "neither" and not m["name"].startswith("perf."))  # fmt: skip


def stored(pair: Pair, db: Path) -> dict[str, Any]:
    """The one run in ``db``, as `lab runs show --json` gives it."""
    (run,) = json.loads(pair.lab("runs", "--db", str(db), "--json").stdout)
    assert run["state"] == "complete", run
    return dict(json.loads(pair.lab("runs", "--db", str(db), "show", run["key"], "--json").stdout))


def values(db: Path, metric: str) -> dict[str, list[float]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT g.name, s.value FROM sample s JOIN guest g ON g.id = s.guest_id"
            " WHERE s.metric = ? ORDER BY g.name, s.iteration",
            (metric,),
        ).fetchall()
    out: dict[str, list[float]] = {}
    for name, value in rows:
        out.setdefault(name, []).append(value)
    return out


def test_stream_builds_in_each_guest_and_stores_four_rates(pair: Pair, tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    pair.lab("run", "stream", "--n", "3", "--db", str(db))
    run = stored(pair, db)
    assert performance(run) == sorted((name, "MB/s", "higher") for name in KERNELS)
    for metric in KERNELS:
        got = values(db, metric)
        assert sorted(got) == ["lab-shp1g", "lab-thp"], metric
        assert all(len(v) == 3 and min(v) > 0 for v in got.values()), (metric, got)
    assert run["failures"] == []


def test_command_times_a_users_command_with_literal_arguments_and_a_regex_metric(
    pair: Pair, tmp_path: Path
) -> None:
    """Quotes, ; and $(...) in -p argv= are split on the host with shell rules and reach the
    guest's command as they are (no shell on either side runs them): the command says so in
    its output, read per iteration by a regex metric with its unit and direction."""
    db = tmp_path / "lab.db"
    want = ["a;b", "$(id)", "'q'", "x y"]
    check = f"import sys; print('same=%d' % (sys.argv[1:] == {want!r}))"
    argv = " ".join(["python3", "-c", shlex.quote(check), *(shlex.quote(a) for a in want)])
    pair.lab(
        "run", "command", "--n", "5", "--db", str(db), "-p", f"argv={argv}",
        "-p", "regex=same=(?P<same>[01])", "-p", "metrics=same:flag:higher",
        "-p", "clean=sh -c 'sync; true'",
    )  # fmt: skip
    run = stored(pair, db)
    assert performance(run) == [
        ("same", "flag", "higher"), ("sys_s", "s", "lower"),
        ("user_s", "s", "lower"), ("wall_s", "s", "lower"),
    ]  # fmt: skip
    assert values(db, "same") == {"lab-shp1g": [1.0] * 5, "lab-thp": [1.0] * 5}
    walls = values(db, "wall_s")
    assert sorted(walls) == ["lab-shp1g", "lab-thp"]
    assert all(len(v) == 5 and min(v) > 0 for v in walls.values()), walls
    tables = json.loads(pair.lab("compare", "--db", str(db), "--format", "json").stdout)
    same = [(t["unit"], t["direction"]) for t in tables if t["metric"] == "same"]
    assert same and set(same) == {("flag", "higher")}, tables
