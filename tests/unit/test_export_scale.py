"""``lab export`` at scale (issue 31 §2): an iteration's source, shared by its samples, is
quoted once; a guest's placements are joined only where it has any. What is written is what
the csv module writes of every row, whatever the shortcuts."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from lab.report.export import write_csv
from lab.store import EXPORT_COLUMNS, IterationRecord, MetricInfo, Store


def test_shared_sources_and_placements_are_written_as_the_csv_module_writes_them(
    tmp_path: Path,
) -> None:
    with Store.open(tmp_path / "lab.db") as store:
        study = store.ensure_study("s")
        metrics = [MetricInfo("a_s", "s", "lower"), MetricInfo("b_s", "s", "lower")]
        run = store.ensure_run(study, "s/r", "w", {"n": 1}, None, 4, metrics)
        placed = store.ensure_guest(study, "lab-a", "a")
        plain = store.ensure_guest(study, "lab-b", "b")
        sources = ["f.csv:2,3", "f.csv:2,3", None, 'q"uote:7,8', "plain:9"]
        for guest in (placed, plain):
            store.record(run, guest, [
                IterationRecord(i, 1, True, source=src, boot_id=f"boot{i // 3}",
                                metrics={"a_s": i + 0.5, "b_s": i * 2.0})
                for i, src in enumerate(sources, start=1)
            ])  # fmt: skip
        for i in (1, 2, 4):
            store.record_placement(run, placed, i, "own" if i < 4 else "swapped", [3, 4])
        out = io.StringIO()
        count = write_csv(out, store.export_batches(size=3))  # batches cut inside iterations
        want = io.StringIO()
        writer = csv.writer(want, lineterminator="\n")
        writer.writerow(EXPORT_COLUMNS)
        rows = list(store.export_rows())
        writer.writerows(
            ["" if v is None else v for v in (getattr(r, c) for c in EXPORT_COLUMNS)] for r in rows
        )
    assert count == len(rows) == 2 * 2 * len(sources)
    assert out.getvalue() == want.getvalue()
    read = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [(r["guest"], r["iteration"], r["placement"], r["cpus"]) for r in read
            if r["placement"]] == [("lab-a", str(i), p, "3,4") for i, p in
                                   ((1, "own"), (1, "own"), (2, "own"), (2, "own"),
                                    (4, "swapped"), (4, "swapped"))]  # fmt: skip
    assert {r["source"] for r in read} == {"f.csv:2,3", "", 'q"uote:7,8', "plain:9"}
