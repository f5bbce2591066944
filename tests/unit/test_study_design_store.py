"""A factorial study's design kept in the store (schema 7) as it ran: the round trip, the
blocks in the order they ran, the first design kept, a schema-6 store migrated, and `lab study
show` printing it (text and JSON)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import lab.app.design as design_module
from lab.app.design import design_from_json, design_json
from lab.app.study import parse_study
from lab.app.studyrun import record_study, stored_design
from lab.cli import main
from lab.core.errors import UsageError
from lab.store import SCHEMA_VERSION, IterationRecord, MetricInfo, Store
from lab.store.schema import MIGRATIONS, SCHEMA_V1
from tests.unit.test_study import config  # noqa: F401 (the autouse fixture)
from tests.unit.test_study_run import FACTORIAL, FakeLab, context, lab_state, start

FRACTION = """name = "frac"
vcpus = 1
memory = "1G"
[factors]
page = ["thp", "1g"]
prealloc = ["off", "on"]
guest-thp = ["always", "never"]
[design]
fraction = ["guest-thp = -page * prealloc"]
[[workload]]
name = "null"
n = 5
"""


@pytest.fixture
def expressible(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for libvirt's refusals: every cell can run (1 GiB on demand too)."""
    monkeypatch.setattr(design_module, "cell_problem", lambda cell: None)


def test_a_full_designs_cells_left_out_and_blocks_round_trip(tmp_path: Path) -> None:
    got = parse_study(FACTORIAL)
    assert got.design is not None
    with Store.open(tmp_path / "lab.db") as store:
        record_study(store, got)
    with Store.open(tmp_path / "lab.db") as store:
        document = store.study_design("pages")
    assert document is not None and document["format"] == 1
    assert document["left_out"][0]["cell"] == "page-1g.prealloc-off"
    assert "libvirt" in document["left_out"][0]["why"]
    assert design_from_json(document) == got.design
    # the document is plain JSON of the design, as `lab study check --json` gives it
    assert {k: v for k, v in document.items() if k != "format"} == json.loads(
        json.dumps(design_json(got.design))
    )


@pytest.mark.usefixtures("expressible")
def test_a_fraction_is_stored_with_its_aliases_and_its_blocks_in_the_order_they_ran(
    tmp_path: Path,
) -> None:
    got = parse_study(FRACTION)
    db = tmp_path / "lab.db"
    lab = FakeLab(state=lab_state(["thp", "shp1g"]))
    assert start(context(tmp_path), got, str(db), lab) == 0
    with Store.open(db) as store:
        design = stored_design(store, "frac")
    assert design.fraction == ("guest-thp = -page * prealloc",)
    assert design.aliases[0] == "I = -page:prealloc:guest-thp"
    assert "guest-thp = -page:prealloc" in design.aliases
    ups = [line.removeprefix("up ") for line in lab.log if line.startswith("up ")]
    assert ups == [",".join(block) for block in design.blocks]  # the order they ran in
    assert len(design.cells) == 4 and design.left_out == ()


def test_the_first_design_stored_is_kept(tmp_path: Path) -> None:
    with Store.open(tmp_path / "lab.db") as store:
        study_id = store.ensure_study("s")
        first = store.record_design(study_id, {"cells": ["a", "b"], "seed": 1})
        again = store.record_design(study_id, {"cells": ["c", "d"], "seed": 2})
        assert first == again == {"format": 1, "cells": ["a", "b"], "seed": 1}
        assert store.study_design("s") == first
        assert store.study_design("t") is None


def version_6_store(path: Path) -> None:
    """A store as lab wrote it at schema 6 (every step up to 6), with a study that ran."""
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_V1 + "".join(MIGRATIONS[v] for v in range(1, 6)))
    conn.executescript(
        "INSERT INTO meta(key, value) VALUES ('schema_version', '6');"
        "INSERT INTO study(id, name, study_file, study_hash) VALUES (1, 'old', 'x', 'abc');"
        "INSERT INTO run(id, study_id, key, workload) VALUES (1, 1, 'k', 'null');"
    )
    conn.commit()
    conn.close()


