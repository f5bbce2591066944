"""Names from files, guests and the store are data on the terminal: never rich markup, never
terminal control. Each command runs as a real process on a store holding hostile names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.core.text import cell, literal, shown
from lab.store import IterationRecord, MetricInfo, Store

ROOT = Path(__file__).resolve().parents[2]
CLOSER, BOLD, CLEAR = "[/x]", "[bold red]X[/bold red]", "a\x1b[2Jb"
VARIANTS = (CLOSER, BOLD, CLEAR)
WORKLOAD, METRIC, STUDY = f"w{CLOSER}", f"m{CLEAR}", f"s{BOLD}"
KEY = "wk-0001"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study whose variants, guests, workload, metric, study and parameter are hostile;
    written with the Store API, as an import would refuse the control characters."""
    path = tmp_path_factory.mktemp("names") / "lab.db"
    (path.parent / "none.toml").write_text("")
    with Store.open(path) as store:
        study = store.ensure_study(STUDY)
        unit = f"u{CLOSER}$\\frac{{"  # mathematics to matplotlib, unless told it is text
        metrics = [MetricInfo(METRIC, unit, "lower"), MetricInfo("t", "s", "lower")]
        run = store.ensure_run(study, KEY, WORKLOAD, {"p": BOLD}, None, 12, metrics)
        for k, variant in enumerate(VARIANTS):
            guest = store.ensure_guest(study, f"g{k}{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, started=1e9 + i, ended=1e9 + i + 0.5,
                                metrics={METRIC: 10.0 + k + (i % 3) * 0.1, "t": 1.0 + i % 2})
                for i in range(1, 13)
            ])  # fmt: skip
        store.record(run, store.ensure_guest(study, f"g0{CLOSER}", CLOSER), [
            IterationRecord(13, 1, False, started=1e9, exit_status=3,
                            output_tail=f"out {CLEAR} {BOLD}\n"),
        ])  # fmt: skip
    return path


def lab(db: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [sys.executable, "-m", "lab", args[0], "--db", str(db), *args[1:]],
        cwd=ROOT, capture_output=True, timeout=120,
        env={**os.environ, "COLUMNS": "300", "LAB_CONFIG": str(db.parent / "none.toml")},
    )  # fmt: skip
    return done


@pytest.mark.parametrize(
    ("command", "names"),
    [
        (["runs"], [STUDY, WORKLOAD, f"p={BOLD}"]),
        (["runs", "show", KEY], [STUDY, WORKLOAD, METRIC, *VARIANTS, f"out {CLEAR} {BOLD}"]),
        (["compare"], [WORKLOAD, METRIC, *VARIANTS]),
        (["compare", "--detail"], [WORKLOAD, METRIC, *VARIANTS]),
        (["compare", "--format", "markdown"], [WORKLOAD, METRIC, *VARIANTS]),
        (["plan", "--from-store", "--workload", WORKLOAD, "--metric", METRIC], [METRIC]),
        (["export", "--format", "jsonl"], []),
    ],
)
def test_names_are_printed_as_text(db: Path, command: list[str], names: list[str]) -> None:
    done = lab(db, *command)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert "Traceback" not in err and "MarkupError" not in err
    assert b"\x1b" not in done.stdout + done.stderr  # no terminal control got through
    for name in names:  # a table may wrap a name at its space: each word is there, as text
        for word in shown(name).split():
            assert word in out, (name, out)


def test_the_report_shows_the_names_as_text(db: Path) -> None:
    folder = db.parent / "report"
    done = lab(db, "report", "--out", str(folder), "--embed")
    assert done.returncode == 0, done.stderr.decode()
    assert b"\x1b" not in done.stdout + done.stderr
    page = (folder / "index.html").read_text()
    assert "\x1b" not in page and "a\\x1b[2Jb" in page
    assert "[bold red]X[/bold red]" in page and "w[/x]" in page


