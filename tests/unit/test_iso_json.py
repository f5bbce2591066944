"""Issue 33 §1: "timestamps in one format (ISO 8601) everywhere": every moment of a JSON
output is an ISO 8601 string with its offset, to the microsecond, that reads back to the
stored epoch within 1 µs; durations stay numbers of seconds."""

from __future__ import annotations

import datetime
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.cli import main
from lab.core.units import format_timestamp, iso_timestamp
from lab.images.image import MANIFEST
from lab.store import IterationRecord, MetricInfo, Store

BASE = 1795791364.709594  # a moment with microseconds, as time.time() stores them
MICROSECOND = 1e-6
LAST = 253402300799.0 - 6 * 3600  # 9999-12-31 18:00 UTC: still in year 9999 at +05:30


@pytest.fixture(autouse=True)
def _kolkata(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time at +05:30: an offset that neither UTC nor a whole hour hides."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def read_back(text: str) -> float:
    moment = datetime.datetime.fromisoformat(text)
    assert moment.utcoffset() == datetime.timedelta(hours=5, minutes=30), text
    return moment.timestamp()


@pytest.mark.parametrize("stamp", [BASE, BASE + 0.5e-6, 0.0, -1.25, 1e-6, LAST])
def test_a_moment_reads_back_to_its_epoch_within_a_microsecond(stamp: float) -> None:
    text = iso_timestamp(stamp)
    assert text is not None
    assert abs(read_back(text) - stamp) <= MICROSECOND
    # the same local time and offset as text outputs write, with the microseconds added
    seconds, _, rest = text.partition(".")
    assert len(rest) == len("709594+05:30")
    assert seconds + rest[6:] == format_timestamp(math.floor(stamp))


@pytest.mark.parametrize("stamp", [None, math.nan, math.inf, -math.inf, 1e20, -1e20])
def test_no_moment_or_one_no_date_holds_is_null(stamp: float | None) -> None:
    assert iso_timestamp(stamp) is None


@pytest.fixture(name="db")
def db_fixture(tmp_path: Path) -> Path:
    path = tmp_path / "lab.db"
    with Store.open(path) as store:
        study = store.ensure_study("hp")
        thp = store.ensure_guest(study, "lab-thp", "thp")
        shp = store.ensure_guest(study, "lab-shp1g", "shp1g")
        run = store.ensure_run(study, "null-aaaa11112222", "null", {}, "sync", 2,
                               [MetricInfo("time_s", "s", "lower")])  # fmt: skip
        for guest, offset in ((thp, 0.0), (shp, 0.123457)):
            store.record(run, guest, [
                IterationRecord(i, 1, True, started=BASE + offset + 10 * i,
                                ended=BASE + offset + 10 * i + 2.000001, wall=2.000001,
                                metrics={"time_s": 2.0 + i / 100})
                for i in (1, 2)
            ])  # fmt: skip
        store.record(run, thp, [IterationRecord(3, 1, False, started=BASE + 40.000003,
                                                exit_status=3, output_tail="oops\n")])  # fmt: skip
    return path


def lab_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code = main(list(args))
    out, _ = capsys.readouterr()
    assert code == 0
    return json.loads(out)


def numbers_like_epochs(document: Any, path: str = "") -> list[str]:
    """Where a number that could be epoch seconds (1e9..4e9) is left, outside a duration."""
    if isinstance(document, dict):
        return [p for k, v in document.items() if not k.endswith("_s")
                for p in numbers_like_epochs(v, f"{path}.{k}")]  # fmt: skip
    if isinstance(document, list):
        return [p for i, v in enumerate(document) for p in numbers_like_epochs(v, f"{path}[{i}]")]
    if isinstance(document, int | float) and not isinstance(document, bool):
        return [path] if 1e9 <= abs(document) < 4e9 else []
    return []


def test_lab_runs_json_writes_every_moment_in_iso_8601(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [run] = lab_json(capsys, "runs", "--db", str(db), "--format", "json")
    with Store.open(db, create=False) as store:
        [stored] = store.runs()
    assert stored.created is not None and abs(read_back(run["created"]) - stored.created) <= 1e-6
    # each guest's first attempt's start and last attempt's end
    for guest, offset in zip(run["guests"], (0.0, 0.123457), strict=True):
        assert abs(read_back(guest["first"]) - (BASE + offset + 10)) <= MICROSECOND
        assert abs(read_back(guest["last"]) - (BASE + offset + 22.000001)) <= MICROSECOND
    assert numbers_like_epochs(run) == []


def test_lab_runs_show_json_writes_its_failures_moments_in_iso_8601(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = lab_json(capsys, "runs", "show", "null-aaaa", "--db", str(db), "--json")
    [failure] = run["failures"]
    assert abs(read_back(failure["started"]) - (BASE + 40.000003)) <= MICROSECOND
    assert read_back(run["created"]) > BASE - 1e9  # a moment, not a number of seconds
    assert numbers_like_epochs(run) == []


def test_lab_image_list_writes_its_manifests_moments_as_every_output_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    images = tmp_path / "images"
    for name, key in (("built", "built_at"), ("imported", "imported_at")):
        folder = images / f"{name}-0123456789ab"
        folder.mkdir(parents=True)
        manifest = {"name": name, "hash": "0123456789ab", key: "2026-11-27T12:00:05+00:00"}
        (folder / MANIFEST).write_text(json.dumps(manifest))
        (images / name).symlink_to(folder.name)
    config = tmp_path / "lab.toml"
    config.write_text(f'image_dir = "{images}"\n')
    found = lab_json(capsys, "--config", str(config), "image", "list", "--json")
    moment = datetime.datetime(2026, 11, 27, 12, 0, 5, tzinfo=datetime.UTC).timestamp()
    assert [(i["name"], read_back(i["built_at"] or i["imported_at"])) for i in found] == [
        ("built", moment),
        ("imported", moment),
    ]
    assert [(i["built_at"] is None, i["imported_at"] is None) for i in found] == [
        (False, True),
        (True, False),
    ]
    assert main(["--config", str(config), "image", "list"]) == 0
    assert format_timestamp(moment) == "2026-11-27T17:30:05+05:30"
    assert capsys.readouterr().out.count("2026-11-27T17:30:05+05:30") == 2
