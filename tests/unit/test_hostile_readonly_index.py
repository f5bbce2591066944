"""A store written before the ``iteration_boot`` index, on a read-only mount (where it cannot
gain it): compare and report read its boots all the same, where SQLite's "no such index"
stopped them."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from lab.cli import main
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")


def test_a_read_only_store_without_the_boot_index(
    tmp_path: Path, tmpfs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "st" / "lab.db"
    with Store.open(db) as store:
        study = store.ensure_study("s")
        run = store.ensure_run(study, "s/w", "w", {}, None, 40, [MetricInfo("t", "s", "lower")])
        for variant, base in (("thp", 10.0), ("shp1g", 10.4)):
            guest = store.ensure_guest(study, f"lab-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, boot_id=f"b{i // 10}",
                                metrics={"t": base + i % 10 / 5 + (i // 10) / 10})
                for i in range(1, 41)
            ])  # fmt: skip
        expected = store.sample_boots()
    argv = ["compare", "--format", "csv", "--warmup", "1"]
    assert main([*argv, "--db", str(db)]) == 0
    indexed = capsys.readouterr().out
    shutil.copy(db, tmpfs / "lab.db")
    conn = sqlite3.connect(tmpfs / "lab.db")
    conn.execute("DROP INDEX iteration_boot")  # as a store written before it was
    conn.commit()
    conn.close()
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    with Store.open(tmpfs / "lab.db", create=False) as old:
        found = old.sample_boots()
    assert found.keys() == expected.keys() and len(found) == 2
    for key, (runs, boots) in expected.items():
        assert found[key][0].tolist() == runs.tolist()
        assert found[key][1].tolist() == boots.tolist() == [f"b{i // 10}" for i in range(1, 41)]
    assert main([*argv, "--db", str(tmpfs / "lab.db")]) == 0
    out, err = capsys.readouterr()
    assert out == indexed and ",boot means," in out and err == ""
