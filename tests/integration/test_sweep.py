"""A parameter sweep on the real pair: `lab run --sweep` makes one run per value, interleaved
(the stored start times prove the order), resumes after a SIGKILL to exactly n per value per
guest; `lab compare` shows a row per value and the crossing; the report's sweep plot renders
in Chromium, with what backed each twin's memory at each value."""

from __future__ import annotations

import itertools
import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import Pair
from tests.integration.test_report_browser import CHROMIUM, chromium, images_state

pytestmark = pytest.mark.integration

SIZES = ("16M", "64M", "256M")
N = 3
# Each iteration ends at its size or after 2 s, whichever comes first, even under TCG.
SWEEP = ["sysbench-memory", "--n", str(N), "--sweep", f"total_size={','.join(SIZES)}",
         "-p", "time=2", "-p", "block_size=1M"]  # fmt: skip


def successes(db: Path) -> list[tuple[str, str, int, float, float]]:
    """(guest, total_size, iteration, started, ended) of every successful attempt."""
    if not db.exists():
        return []
    conn = sqlite3.connect(db, timeout=30)
    try:
        rows = conn.execute(
            "SELECT g.name, r.params, i.iteration, i.started, i.ended FROM iteration i"
            " JOIN run r ON r.id = i.run_id JOIN guest g ON g.id = i.guest_id WHERE i.ok = 1"
        ).fetchall()
    except sqlite3.OperationalError as err:
        if "no such table" not in str(err):
            raise
        return []
    finally:
        conn.close()
    return [(g, json.loads(p)["total_size"], i, s, e) for g, p, i, s, e in rows]


@pytest.fixture(scope="module")
def swept(pair: Pair, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sweep, killed with SIGKILL in its first round, then the same command again."""
    db = tmp_path_factory.mktemp("sweep") / "lab.db"
    argv = [sys.executable, "-m", "lab", "run", *SWEEP, "--db", str(db)]
    proc = subprocess.Popen(
        argv, env=pair.lab.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
        if len(successes(db)) >= 2:  # the first value's first iteration, or more
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = successes(db)
    assert 0 < len(before) < len(SIZES) * N * 2, "the sweep ended before it could be killed"
    pair.lab("run", *SWEEP, "--db", str(db))
    return db


def test_a_killed_sweep_resumes_to_n_per_value_per_guest_interleaved(
    pair: Pair, swept: Path
) -> None:
    runs = json.loads(pair.lab("runs", "--db", str(swept), "--json").stdout)
    assert sorted(r["params"]["total_size"] for r in runs) == sorted(SIZES)
    assert len({r["sweep"] for r in runs}) == 1 and runs[0]["sweep"] is not None
    assert all(sorted(g["done"] for g in r["guests"]) == [N, N] for r in runs)
    rows = successes(swept)
    for guest in ("lab-thp", "lab-shp1g"):
        mine = [r for r in rows if r[0] == guest]
        assert sorted((size, i) for _, size, i, _, _ in mine) == sorted(
            (size, i) for size in SIZES for i in range(1, N + 1)
        )  # exactly n per value, each iteration once
    # Interleaved: iteration i of every value, in the sweep's order, before i+1 of any; each
    # step starts after the step before it ended.
    steps = [(i, size) for i in range(1, N + 1) for size in SIZES]
    for guest in ("lab-thp", "lab-shp1g"):  # each on its own clock: the twins' differ
        for earlier, later in itertools.pairwise(steps):
            (ended,) = [r[4] for r in rows if r[0] == guest and (r[2], r[1]) == earlier]
            (started,) = [r[3] for r in rows if r[0] == guest and (r[2], r[1]) == later]
            assert started >= ended, f"{guest}: {later} started before {earlier} ended"


def test_compare_shows_a_row_per_value_and_the_crossing(pair: Pair, swept: Path) -> None:
    done = pair.lab("compare", "--db", str(swept), "--metric", "throughput_mib_s",
                    "--confidence", "95")  # fmt: skip
    assert "several runs" not in done.stderr and "never pooled" not in done.stderr
    cells = [line.split("│")[1].strip() for line in done.stdout.splitlines()
             if line.startswith("│")]  # fmt: skip
    assert [c for c in cells if c] == list(SIZES)  # a long cell wraps onto lines of its own
    flat = " ".join(done.stdout.split())
    assert "crossing: " in flat and "corrected together with Holm" in flat
    (sweep,) = json.loads(pair.lab("compare", "--db", str(swept), "--metric",
                                   "throughput_mib_s", "--format", "json").stdout)  # fmt: skip
    assert [v["point"]["total_size"] for v in sweep["values"]] == list(SIZES)
    assert len(sweep["crossings"]) == 1 and all(v["b"]["n"] == N for v in sweep["values"])


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")
def test_the_report_s_sweep_plot_renders(pair: Pair, swept: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    pair.lab("report", "--db", str(swept), "--out", str(out), "--no-embed")  # figures/ files
    page = (out / "index.html").read_text()
    section = page[page.index('<h2 id="sweeps">') : page.index('<h2 id="metadata">')]
    plots = re.findall(r'<img src="(figures/sweep-[^"]+)"', section)
    # one per metric: total_time_s and throughput_mib_s, and sync's perf.* counts
    assert len(plots) == len(set(plots)) and {"throughput_mib_s", "total_time_s"} <= {
        p.rsplit("-", 1)[1].removesuffix(".png") for p in plots
    }, plots
    backing = section[section.index("What backed each twin") :]
    backing = backing[: backing.index("</table>")]
    assert backing.count("100 % of its") >= len(SIZES)  # shp1g's RAM in hugetlb pages, each
    done = chromium(out / "index.html", tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    state, count = images_state(done.stdout)
    assert state == "loaded" and count >= len(plots)