def test_a_version_6_store_opens_migrated_and_takes_designs(tmp_path: Path) -> None:
    path = tmp_path / "v6.db"
    version_6_store(path)
    with Store.open(path) as store:
        assert [s.name for s in store.studies()] == ["old"]
        assert [r.key for r in store.runs()] == ["k"]
        assert store.study_design("old") is None
        with pytest.raises(UsageError, match="has no stored design"):
            stored_design(store, "old")
        with pytest.raises(UsageError, match="no study 'nope'"):
            stored_design(store, "nope")
        got = parse_study(FACTORIAL)
        record_study(store, got)
        assert design_from_json(store.study_design("pages") or {}) == got.design
    conn = sqlite3.connect(path)
    version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    columns = [r[1] for r in conn.execute("PRAGMA table_info(study_design)")]
    conn.close()
    assert version == (str(SCHEMA_VERSION),) and SCHEMA_VERSION == 7
    assert columns == ["study_id", "design", "recorded"]


def test_lab_study_show_prints_the_stored_design_and_its_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got = parse_study(FACTORIAL)
    db = tmp_path / "lab.db"
    with Store.open(db) as store:
        record_study(store, got)
    capsys.readouterr()
    assert main(["study", "show", "pages", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "page (thp, 1g) × prealloc (off, on): 3 cells in 3 blocks of 2" in text
    assert "    left out: page-1g.prealloc-off: cell page-1g.prealloc-off cannot be" in text
    assert got.design is not None
    assert f"block 1: {', '.join(got.design.blocks[0])}" in text
    assert main(["study", "show", "pages", "--db", str(db), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["study"] == "pages"
    assert design_from_json(document["design"]) == got.design
    assert main(["study", "show", "other", "--db", str(db)]) != 0
    assert "no study 'other'" in capsys.readouterr().err


def test_a_jsonl_export_carries_the_design_and_import_stores_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got = parse_study(FACTORIAL)
    db = tmp_path / "lab.db"
    with Store.open(db) as store:
        study_id = record_study(store, got)
        metrics = [MetricInfo("t", "s", "lower")]
        run = store.ensure_run(study_id, "pages/null", "null", {}, None, 1, metrics)
        guest = store.ensure_guest(study_id, "lab-a", "page-thp.prealloc-off")
        store.record(run, guest, [IterationRecord(1, 1, True, metrics={"t": 1.0})])
        stored = store.study_design("pages")
    out = tmp_path / "all.jsonl"
    assert main(["export", "--db", str(db), "--format", "jsonl", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    (design_line,) = [line for line in lines if line.get("record") == "design"]
    assert design_line == {"record": "design", "study": "pages", "design": stored}
    again = tmp_path / "again.db"
    assert main(["import", str(out), "--db", str(again)]) == 0
    assert "skipped" not in capsys.readouterr().err  # no line refused: the study is made
    with Store.open(again) as store:
        assert store.study_design("pages") == stored
        assert stored_design(store, "pages") == got.design


@pytest.mark.parametrize(
    ("design", "expected"),
    [
        ([1], "not a JSON object"),
        ({"factors": {"page": ["thp"]}, "cells": ["a"], "blocks": [["a", "b"]], "seed": 1,
          "left_out": []}, "blocks are not pairs of its cells"),
        ({"factors": [], "cells": [], "blocks": [], "seed": 1, "left_out": []}, "factors"),
    ],
)  # fmt: skip
def test_a_malformed_design_line_is_refused_naming_its_line(
    tmp_path: Path, design: object, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = {"study": "s", "workload": "w", "variant": "thp", "guest": "g", "iteration": 1,
              "metric": "t", "value": 1.0, "direction": "lower"}  # fmt: skip
    path = tmp_path / "in.jsonl"
    lines = [{"record": "design", "study": "s", "design": design}, sample]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["import", str(path), "--db", str(tmp_path / "lab.db")]) != 0
    err = capsys.readouterr().err
    assert "in.jsonl:1: " in err and expected in err and "nothing was stored" in err
