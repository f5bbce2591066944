"""`lab host check`'s noise rows: each knob's ok, warn or not available from tables of facts,
and the facts read from sysfs/procfs trees (this host's real files among them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from lab.host.check import NA, OK, WARN, rows_from_facts
from lab.host.noise import NoiseFacts, noise_rows, read_noise, shared_siblings
from lab.host.row import Row
from lab.report.hostcheck import rows_json
from tests.unit.test_host_check import ready_facts, row

CAPTURE = Path(__file__).parent.parent / "fixtures" / "captures" / "host-environment"
TUNE = "lab host prepare --tune"


def quiet() -> NoiseFacts:
    """A host tuned for timing: every knob present and quiet."""
    return NoiseFacts(
        governors={0: "performance", 1: "performance", 2: "performance", 3: "performance"},
        boost="0",
        smt_active="1",
        cpu_siblings={0: (0, 2), 2: (0, 2), 1: (1, 3), 3: (1, 3)},
        ksm_run="0",
        numa_balancing="0",
        twin_cpus={"thp": (0, 2), "shp1g": (1, 3)},
    )


def rows_of(n: NoiseFacts, defrag: str | None = "madvise") -> dict[str, Row]:
    return {r.name: r for r in noise_rows(n, defrag, TUNE)}


def test_a_quiet_host_is_ok_everywhere() -> None:
    rows = rows_of(quiet())
    assert {name: r.state for name, r in rows.items()} == {
        "CPU governor": OK,
        "CPU boost": OK,
        "SMT siblings": OK,
        "KSM": OK,
        "NUMA balancing": OK,
        "THP defrag": OK,
        "irqbalance": OK,
    }


@pytest.mark.parametrize(
    ("change", "defrag", "name", "state", "fix"),
    [
        (
            {"governors": {0: "performance", 1: "powersave"}},
            "madvise",
            "CPU governor",
            WARN,
            f"{TUNE}, or: cpupower frequency-set -g performance",
        ),
        ({"governors": {}}, "madvise", "CPU governor", NA, ""),
        (
            {"boost": "1"},
            "madvise",
            "CPU boost",
            WARN,
            f"{TUNE}, or: echo 0 > /sys/devices/system/cpu/cpufreq/boost",
        ),
        (
            {"boost": None, "intel_no_turbo": "0"},
            "madvise",
            "CPU boost",
            WARN,
            f"{TUNE}, or: echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo",
        ),
        ({"boost": None, "intel_no_turbo": "1"}, "madvise", "CPU boost", OK, ""),
        ({"boost": None}, "madvise", "CPU boost", NA, ""),
        (
            {"ksm_run": "1"},
            "madvise",
            "KSM",
            WARN,
            f"{TUNE}, or: echo 0 > /sys/kernel/mm/ksm/run",
        ),
        ({"ksm_run": "2"}, "madvise", "KSM", OK, ""),  # 2: stopped, pages unmerged
        ({"ksm_run": None}, "madvise", "KSM", NA, ""),
        (
            {"numa_balancing": "1"},
            "madvise",
            "NUMA balancing",
            WARN,
            f"{TUNE}, or: sysctl kernel.numa_balancing=0",
        ),
        ({"numa_balancing": None}, "madvise", "NUMA balancing", NA, ""),
        (
            {},
            "always",
            "THP defrag",
            WARN,
            f"{TUNE}, or: echo madvise > /sys/kernel/mm/transparent_hugepage/defrag"
            " (or defer+madvise)",
        ),
        ({}, "defer+madvise", "THP defrag", OK, ""),
        ({}, None, "THP defrag", NA, ""),
        (
            {"twin_cpus": {"thp": (0,), "shp1g": (2,)}},
            "madvise",
            "SMT siblings",
            WARN,
            "plan with --reserve-host-cpus so each twin gets whole cores,"
            " or disable SMT: echo off > /sys/devices/system/cpu/smt/control",
        ),
        ({"twin_cpus": {}}, "madvise", "SMT siblings", NA, ""),
        (
            {"irqbalance_pid": 812},
            "madvise",
            "irqbalance",
            WARN,
            f"{TUNE}, or: systemctl stop irqbalance, or IRQBALANCE_BANNED_CPULIST=0,1,2,3"
            " in /etc/default/irqbalance",
        ),
        (
            {"irqbalance_pid": 812, "irqbalance_banned": (0, 1, 2, 3)},
            "madvise",
            "irqbalance",
            OK,
            "",
        ),
    ],
)
def test_each_noise_row_and_its_fix(
    change: dict[str, object], defrag: str | None, name: str, state: str, fix: str
) -> None:
    got = rows_of(replace(quiet(), **change), defrag)[name]  # type: ignore[arg-type]
    assert (got.state, got.fix) == (state, fix)


def test_the_governor_row_names_the_slow_cpus() -> None:
    got = rows_of(replace(quiet(), governors={0: "performance", 3: "schedutil"}))["CPU governor"]
    assert got.detail == "cpu3 schedutil: the clock follows the load"


def test_irqbalance_names_only_the_twins_cpus_it_may_still_use() -> None:
    n = replace(quiet(), irqbalance_pid=812, irqbalance_banned=(0, 2))
    got = rows_of(n)["irqbalance"]
    assert got.detail == "running (pid 812): moves interrupts onto 1,3"


def test_shared_siblings_are_found_once_per_core() -> None:
    siblings = {0: (0, 1), 1: (0, 1), 2: (2, 3), 3: (2, 3)}
    assert shared_siblings({"a": (0, 2), "b": (1, 3)}, siblings) == [
        (0, "a", 1, "b"),
        (2, "a", 3, "b"),
    ]
    assert shared_siblings({"a": (0, 1), "b": (2, 3)}, siblings) == []


def test_not_available_rows_never_make_the_check_fail() -> None:
    facts = replace(ready_facts(), thp_defrag="", noise=NoiseFacts())
    rows = rows_from_facts(facts)
    assert {row(rows, n).state for n in ("CPU governor", "CPU boost", "KSM", "THP defrag")} == {NA}
    assert json.loads(rows_json(rows))["ready"] is True


def tree_reader(root: Path) -> Callable[[str], str]:
    return lambda path: (root / path.lstrip("/")).read_text()


def test_this_host_s_real_files() -> None:
    """No cpufreq, SMT off, KSM and NUMA balancing off, THP defrag madvise."""
    n = read_noise(tree_reader(CAPTURE))
    assert (n.governors, n.boost, n.intel_no_turbo) == ({}, None, None)
    assert (n.smt_active, n.ksm_run, n.numa_balancing) == ("0", "0", "0")
    n.twin_cpus = {"thp": (0,), "shp1g": (1,)}
    rows = rows_of(n, "madvise")
    assert {name: r.state for name, r in rows.items()} == {
        "CPU governor": NA,
        "CPU boost": NA,
        "SMT siblings": OK,
        "KSM": OK,
        "NUMA balancing": OK,
        "THP defrag": OK,
        "irqbalance": OK,
    }
    assert rows["SMT siblings"].detail == "SMT is off"


def write(root: Path, path: str, text: str) -> None:
    (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    (root / path.lstrip("/")).write_text(text)


def test_a_noisy_tree_is_read_per_cpu(tmp_path: Path) -> None:
    cpu = "/sys/devices/system/cpu"
    write(tmp_path, f"{cpu}/online", "0-1\n")
    write(tmp_path, f"{cpu}/cpu0/cpufreq/scaling_governor", "performance\n")
    write(tmp_path, f"{cpu}/cpu1/cpufreq/scaling_governor", "powersave\n")
    write(tmp_path, f"{cpu}/cpu0/topology/thread_siblings_list", "0-1\n")
    write(tmp_path, f"{cpu}/cpu1/topology/thread_siblings_list", "0-1\n")
    write(tmp_path, f"{cpu}/intel_pstate/no_turbo", "0\n")
    write(tmp_path, "/sys/kernel/mm/ksm/run", "1\n")
    write(tmp_path, "/proc/sys/kernel/numa_balancing", "1\n")
    write(tmp_path, "/proc/77/environ", "PATH=/bin\0IRQBALANCE_BANNED_CPULIST=1\0")
    n = read_noise(tree_reader(tmp_path), irqbalance_pids=[77])
    assert n.governors == {0: "performance", 1: "powersave"}
    assert n.cpu_siblings == {0: (0, 1), 1: (0, 1)}
    assert (n.boost, n.intel_no_turbo, n.ksm_run, n.numa_balancing) == (None, "0", "1", "1")
    assert (n.irqbalance_pid, n.irqbalance_banned) == (77, (1,))
    n.twin_cpus = {"thp": (0,), "shp1g": (1,)}
    states = {name: r.state for name, r in rows_of(n, "always").items()}
    assert states == dict.fromkeys(states, WARN)
