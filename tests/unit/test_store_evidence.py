"""Evidence metrics (direction None: what backed the memory) are stored and exported, never
compared: the series lab compare reads leave them out, and Store.evidence sums them up."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.core.errors import StoreError
from lab.store import IterationRecord, MetricInfo, Store


def test_evidence_is_exported_and_summarised_but_not_a_series(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "k", "w", {}, "sync", 3, [
            MetricInfo("wall_s", "s", "lower"), MetricInfo("backing.qemu_rss_kib", "KiB", None),
        ])  # fmt: skip
        guest = store.ensure_guest(study, "lab-thp", "thp")
        store.record(run, guest, [
            IterationRecord(i, 1, True, started=float(i), ended=i + 0.5,
                            metrics={"wall_s": 0.5 + i, "backing.qemu_rss_kib": 1000.0 * i})
            for i in (1, 2, 3)
        ])  # fmt: skip
        assert [s.metric for s in store.values()] == ["wall_s"]
        (summary,) = store.evidence(run)
        assert (summary.guest, summary.metric, summary.unit) == (
            "lab-thp",
            "backing.qemu_rss_kib",
            "KiB",
        )
        assert (summary.n, summary.mean, summary.low, summary.high) == (3, 2000.0, 1000.0, 3000.0)
        exported = {r.metric for r in store.export_rows()}
        assert exported == {"wall_s", "backing.qemu_rss_kib"}
        (record,) = store.runs()
        assert {m.name: m.direction for m in record.metrics}["backing.qemu_rss_kib"] is None


def test_a_direction_that_is_neither_none_nor_a_way_is_refused() -> None:
    with pytest.raises(StoreError, match="neither 'lower' nor"):
        MetricInfo("x", "s", "sideways")  # type: ignore[arg-type]


def test_evidence_survives_export_and_import_without_a_direction(tmp_path: Path) -> None:
    """lab export writes an empty direction for backing.*; lab import of that file stores
    it as evidence again, rather than guessing a direction or refusing the line."""
    from lab.cli import main

    first, second = tmp_path / "a.db", tmp_path / "b.db"
    with Store.open(first) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "k", "w", {}, "sync", 2, [
            MetricInfo("wall_s", "s", "lower"),
            MetricInfo("backing.guest_thp_fault_alloc", "count", None),
        ])  # fmt: skip
        guest = store.ensure_guest(study, "lab-thp", "thp")
        store.record(run, guest, [
            IterationRecord(i, 1, True, started=float(i), ended=i + 0.5,
                            metrics={"wall_s": 1.0, "backing.guest_thp_fault_alloc": 7.0})
            for i in (1, 2)
        ])  # fmt: skip
    csv = tmp_path / "out.csv"
    assert main(["export", "--db", str(first), "--format", "csv", "--out", str(csv)]) == 0
    assert main(["import", str(csv), "--db", str(second)]) == 0
    with Store.open(second) as store:
        (record,) = store.runs()
        directions = {m.name: m.direction for m in record.metrics}
        assert directions == {"wall_s": "lower", "backing.guest_thp_fault_alloc": None}
        assert [s.metric for s in store.values()] == ["wall_s"]
