"""The environment recorded with every run: a host's facts from its files (captured on this
host, a nested TCG machine without cpufreq), a guest's from the script's output, and the
facts that differ between twins."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lab.cli import main
from lab.host.environment import NOT_AVAILABLE, host_environment, version_text
from lab.host.facts import Pool
from lab.run.backing import DEFAULT_DECLARED, HUGETLB_DECLARED
from lab.run.environment import differences, guest_environment
from lab.store import IterationRecord, Store

HOST = Path(__file__).parents[1] / "fixtures" / "captures" / "host-environment"


def read(path: str) -> str:
    return (HOST / path.lstrip("/")).read_text()


class FakeConn:
    def getVersion(self) -> int:
        return 7_002_011

    def getLibVersion(self) -> int:
        return 9_000_000


def test_a_hosts_facts_come_from_its_files_and_a_missing_knob_is_not_available() -> None:
    pools = [Pool(None, 1048576, 2, 2, 0), Pool(0, 2048, 0, 0, 0)]
    facts = host_environment(read, pools, FakeConn())
    assert facts["kernel"] == read("/proc/sys/kernel/osrelease").strip()
    assert facts["thp_enabled"] == "madvise" and facts["thp_defrag"] == "madvise"
    assert facts["khugepaged_defrag"] == "1"  # a number, where the others name a mode
    assert facts["cpu_model"] == "AMD EPYC" and facts["microcode"] == "0x1000065"
    assert facts["smt_active"] == "0" and facts["ksm_run"] == "0"
    assert facts["governor"] == facts["boost"] == NOT_AVAILABLE  # no cpufreq on this host
    assert facts["hugepages.all.1048576kB"] == "2/2/0"
    assert facts["hugepages.node0.2048kB"] == "0/0/0"
    assert (facts["qemu_version"], facts["libvirt_version"]) == ("7.2.11", "9.0.0")
    assert host_environment(read, [], None)["qemu_version"] == NOT_AVAILABLE


def test_libvirt_versions_unpack_as_virsh_version_prints_them() -> None:
    assert version_text(9_000_000) == "9.0.0"
    assert version_text(7_002_011) == "7.2.11"


def test_a_guests_facts_come_from_the_script_and_its_xml() -> None:
    output = (
        "6.1.0-18-amd64\nalways [madvise] never\n[always] defer madvise never\n"
        "gcc (Debian 12.2.0-14) 12.2.0\n"
    )
    facts = guest_environment(output, "<domain/>")
    assert facts["kernel"] == "6.1.0-18-amd64"
    assert (facts["thp_enabled"], facts["thp_defrag"]) == ("madvise", "always")
    assert facts["compiler"] == "gcc (Debian 12.2.0-14) 12.2.0"
    assert len(facts["domain_defined_sha256"]) == 64
    bare = guest_environment("6.1.0\n\n\n\n", None)  # no THP files, no gcc, no XML
    assert bare["thp_enabled"] == bare["compiler"] == bare["domain_defined_sha256"] == NOT_AVAILABLE


def test_twins_differ_only_where_a_fact_differs_and_never_by_their_xml() -> None:
    thp = {"kernel": "6.1", "thp_enabled": "always", "domain_defined_sha256": "a"}
    shp = {"kernel": "6.1", "thp_enabled": "never", "domain_defined_sha256": "b", "compiler": "gcc"}
    found = differences([("lab-thp", thp), ("lab-shp1g", shp)], "guest")
    assert [d.fact for d in found] == ["compiler", "thp_enabled"]
    assert found[1].text == "guest thp_enabled: lab-thp always, lab-shp1g never"
    assert found[0].values[0] == ("lab-thp", "(not recorded)")
    assert differences([("a", thp), ("b", dict(thp))], "guest") == []


def stored(path: Path, thp_mode: str = "always", key: str = "k", b: str = "shp1g") -> None:
    """A run of two twins whose recorded environment differs in ``thp_mode`` for variant
    ``b``'s guest (named lab-shp1g whatever its variant, so the QEMU captures fit)."""
    from tests.unit.test_compare_summary import RATE, TIME

    rng = np.random.default_rng(3)
    with Store.open(path) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, key, "w", {"k": key}, "concurrent", 30, [TIME, RATE])
        store.record_environment(run, "host", "local", {"kernel": "6.1", "lab_commit": key})
        for name, variant, mode in (("lab-thp", "thp", "always"), ("lab-shp1g", b, thp_mode)):
            guest = store.ensure_guest(study, name, variant)
            store.record_environment(run, "guest", name, {
                "kernel": "6.1", "thp_enabled": mode, "host": "local", "variant": variant,
                "domain_defined_sha256": name})  # fmt: skip
            store.record(run, guest, [
                IterationRecord(i + 1, 1, True, started=float(i), ended=i + 0.5,
                                metrics={"time_s": v, "rate": 100.0 / v})
                for i, v in enumerate(rng.normal(10.0, 0.1, 30))
            ])  # fmt: skip


