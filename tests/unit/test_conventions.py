"""Issue 33 §1: options where people type them, $LAB_DB, and which lab.toml was read."""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

import pytest

from lab.cli import main
from lab.core.config import config_origin, load_config
from lab.core.units import format_timestamp
from lab.store import IterationRecord, MetricInfo, Store


@pytest.fixture(name="db")
def db_fixture(tmp_path: Path) -> Path:
    path = tmp_path / "lab.db"
    with Store.open(path) as store:
        study = store.ensure_study("hp")
        thp = store.ensure_guest(study, "lab-thp", "thp")
        run = store.ensure_run(study, "null-aaaa11112222", "null", {}, "concurrent", 3,
                               [MetricInfo("time_s", "s", "lower")])  # fmt: skip
        shp = store.ensure_guest(study, "lab-shp1g", "shp1g")
        for guest, base in ((thp, 2.0), (shp, 1.9)):
            store.record(run, guest, [
                IterationRecord(i, 1, True, started=99.0 + i, ended=99.5 + i,
                                metrics={"time_s": base + i / 100})
                for i in (1, 2, 3)
            ])  # fmt: skip
    return path


def lab(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "words",
    [
        ("runs", "show", "null-aaaa", "--db", "{db}", "--json"),  # where people type it
        ("runs", "--db", "{db}", "show", "null-aaaa", "--json"),  # where it always worked
        ("runs", "show", "--db={db}", "null-aaaa", "--json"),
    ],
)
def test_a_groups_options_work_after_its_action(
    db: Path, capsys: pytest.CaptureFixture[str], words: tuple[str, ...]
) -> None:
    code, out, err = lab(capsys, *(w.format(db=db) for w in words))
    assert (code, err) == (0, "")
    assert json.loads(out)["key"] == "null-aaaa11112222"


def test_an_option_given_twice_keeps_the_later(
    db: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nothing.db"
    code, _, err = lab(capsys, "runs", "--db", str(db), "show", "null-aaaa", "--db", str(missing))
    assert code != 0 and "nothing.db" in err  # the later one wins, as argparse's rule is


def test_lab_db_names_the_store_for_every_command(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LAB_CONFIG", "/dev/null")
    monkeypatch.setenv("LAB_DB", str(db))
    code, out, _ = lab(capsys, "runs", "--json")
    assert code == 0 and [r["key"] for r in json.loads(out)] == ["null-aaaa11112222"]
    code, out, _ = lab(capsys, "config")
    assert code == 0 and f"store: {db} (named by $LAB_DB)" in out
    # --db still over $LAB_DB, and $LAB_DB over lab.toml's store
    code, _, err = lab(capsys, "runs", "--db", str(tmp_path / "other.db"))
    assert code != 0 and "other.db" in err
    toml = tmp_path / "lab.toml"
    toml.write_text('store = "/nowhere/lab.db"\n')
    assert load_config(toml, {"LAB_DB": str(db)}).store == str(db)
    assert load_config(toml, {}).store == "/nowhere/lab.db"


def test_config_says_which_file_it_read_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, xdg, here = tmp_path / "home", tmp_path / "xdg", tmp_path / "here"
    monkeypatch.setenv("HOME", str(home))
    for folder in (home / ".config/lab", xdg / "lab", here):
        folder.mkdir(parents=True)
    env = {"HOME": str(home)}
    path, why = config_origin(None, here, env)
    assert path is None and "the defaults" in why
    (home / ".config/lab/lab.toml").write_text("")
    assert config_origin(None, here, env) == (
        home / ".config/lab/lab.toml", "found in ~/.config/lab"
    )  # fmt: skip
    (xdg / "lab/lab.toml").write_text("")
    assert config_origin(None, here, {**env, "XDG_CONFIG_HOME": str(xdg)}) == (
        xdg / "lab/lab.toml", "found in $XDG_CONFIG_HOME/lab"
    )  # fmt: skip
    # a relative XDG_CONFIG_HOME is ignored, as the XDG spec says
    assert config_origin(None, here, {**env, "XDG_CONFIG_HOME": "rel"})[1].endswith("config/lab")
    (here / "lab.toml").write_text("")
    assert config_origin(None, here, env)[1] == "found in the current folder"
    assert config_origin(None, here, {**env, "LAB_CONFIG": "/x.toml"}) == (
        Path("/x.toml"), "named by $LAB_CONFIG"
    )  # fmt: skip
    assert config_origin("/y.toml", here, env) == (Path("/y.toml"), "named by --config")


def test_lab_config_prints_the_file_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    toml = tmp_path / "lab.toml"
    toml.write_text("vcpus = 2\n")
    monkeypatch.delenv("LAB_DB", raising=False)
    code, out, _ = lab(capsys, "--config", str(toml), "config")
    assert code == 0
    assert out.splitlines()[0] == f"config file: {toml} (named by --config)"


def test_text_outputs_write_moments_in_iso_8601(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # +05:30: an offset no default hides
    time.tzset()
    try:
        code, out, _ = lab(capsys, "runs", "show", "null-aaaa", "--db", str(db))
        moment = format_timestamp(100.0)
        assert moment == "1970-01-01T05:31:40+05:30"  # 100 s after the epoch, in Kolkata
        assert code == 0 and moment in out
        assert datetime.datetime.fromisoformat(moment).timestamp() == 100.0
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


@pytest.mark.parametrize(
    ("spelled", "alias"),
    [
        (("variants", "--format", "json"), ("variants", "--json")),
        (("workloads", "--format", "json"), ("workloads", "--json")),
        (("runs", "--format", "json", "--db", "{db}"), ("runs", "--json", "--db", "{db}")),
        (("runs", "show", "null-aaaa", "--format", "json", "--db", "{db}"),
         ("runs", "show", "null-aaaa", "--json", "--db", "{db}")),
        (("compare", "--format", "json", "--db", "{db}"), ("compare", "--json", "--db", "{db}")),
        (("export", "--format", "jsonl", "--db", "{db}"), ("export", "--json", "--db", "{db}")),
    ],
)  # fmt: skip
def test_format_json_is_the_spelling_and_json_its_alias(
    db: Path, capsys: pytest.CaptureFixture[str], spelled: tuple[str, ...], alias: tuple[str, ...]
) -> None:
    outputs = []
    for words in (spelled, alias):
        code, out, err = lab(capsys, *(w.format(db=db) for w in words))
        assert (code, err) == (0, "")
        outputs.append(out)
    assert outputs[0] == outputs[1]
    first = outputs[0].splitlines()[0] if "export" in spelled else outputs[0]
    json.loads(first)  # JSON (one object a line for export)
