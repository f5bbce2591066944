"""Files the lab writes where a user names them: never over the store or another database,
and whole or not at all (``lab.core.outputs``), tried with real files, signals and a full
tmpfs."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.cli import main
from lab.core.outputs import TEMP_MARK, remove_stale_temps, temp_path
from lab.store import IterationRecord, MetricInfo, Store

pytestmark = pytest.mark.usefixtures("no_config")
ROOT = Path(__file__).resolve().parents[2]


def make_store(path: Path, iterations: int = 3, metrics: int = 2) -> Path:
    with Store.open(path) as store:
        study = store.ensure_study("s")
        infos = [MetricInfo(f"m{i}", "s", "lower") for i in range(metrics)]
        run = store.ensure_run(study, "s/w", "w", {}, None, iterations, infos)
        for variant in ("thp", "shp1g"):
            guest = store.ensure_guest(study, f"g-{variant}", variant)
            store.record(run, guest, [
                IterationRecord(i, 1, True, started=float(i), ended=i + 0.5,
                                metrics={m.name: i * 1.25 + j for j, m in enumerate(infos)})
                for i in range(1, iterations + 1)
            ])  # fmt: skip
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return make_store(tmp_path / "lab.db")


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lab: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("form", ["csv", "jsonl"])
def test_export_over_the_store_is_refused(
    db: Path, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = digest(db)
    assert main(["export", "--db", str(db), "--format", form, "--out", str(db)]) == 2
    assert "is the result store" in one_line_error(capsys.readouterr().err)
    assert digest(db) == before
    with Store.open(db, create=False) as store:
        assert store.counts()["sample"] == 12


def test_the_store_under_another_name_is_refused(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hard link and a symlink are the same file; the store's WAL is its own too."""
    hard, soft = tmp_path / "copy.csv", tmp_path / "link.csv"
    os.link(db, hard)
    soft.symlink_to(db)
    before = digest(db)
    for out in (hard, soft):
        assert main(["export", "--db", str(db), "--out", str(out)]) == 2
        assert "is the result store" in one_line_error(capsys.readouterr().err)
    assert digest(db) == before and soft.is_symlink()
    holder = sqlite3.connect(db)  # keeps -wal and -shm beside it while it is open
    try:
        holder.execute("PRAGMA journal_mode=WAL")
        holder.execute("CREATE TABLE IF NOT EXISTS scratch (x)")
        holder.commit()
        for suffix in ("-wal", "-shm"):
            wal = Path(f"{db}{suffix}")
            assert wal.exists()
            assert main(["export", "--db", str(db), "--out", str(wal)]) == 2
            assert f"result store {suffix[1:]} file" in one_line_error(capsys.readouterr().err)
    finally:
        holder.close()


