"""`sysbench-oltp` on the real pair: MariaDB started by the workload's setup, the tables filled
once per run, each iteration's sysbench figures stored with their units and directions, and
a buffer pool size that MariaDB really took."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.inguest.journal import JournalEvent, read_journal
from lab.run.controller import RUNNER_DIR
from lab.run.workloads.sysbench_oltp import CONF, MARKER
from tests.integration.conftest import Pair
from tests.integration.test_stream_command import stored, values

pytestmark = pytest.mark.integration

GUESTS = ("lab-shp1g", "lab-thp")
METRICS = [
    ("errors", "count", "lower"),
    ("latency_avg_ms", "ms", "lower"),
    ("latency_p95_ms", "ms", "lower"),
    ("queries_per_s", "queries/s", "higher"),
    ("transactions_per_s", "transactions/s", "higher"),
]


@pytest.fixture(scope="module", autouse=True)
def mariadb_stopped_after(pair: Pair) -> Iterator[None]:
    """MariaDB keeps running after a run; the tests after these get the guests as they were."""
    yield
    for name in GUESTS:
        pair.lab("ssh", name, "sudo", "systemctl", "stop", "mariadb", check=False)
        pair.lab("ssh", name, "sudo", "rm", "-f", CONF, check=False)


def sql(pair: Pair, guest: str, query: str) -> str:
    return pair.lab("ssh", guest, "sudo", "mariadb", "-N", "-s", "-e", query).stdout.strip()


def setups(pair: Pair, guest: str, key: str) -> list[str]:
    """The output of each setup the guest's runner journalled for run ``key``."""
    text = pair.lab("ssh", guest, "cat", f"{RUNNER_DIR}/{key}.journal").stdout
    events = [r for r in read_journal(text) if isinstance(r, JournalEvent) and r.event == "setup"]
    assert all(event.fields["ok"] for event in events), events
    return [str(event.fields.get("output_tail", "")) for event in events]


def test_read_only_stores_the_five_figures_of_each_iteration(pair: Pair, tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    pair.lab("run", "sysbench-oltp", "--n", "3", "--db", str(db), "-p", "time=3")
    run = stored(pair, db)
    assert (
        sorted(
            (m["name"], m["unit"], m["direction"])
            for m in run["metrics"]
            if m["direction"] != "neither" and not m["name"].startswith("perf.")  # sync's counts
        )
        == METRICS
    )  # beside the backing.* evidence
    assert run["failures"] == []
    got = {metric: values(db, metric) for metric, _, _ in METRICS}
    for metric, by_guest in got.items():
        assert sorted(by_guest) == list(GUESTS), metric
        assert all(len(v) == 3 for v in by_guest.values()), (metric, by_guest)
    for guest in GUESTS:
        tps, qps = got["transactions_per_s"][guest], got["queries_per_s"][guest]
        avg, p95 = got["latency_avg_ms"][guest], got["latency_p95_ms"][guest]
        assert got["errors"][guest] == [0.0, 0.0, 0.0]
        for t, q, a, p in zip(tps, qps, avg, p95, strict=True):
            assert t > 0 and 0 < a <= p, (guest, t, a, p)
            # oltp_read_only: 14 selects between BEGIN and COMMIT, 16 queries a transaction
            assert 15.5 < q / t < 16.5, (guest, q, t)
            # one client (1 vCPU): it waits avg ms a transaction, so t transactions/s fill 1 s
            assert 0.8 < t * a / 1000 < 1.05, (guest, t, a)
        assert sql(pair, guest, "SELECT COUNT(*) FROM sbtest.sbtest2") == "10000"
        marker = pair.lab("ssh", guest, "cat", f"{RUNNER_DIR}/{MARKER}").stdout
        assert marker.startswith(f"run={run['key']} tables=2 table_size=10000 "), marker


def test_a_stepped_sync_run_prepares_once_with_the_pool_asked_for(
    pair: Pair, tmp_path: Path
) -> None:
    """The sync schedule steps one runner per guest through the run: the setup runs once,
    and fills the tables. The new run finds the last run's tables and drops them."""
    db = tmp_path / "lab.db"
    pair.lab(
        "run", "sysbench-oltp", "--n", "3", "--db", str(db), "--schedule", "sync",
        "-p", "script=oltp_point_select", "-p", "tables=1", "-p", "table_size=5000",
        "-p", "time=2", "-p", "buffer_pool_size=64M",
    )  # fmt: skip
    run = stored(pair, db)
    assert run["failures"] == []
    tps, qps = values(db, "transactions_per_s"), values(db, "queries_per_s")
    for guest in GUESTS:
        assert len(tps[guest]) == 3 and min(tps[guest]) > 0, tps
        # oltp_point_select: one query a transaction, no BEGIN or COMMIT
        assert all(abs(q - t) <= 0.01 * t for q, t in zip(qps[guest], tps[guest], strict=True))
        outputs = setups(pair, guest, run["key"])
        assert len(outputs) == 1, outputs
        assert "sysbench-oltp: prepared" in outputs[0], outputs[0]
        assert sql(pair, guest, "SELECT @@innodb_buffer_pool_size") == str(64 * 2**20)
        assert sql(pair, guest, "SHOW TABLES FROM sbtest") == "sbtest1"
        assert sql(pair, guest, "SELECT COUNT(*) FROM sbtest.sbtest1") == "5000"
    tables = json.loads(pair.lab("compare", "--db", str(db), "--format", "json").stdout)
    lead = [(t["unit"], t["direction"]) for t in tables if t["metric"] == "transactions_per_s"]
    assert lead and set(lead) == {("transactions/s", "higher")}, tables
