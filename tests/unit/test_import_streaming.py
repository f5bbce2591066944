"""``lab import`` at scale: memory that does not grow with the input, bounded lines, standard
input, one transaction for every input (and a SIGKILL that leaves the store as it was)."""

from __future__ import annotations

import io
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lab.cli import main
from lab.importers.ingest import ImportOptions, import_file
from lab.importers.inputs import MAX_LINE, Input
from lab.importers.malformed import LISTED, MalformedInputError
from lab.store import Store

ROOT = Path(__file__).resolve().parents[2]
HEADER = "variant,workload,metric,value,iteration\n"


pytestmark = pytest.mark.usefixtures("no_config")


def write_csv(path: Path, rows: int) -> Path:
    with path.open("w") as f:
        f.write(HEADER)
        for i in range(1, rows // 2 + 1):
            f.write(f"thp,gdb,real_s,{147 + i % 97 / 10:.3f},{i}\n")
            f.write(f"shp1g,gdb,real_s,{145 + i % 89 / 10:.3f},{i}\n")
    return path


def lab(*argv: str, stdin: bytes | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_CONFIG": os.devnull}
    return subprocess.run(
        [sys.executable, "-m", "lab", *argv], input=stdin.decode() if stdin else None,
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, **kw,  # type: ignore[call-overload]
    )  # fmt: skip


def samples(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM sample").fetchone()[0])


PEAK = """
import resource, sys
from lab.cli import main
status = main(["import", sys.argv[1], "--db", sys.argv[2]])
print(status, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_peak_memory_does_not_grow_with_the_input(tmp_path: Path) -> None:
    """Ten times the rows, the same peak: the file is read and stored a batch at a time (it was
    read whole, then split, then every sample kept: 45 times the file's size)."""
    peaks = []
    for rows in (20_000, 200_000):
        path = write_csv(tmp_path / f"{rows}.csv", rows)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_CONFIG": os.devnull}
        done = subprocess.run(
            [sys.executable, "-c", PEAK, str(path), str(tmp_path / f"{rows}.db")],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=True,
        )  # fmt: skip
        status, kib = done.stdout.splitlines()[-1].split()
        assert status == "0", done.stderr
        assert samples(tmp_path / f"{rows}.db") == rows
        peaks.append(int(kib))
    growth = peaks[1] / peaks[0]
    assert growth < 1.25, f"peak RSS {peaks[0]} KiB for 20,000 rows, {peaks[1]} KiB for 200,000"


def test_a_line_past_the_bound_fails_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text(HEADER + "thp,w,t_s,1,1\n" + "x" * (2 << 20) + "\nthp,w,t_s,2,2\n")
    store = Store.open(tmp_path / "lab.db")
    with pytest.raises(MalformedInputError) as caught:
        import_file(store, path, ImportOptions())
    assert str(caught.value).startswith(f"{path}:3: the line is longer than 1 MiB")
    assert "reading stopped at line 3" in str(caught.value)
    assert store.values() == []
    summary = import_file(store, path, ImportOptions(skip_bad=True))
    assert summary.stored == 2 and summary.bad_count == 1 and summary.bad[0].line == 3
    (series,) = store.values()
    assert series.values.tolist() == [1.0, 2.0]


def test_lines_past_the_bound_are_dropped_as_they_are_read() -> None:
    """The line reader keeps no more of a long line than it has to: line 2 (3 MiB, read in
    chunks) is reported, given out empty, and reading goes on at line 3."""
    data = b"a\n" + b"y" * (3 * MAX_LINE) + b"\nb\n" + b"z" * (MAX_LINE + 1)
    long: list[int] = []
    source = Input("x", "x", io.BufferedReader(io.BytesIO(data)))
    assert list(source.lines(long.append)) == ["a\n", "\n", "b\n"]
    assert long == [2, 4]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"a\n" * 200_000 + b"\0", "it holds a NUL byte at offset 400000"),
        (b"a\n" * 200_000 + b"caf\xe9\n", "byte 0xe9 at offset 400003 is not UTF-8"),
    ],
)
def test_binary_bytes_past_the_start_are_refused_with_their_offset(data: bytes, why: str) -> None:
    source = Input("x", "x", io.BufferedReader(io.BytesIO(data)))
    with pytest.raises(Exception, match=why):
        list(source.lines(lambda line: None))


def test_a_folder_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "runs").mkdir()
    db = tmp_path / "lab.db"
    assert main(["import", str(tmp_path / "runs"), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'runs'} is a folder, not a results file" in err and "runs/*.csv" in err
    assert not db.exists()


def test_standard_input(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    text = "\n".join(["real\t0m1.500s", "user\t0m1.000s", "sys\t0m0.200s", ""] * 3)
    done = lab("import", "-", "--variant", "thp", "--db", str(db), stdin=text.encode())
    assert done.returncode == 0, done.stderr
    assert "-: read 3 sample(s) as time; stored 3 new iteration(s)" in done.stderr
    with Store.open(db) as store:
        assert [r.source for r in store.export_rows() if r.metric == "real_s"] == [
            "stdin:1", "stdin:5", "stdin:9",
        ]  # fmt: skip


def test_standard_input_that_never_ends_fails_at_its_long_line(tmp_path: Path) -> None:
    """A pipe that is never closed: the import reads it as it comes and stops at the first line
    past the bound, instead of waiting for an end that does not come."""
    db = tmp_path / "lab.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_CONFIG": os.devnull}
    child = subprocess.Popen(
        [sys.executable, "-m", "lab", "import", "-", "--db", str(db)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT,
    )  # fmt: skip
    assert child.stdin is not None and child.stderr is not None

    def feed() -> None:
        assert child.stdin is not None
        try:
            child.stdin.write((HEADER + "thp,w,t_s,1,1\n").encode())
            while True:  # one line without end, for as long as someone reads it
                child.stdin.write(b"y" * 65536)
        except (BrokenPipeError, ValueError):
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        assert child.wait(timeout=60) == 2
    finally:
        child.kill()
    err = child.stderr.read().decode()
    assert "-:3: the line is longer than 1 MiB" in err and "nothing was stored" in err
    assert not db.exists()


def test_every_input_in_one_transaction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_csv(tmp_path / "good.csv", 10)
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "thp,gdb,real_s,1,100\nthp,gdb,real_s,fast,101\n")
    db = tmp_path / "lab.db"
    main(["import", str(good), "--db", str(db)])
    assert (
        main(["import", str(write_csv(tmp_path / "more.csv", 4)), str(bad), "--db", str(db)]) == 2
    )
    assert f"{bad}:3: value 'fast' is not a number; nothing was stored" in capsys.readouterr().err
    assert samples(db) == 10  # more.csv, read first and good, was not stored either


def test_malformed_lines_past_the_listed_stop_reading(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text(HEADER + "thp,w,t_s,x,1\n" * (LISTED + 50))
    with pytest.raises(MalformedInputError) as caught:
        import_file(Store.open(tmp_path / "lab.db"), path, ImportOptions())
    assert len(caught.value.bad) == LISTED and caught.value.stopped == LISTED + 2
    assert f"and {LISTED} more malformed line(s); reading stopped at line {LISTED + 2}" in str(
        caught.value
    )


def test_sigkill_mid_import_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    assert (
        lab("import", str(write_csv(tmp_path / "first.csv", 1_000)), "--db", str(db)).returncode
        == 0
    )
    before = samples(db)
    big = write_csv(tmp_path / "big.csv", 400_000)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_CONFIG": os.devnull}
    child = subprocess.Popen(
        [sys.executable, "-m", "lab", "import", str(big), "--db", str(db)], env=env, cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wal = Path(f"{db}-wal")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not wal.exists() or wal.stat().st_size < 4 << 20):
        time.sleep(0.02)  # until the import has written megabytes of its transaction
    assert child.poll() is None, "the import ended before it could be killed"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert samples(db) == before
    with Store.open(db) as store:
        assert store.integrity_check() == ["ok"]
        assert sum(s.values.size for s in store.values()) == before


def test_rows_of_one_iteration_far_apart_merge_across_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-format CSV sorted by metric (as pandas' melt writes it): iteration i's second
    metric comes batches after its first, and still joins the same iteration."""
    from lab.importers import ingest

    monkeypatch.setattr(ingest, "BATCH", 3)
    path = tmp_path / "melted.csv"
    rows = [f"thp,w,{m},{v}.5,{i}" for m, v in (("t_s", 1), ("r_per_s", 2)) for i in range(1, 8)]
    path.write_text(HEADER + "\n".join([*rows, "thp,w,t_s,9,3"]) + "\n")
    store = Store.open(tmp_path / "lab.db")
    with pytest.raises(MalformedInputError) as caught:
        import_file(store, path, ImportOptions())
    assert [(b.line, b.message) for b in caught.value.bad] == [
        (16, "a second 't_s' value for iteration 3")
    ]
    summary = import_file(store, path, ImportOptions(skip_bad=True))
    assert (summary.read, summary.stored, summary.bad_count) == (15, 7, 1)
    rows_out = {(r.iteration, r.metric): (r.value, r.source) for r in store.export_rows()}
    assert rows_out[(3, "t_s")] == (1.5, f"{path.resolve()}:4,11")
    assert rows_out[(3, "r_per_s")] == (2.5, f"{path.resolve()}:4,11")
    again = import_file(store, path, ImportOptions(skip_bad=True))
    # the same bytes: every line read before is skipped, the malformed one too (importers.identity)
    assert (again.stored, again.already, again.duplicates) == (0, 15, 0)
    assert again.same is not None


def test_standard_input_named_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "-", "-", "--db", str(tmp_path / "lab.db")]) == 2
    assert "standard input (-) is named twice" in capsys.readouterr().err


def test_rows_that_name_a_default_share_its_numbering(tmp_path: Path) -> None:
    """A guest column filled on some rows only, with the name it defaults to: one guest, and
    one count of its iterations (each spelling once had its own, and clashed)."""
    path = tmp_path / "r.csv"
    rows = ["thp,w,t_s,1,", "thp,w,t_s,2,thp", "thp,w,t_s,3,", "thp,w,t_s,4,thp"]
    path.write_text("variant,workload,metric,value,guest\n" + "\n".join(rows) + "\n")
    store = Store.open(tmp_path / "lab.db")
    summary = import_file(store, path, ImportOptions())
    assert (summary.stored, summary.bad_count) == (4, 0)
    (series,) = store.values()
    assert series.iterations.tolist() == [1, 2, 3, 4]
    assert series.values.tolist() == [1.0, 2.0, 3.0, 4.0]