def test_compare_warns_when_the_twins_environments_differ_beyond_their_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same, different = tmp_path / "same.db", tmp_path / "different.db"
    stored(same)
    stored(different, thp_mode="never")
    assert main(["compare", "--db", str(same)]) == 0
    assert "differ" not in capsys.readouterr().err  # names and XML differ by design
    assert main(["compare", "--db", str(different)]) == 0
    err = capsys.readouterr().err
    assert "the twins differ beyond their variant in guest thp_enabled:" in err
    assert "lab-thp always, lab-shp1g never" in err


def test_runs_show_prints_the_environment_and_compare_against_names_what_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    stored(db, key="before")
    stored(db, thp_mode="never", key="after")
    assert main(["runs", "--db", str(db), "show", "after"]) == 0
    out = capsys.readouterr().out
    assert "environment of guest lab-shp1g:" in out and "never" in out
    assert "the guests differ beyond their variant" in out
    assert main(["runs", "--db", str(db), "show", "after", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["environment"]["host local"]["kernel"] == "6.1"
    code = main(["compare", "--db", str(db), "--run", "before", "--against", "after"])
    err = capsys.readouterr().err
    assert code == 0
    assert "runs before and after differ in guest thp_enabled: before shp1g always," in err
    assert "lab_commit" not in err  # the lab's own commit is no experimental condition


def test_compare_says_what_backed_each_twins_memory_and_warns_when_a_variant_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lab.db"
    stored(db)
    backing = {
        "lab-thp": {"qemu_anon_huge_kib": "0", "qemu_hugetlb_kib": "0",
                    "memory_backing_declared": DEFAULT_DECLARED, "memory_kib": "1048576"},
        "lab-shp1g": {"qemu_anon_huge_kib": "0", "qemu_hugetlb_kib": "1048576",
                      "memory_backing_declared": HUGETLB_DECLARED, "memory_kib": "1048576"},
    }  # fmt: skip
    with Store.open(db) as store:
        run = store.runs()[0].id
        for e in store.environment(run):  # the end of the start: the backing read again
            if e.scope == "guest":
                store.record_environment(run, "guest", e.name, {**e.facts, **backing[e.name]})
    assert main(["compare", "--db", str(db), "--detail"]) == 0
    err = capsys.readouterr().err
    assert "memory of lab-shp1g: 100 % of its 1,048,576 KiB of RAM in hugetlb pages" in err
    assert "lab-thp (thp): no huge pages at all backed its memory" in err
    assert "changed between its starts" not in err  # the backing moves; that is no change
    assert main(["compare", "--db", str(db)]) == 0  # the summary: the evidence in one line
    err = capsys.readouterr().err
    assert "memory of" not in err and err.count("evidence: ") == 1
    assert "lab compare --detail, or lab report" in err


def test_the_report_carries_the_evidence(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    stored(db, thp_mode="never")
    out = tmp_path / "report"
    assert main(["report", "--db", str(db), "--out", str(out)]) == 0
    page = (out / "index.html").read_text()
    assert '<h2 id="evidence">Evidence</h2>' in page
    assert "the twins differ beyond their variant in guest thp_enabled" in page
    assert "run k: environment of guest lab-shp1g" in page and "<td>never</td>" in page


def test_compare_names_what_qemu_was_told_beyond_the_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    captures = Path(__file__).parents[1] / "fixtures" / "captures"
    db = tmp_path / "lab.db"
    stored(db)
    with Store.open(db) as store:
        run = store.runs()[0].id
        for e in store.environment(run):
            if e.scope == "guest":
                raw = (captures / f"qemu-7.2-cmdline-{e.name}-tcg.bin").read_text()
                args = json.dumps([a for a in raw.split("\0") if a])
                store.record_environment(run, "guest", e.name, {**e.facts, "qemu_cmdline": args})
    assert main(["compare", "--db", str(db), "--detail"]) == 0
    err = capsys.readouterr().err
    assert "QEMU was told more than the variant, -object pc.ram prealloc: lab-thp (absent)," in err
    assert "lab-shp1g true (guest RAM preallocated" in err
    assert "command lines differ beyond the variant" not in err


def test_what_a_variant_declares_it_changes_in_the_guest_is_not_a_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """guest-thp-never changes the guest's THP mode and QEMU's -append: by declaration, so
    compare and runs show say nothing; the same facts differing under shp1g are warned of."""
    raw = (Path(__file__).parents[1] / "fixtures" / "captures"
           / "qemu-7.2-cmdline-lab-thp-tcg.bin").read_text()  # fmt: skip
    args = [a for a in raw.split("\0") if a]
    never = [a.replace("quiet", "quiet transparent_hugepage=never") for a in args]
    for b in ("guest-thp-never", "shp1g"):
        db = tmp_path / f"{b}.db"
        stored(db, thp_mode="never", b=b)
        with Store.open(db) as store:
            run = store.runs()[0].id
            for e in store.environment(run):
                if e.scope == "guest":
                    told = never if e.name == "lab-shp1g" else args
                    facts = {**e.facts, "qemu_cmdline": json.dumps(told)}
                    store.record_environment(run, "guest", e.name, facts)
        assert main(["compare", "--db", str(db)]) == 0
        err = capsys.readouterr().err
        assert main(["runs", "--db", str(db), "show", "k", "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        declared = b == "guest-thp-never"
        assert ("differ beyond their variant in guest thp_enabled" in err) is not declared
        assert ("command lines differ beyond the variant, -append" in err) is not declared
        assert any("thp_enabled" in d for d in shown["twins_differ"]) is not declared


def test_a_hosts_facts_say_how_far_its_free_memory_is_from_serving_thp() -> None:
    """Issue 42: every run records the order-9 unusable free space index and the THP fault
    counters, computed here from the captured buddyinfo by hand (free pages of order < 9
    over all free pages, every zone) and the vmstat lines as they are."""
    facts = host_environment(read, [], None)
    free = unusable = 0
    for line in read("/proc/buddyinfo").splitlines():
        counts = [int(c) for c in line.split()[4:]]
        free += sum(c << order for order, c in enumerate(counts))
        unusable += sum(c << order for order, c in enumerate(counts) if order < 9)
    assert facts["thp_unusable_index"] == f"{unusable / free:.3f}"
    vmstat = dict(line.split() for line in read("/proc/vmstat").splitlines())
    assert facts["thp_fault_alloc"] == vmstat["thp_fault_alloc"]
    assert facts["thp_fault_fallback"] == vmstat["thp_fault_fallback"]
    missing = host_environment(lambda path: (_ for _ in ()).throw(OSError(path)), [], None)
    assert missing["thp_unusable_index"] == NOT_AVAILABLE
