"""Runs as first-class objects on the real pair: two sysbench-memory runs that differ in a
parameter are listed by `lab runs`, never pooled by `lab compare`, and picked with --run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.integration.conftest import Pair

SHORT = ["--n", "2", "-p", "time=1", "-p", "total_size=1000G"]


def test_two_runs_that_differ_are_listed_refused_together_and_picked_one_by_one(
    pair: Pair, tmp_path: Path
) -> None:
    db = str(tmp_path / "lab.db")
    defrag = Path("/sys/kernel/mm/transparent_hugepage/defrag")
    before = re.search(r"\[(\S+)\]", defrag.read_text())
    assert before is not None
    other = "defer" if before.group(1) != "defer" else "madvise"
    try:
        for block in ("1M", "4K"):  # the second run with another THP defrag mode on the host
            pair.lab("run", "sysbench-memory", *SHORT, "-p", f"block_size={block}", "--study",
                     "two", "--db", db)  # fmt: skip
            defrag.write_text(other)
    finally:
        defrag.write_text(before.group(1))
    runs = json.loads(pair.lab("runs", "--db", db, "--json").stdout)
    assert sorted(r["params"]["block_size"] for r in runs) == ["1M", "4K"]
    assert all(r["state"] == "complete" for r in runs)
    assert all(sorted(g["done"] for g in r["guests"]) == [2, 2] for r in runs)
    keys = [r["key"] for r in runs]

    refused = pair.lab("compare", "--db", db, check=False)
    assert refused.returncode == 2
    assert all(key in refused.stderr for key in keys) and "--run KEY" in refused.stderr

    for key in keys:
        out = pair.lab("compare", "--db", db, "--run", key[:20], "--format", "json").stdout
        tables = json.loads(out)
        workload_metrics = {t["metric"] for t in tables if not t["metric"].startswith("perf.")}
        assert workload_metrics == {"total_time_s", "throughput_mib_s"}  # and sync's perf.*
        assert all(a["summary"]["n"] == 2 for t in tables for a in t["arms"])

    done = pair.lab("compare", "--db", db, "--run", keys[0], "--against", keys[1],
                    "--metric", "throughput_mib_s", "--format", "json")  # fmt: skip
    tables = json.loads(done.stdout)
    mode = {r["key"]: before.group(1) if r["params"]["block_size"] == "1M" else other
            for r in runs}  # fmt: skip
    changed = f"host thp_defrag: {keys[0]} local {mode[keys[0]]}, {keys[1]} local {mode[keys[1]]}"
    assert changed in done.stderr.replace("\n", " ")  # a THP mode changed between the runs
    assert sorted(t["study"].split(":")[0] for t in tables) == ["shp1g", "thp"]
    assert all([a["variant"] for a in t["arms"]] == keys for t in tables)

    # Each run recorded its environment on the real hosts and guests, and what backed the
    # twins' memory: shp1g's QEMU holds its whole RAM in hugetlb pages, as declared.
    shown = json.loads(pair.lab("runs", "--db", db, "show", keys[0], "--json").stdout)
    env = shown["environment"]
    host = env["host local"]
    assert host["kernel"] == Path("/proc/sys/kernel/osrelease").read_text().strip()
    assert host["accelerator"] in ("kvm", "qemu") and host["qemu_version"] != "not available"
    shp, thp = env["guest lab-shp1g"], env["guest lab-thp"]
    assert shp["memory_backing_declared"] == "hugetlb"
    assert int(shp["qemu_hugetlb_kib"]) == int(shp["memory_kib"]) > 0
    assert thp["memory_backing_declared"].startswith("default") and thp["qemu_hugetlb_kib"] == "0"
    assert shp["kernel"] == thp["kernel"] and shp["kernel"] != "not available"
    assert shown["twins_differ"] == []  # one image, one host: only the variant differs
    # the summary gives the evidence one line (issue 40 §3); --detail gives every line
    summary = pair.lab("compare", "--db", db, "--run", keys[0]).stderr
    assert "lab: evidence: " in summary and "memory of lab-shp1g" not in summary
    said = pair.lab("compare", "--db", db, "--run", keys[0], "--detail").stderr
    said += pair.lab("compare", "--db", db, "--run", keys[0], "--detail").stdout
    assert "memory of lab-shp1g: 100 % of its" in said and "did not take effect" not in said
    assert "QEMU was told more than the variant, -object pc.ram prealloc" in said
    live = pair.lab("diff", "--live", "thp", "shp1g")  # exit 0: nothing unexplained
    assert "memory-backend-file" in live.stdout and "consequence" in live.stdout

    # issue 42: the host's supply of 2 MiB blocks is recorded with every run, aged or not,
    # and sampled beside the iterations; issue 43: `lab history` reads both runs with the
    # versions this host recorded (no guest more: a second or two)
    assert 0.0 <= float(host["thp_unusable_index"]) <= 1.0 and host["host_aged"] == "no"
    assert int(host["thp_fault_alloc"]) >= 0
    history = json.loads(pair.lab("history", "sysbench-memory", "--db", db, "--metric",
                                  "throughput_mib_s", "--format", "json").stdout)  # fmt: skip
    points = history["variants"]["thp"]["points"]
    assert sorted(p["run"] for p in points) == sorted(keys)
    assert points[0]["versions"]["qemu"] == host["qemu_version"]
    assert points[0]["versions"]["guest-kernel"] == thp["kernel"]