def test_another_database_is_refused(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.sqlite"
    with contextlib.closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
    before = digest(other)
    assert main(["export", "--db", str(db), "--out", str(other)]) == 2
    assert "is a SQLite database" in one_line_error(capsys.readouterr().err)
    assert digest(other) == before


def test_report_over_the_store_is_refused(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = digest(db)
    assert main(["report", "--db", str(db), "--out", str(db)]) == 2
    assert "is the result store" in one_line_error(capsys.readouterr().err)
    assert digest(db) == before


def test_report_index_over_a_database_is_refused(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "rep"
    folder.mkdir()
    (folder / "index.html").symlink_to(db)
    before = digest(db)
    assert main(["report", "--db", str(db), "--out", str(folder), "--embed"]) == 2
    assert "is the result store" in one_line_error(capsys.readouterr().err)
    assert digest(db) == before


def test_export_replaces_a_file_whole_and_leaves_no_temp(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.csv"
    out.write_text("old\n")
    assert main(["export", "--db", str(db), "--out", str(out)]) == 0
    assert out.read_text().count("\n") == 13
    assert [p.name for p in tmp_path.iterdir() if TEMP_MARK in p.name] == []


def test_export_to_a_device_is_written_in_place(db: Path) -> None:
    """/dev/null stays a device: a rename over it would have replaced it with a file."""
    assert main(["export", "--db", str(db), "--out", "/dev/null"]) == 0
    assert Path("/dev/null").is_char_device()


# A `lab export` whose samples are handed out slowly: after the first batches it says so (the
# marker file) and waits, with rows already written, for the signal the test sends.
SLOW_EXPORT = """
import sys, time
from pathlib import Path
from lab.store.export import Export
whole = Export.export_batches
def slow(self, *args, **kwargs):
    for batch in whole(self, *args, **kwargs):
        yield batch
    Path(sys.argv[1]).write_text("written")
    time.sleep(60)
Export.export_batches = slow
from lab.cli import main
sys.exit(main(sys.argv[2:]))
"""


def hear_sigint() -> None:
    """In the child: SIGINT at its default, so Python turns it into KeyboardInterrupt as it
    does for a user's Ctrl-C. A test run started in the background (`nohup ... &`) has it
    ignored, which a child inherits, and then the SIGINT sent here did nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_slow_export(db: Path, out: Path, marker: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SLOW_EXPORT), str(marker),
         "export", "--db", str(db), "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=hear_sigint,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return proc


@pytest.mark.parametrize("kind", [signal.SIGINT, signal.SIGKILL])
def test_an_interrupted_export_leaves_the_destination_as_it_was(
    tmp_path: Path, kind: signal.Signals
) -> None:
    db = make_store(tmp_path / "big.db", iterations=2000, metrics=5)  # 20,000 rows, ~1.5 MB
    out = tmp_path / "samples.csv"
    out.write_text("the previous export\n")
    proc = start_slow_export(db, out, tmp_path / "marker")
    temp = temp_path(out.resolve(), proc.pid)
    assert temp.stat().st_size > 0  # rows were written, beside the destination
    proc.send_signal(kind)
    _, err = proc.communicate(timeout=30)
    assert out.read_text() == "the previous export\n"
    if kind == signal.SIGINT:
        assert proc.returncode == 130 and "Traceback" not in err, err
        assert not temp.exists()
    else:
        assert temp.exists()  # a SIGKILL cannot clean up: the next write to it does
        assert main(["export", "--db", str(db), "--out", str(out)]) == 0
        assert not temp.exists() and out.read_text().count("\n") == 20_001


@contextlib.contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("form", ["csv", "jsonl"])
def test_a_full_disk_leaves_no_partial_file(tmp_path: Path, form: str) -> None:
    db = make_store(tmp_path / "big.db", iterations=2000, metrics=5)  # ~1.5 MB as CSV
    with tmpfs(tmp_path / "small", "1m") as small:
        out = small / "samples.out"
        out.write_text("the previous export\n")
        done = subprocess.run(
            [sys.executable, "-m", "lab", "export", "--db", str(db), "--format", form,
             "--out", str(out)],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
            env={**os.environ, "COLUMNS": "300"},
        )  # fmt: skip
        assert done.returncode == 7, done.stderr
        line = one_line_error(done.stderr)
        assert "No space left on device" in line and str(out) in line
        assert out.read_text() == "the previous export\n"
        assert sorted(p.name for p in small.iterdir()) == ["samples.out"]


def test_only_the_temporary_files_of_dead_writers_are_removed(tmp_path: Path) -> None:
    """A name with glob characters in it is matched as it is."""
    dest = tmp_path / "[a]*.csv"
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone, alive = temp_path(dest, dead.pid), temp_path(dest, 1)  # pid 1 is always there
    other = temp_path(tmp_path / "b.csv", dead.pid)
    for path in (gone, alive, other):
        path.write_text("partial")
    assert remove_stale_temps(dest) == [gone]
    assert alive.exists() and other.exists()


def test_a_replaced_file_keeps_its_mode(db: Path, tmp_path: Path) -> None:
    """Written in place, the file kept its permissions; replaced, it keeps them too."""
    out = tmp_path / "private.csv"
    out.write_text("old\n")
    out.chmod(0o600)
    assert main(["export", "--db", str(db), "--out", str(out)]) == 0
    assert out.stat().st_mode & 0o777 == 0o600 and out.read_text() != "old\n"