def test_an_error_naming_a_hostile_value_is_one_plain_line(db: Path) -> None:
    done = lab(db, "compare", "--workload", f"nope{CLEAR}{BOLD}\nsecond line")
    err = done.stderr.decode()
    assert done.returncode == 2
    assert b"\x1b" not in done.stderr and err.count("\n") == 1, err
    assert "[bold red]X[/bold red]" in err


def test_notes_and_warnings_take_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    from lab.core.config import Config
    from lab.core.context import Context

    ctx = Context(config=Config())
    ctx.note(f"imported {BOLD} from {CLOSER}")
    ctx.warn(f"file {CLEAR}")
    err = capsys.readouterr().err
    assert f"lab: imported {BOLD} from {CLOSER}" in err
    assert "lab: warning: file a\\x1b[2Jb" in err and "\x1b" not in err


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("tab\there\nline", "tab\\there\\nline"),
        ("\x9b31m\x7f", "\\x9b31m\\x7f"),
        ("rtl\u202eevil", "rtl\\u202eevil"),
        ("plain [x] ü", "plain [x] ü"),
    ],
)
def test_shown_writes_control_characters_as_escapes(raw: str, expected: str) -> None:
    assert shown(raw) == expected


def test_literal_and_cell_are_never_markup() -> None:
    assert literal(BOLD) == "\\[bold red]X\\[/bold red]"
    assert cell(f"{CLOSER}\n{CLEAR}").plain == "[/x]\na\\x1b[2Jb"  # lines kept, ESC shown


def test_lab_import_reports_hostile_names_as_text(tmp_path: Path) -> None:
    """The summary after the commit printed the file's names as markup: the import was
    stored, then `[/x]` crashed the command."""
    source = tmp_path / "loop.csv"
    source.write_text(f"variant,workload,metric,value,direction\n{CLOSER},w,t,3,lower\n"
                      f"{BOLD},w,t,4,lower\n")  # fmt: skip
    (tmp_path / "none.toml").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "lab", "import", "--db", str(tmp_path / "lab.db"), str(source)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "COLUMNS": "300", "LAB_CONFIG": str(tmp_path / "none.toml")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"w {CLOSER}: 1" in done.stderr and f"w {BOLD}: 1" in done.stderr  # a summary


def test_a_run_s_progress_bars_show_names_as_text() -> None:
    """A bar's description (guest, variant, a sweep's value) and its statistics (a metric's
    name and unit, from a plug-in or a guest's output) are never markup."""
    import io

    from rich.console import Console

    from lab.core.config import Config
    from lab.core.context import Context
    from lab.run.progress import RunProgress

    err = Console(file=io.StringIO(), force_terminal=True, width=200, color_system=None)
    progress = RunProgress(Context(config=Config(), err=err), 5).progress
    progress.add_task(f"g0{CLOSER} ({BOLD})", total=5, stats=f"{CLOSER} 1.5 ± 0.1 s")
    err.print(progress.make_tasks_table(progress.tasks))
    shown_text = err.file.getvalue()  # type: ignore[attr-defined]
    assert f"g0{CLOSER} ({BOLD})" in shown_text and f"{CLOSER} 1.5" in shown_text


def test_lab_config_shows_lab_toml_s_values_as_text(tmp_path: Path) -> None:
    config = tmp_path / "lab.toml"
    config.write_text('store = "q[/x]/Q[bold]W.db"\n')
    env = {**os.environ, "COLUMNS": "300", "LAB_CONFIG": str(config)}
    done = subprocess.run([sys.executable, "-m", "lab", "config"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "q[/x]/Q[bold]W.db" in done.stdout


def test_lab_study_check_names_its_file_as_text(tmp_path: Path) -> None:
    folder = tmp_path / "q[bold]W"
    folder.mkdir()
    study = folder / "demo.toml"
    study.write_text((ROOT / "studies" / "demo.toml").read_text())
    (tmp_path / "none.toml").write_text("")
    env = {**os.environ, "COLUMNS": "300", "LAB_CONFIG": str(tmp_path / "none.toml")}
    done = subprocess.run(
        [sys.executable, "-m", "lab", "study", "check", str(study), "--db", str(tmp_path / "x.db")],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(f"{study}: valid")
