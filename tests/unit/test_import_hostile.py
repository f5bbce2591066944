"""``lab import`` under hostile input: what makes an input the same (its bytes), names that are
data, files that are not regular, bounded messages, values that would crash later, encodings
and duplicate keys, and a summary that cannot fail after the commit. Each through the real
command in a process of its own, with real files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADER = "variant,workload,metric,value\n"

pytestmark = pytest.mark.usefixtures("no_config")


def lab(*argv: str, stdin: bytes | None = None, **kw: object) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_CONFIG": os.devnull}
    kw.setdefault("timeout", 60)
    return subprocess.run(
        [sys.executable, "-m", "lab", *argv], input=stdin, capture_output=True, env=env,
        cwd=ROOT, **kw,  # type: ignore[call-overload]
    )  # fmt: skip


def values(db: Path) -> list[float]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT value FROM sample ORDER BY value")]


def said(done: subprocess.CompletedProcess[bytes]) -> str:
    return (done.stdout + done.stderr).decode()


# -- 1. what makes an input the same: its bytes ----------------------------------------------


def test_two_different_standard_inputs_are_both_stored(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    first = lab("import", "-", "--db", str(db), stdin=(HEADER + "thp,w,t_s,1\n").encode())
    second = lab("import", "-", "--db", str(db), stdin=(HEADER + "thp,w,t_s,2\n").encode())
    assert first.returncode == second.returncode == 0, said(second)
    assert "stored 1 new iteration(s)" in said(second)
    assert values(db) == [1.0, 2.0]


def test_the_same_bytes_twice_are_a_no_op_that_says_so(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    data = (HEADER + "thp,w,t_s,1\nthp,w,t_s,2\n").encode()
    assert lab("import", "-", "--db", str(db), stdin=data).returncode == 0
    again = lab("import", "-", "--db", str(db), stdin=data)
    assert again.returncode == 0, said(again)
    assert "the same bytes were imported before (from stdin at " in said(again)
    assert "nothing stored" in said(again)
    assert values(db) == [1.0, 2.0]


def test_a_file_rewritten_in_place_is_stored(tmp_path: Path) -> None:
    db, path = tmp_path / "lab.db", tmp_path / "r.csv"
    path.write_text(HEADER + "thp,w,t_s,1\n")
    assert lab("import", str(path), "--db", str(db)).returncode == 0
    path.write_text(HEADER + "thp,w,t_s,7\n")  # as long, as many lines: only the bytes differ
    again = lab("import", str(path), "--db", str(db))
    assert again.returncode == 0 and "stored 1 new iteration(s)" in said(again), said(again)
    assert values(db) == [1.0, 7.0]


def test_the_same_content_under_another_name_is_a_no_op(tmp_path: Path) -> None:
    db, a, b = tmp_path / "lab.db", tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(HEADER + "thp,w,t_s,1\nthp,w,t_s,2\n")
    b.write_bytes(a.read_bytes())
    assert lab("import", str(a), "--db", str(db)).returncode == 0
    again = lab("import", str(b), "--db", str(db))
    assert again.returncode == 0 and f"from {a} at " in said(again), said(again)
    from_stdin = lab("import", "-", "--db", str(db), stdin=a.read_bytes())
    assert "nothing stored" in said(from_stdin)
    assert values(db) == [1.0, 2.0]


def test_a_copy_that_was_a_no_op_then_appended_to_adds_what_was_appended(tmp_path: Path) -> None:
    db, a, b = tmp_path / "lab.db", tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(HEADER + "thp,w,t_s,1\nthp,w,t_s,2\n")
    b.write_bytes(a.read_bytes())
    assert lab("import", str(a), "--db", str(db)).returncode == 0
    assert "nothing stored" in said(lab("import", str(b), "--db", str(db)))
    with b.open("a") as f:
        f.write("thp,w,t_s,3\n")  # the loop that writes b goes on
    again = lab("import", str(b), "--db", str(db))
    assert "stored 1 new iteration(s)" in said(again) and "2 sample(s) imported before" in said(
        again
    )
    assert values(db) == [1.0, 2.0, 3.0]


def test_the_same_bytes_into_another_study_are_stored(tmp_path: Path) -> None:
    db, data = tmp_path / "lab.db", (HEADER + "thp,w,t_s,1\n").encode()
    assert lab("import", "-", "--db", str(db), stdin=data).returncode == 0
    other = lab("import", "-", "--study", "other", "--db", str(db), stdin=data)
    assert "stored 1 new iteration(s)" in said(other)
    assert values(db) == [1.0, 1.0]


def test_the_same_bytes_after_their_run_was_deleted_are_stored_again(tmp_path: Path) -> None:
    db, data = tmp_path / "lab.db", (HEADER + "thp,w,t_s,1\n").encode()
    assert lab("import", "-", "--db", str(db), stdin=data).returncode == 0
    deleted = lab("runs", "--db", str(db), "delete", "imported/import/w", "--yes")
    assert deleted.returncode == 0 and values(db) == [], said(deleted)
    again = lab("import", "-", "--db", str(db), stdin=data)
    assert "stored 1 new iteration(s)" in said(again), said(again)
    assert values(db) == [1.0]


def test_a_no_op_input_leaves_the_others_of_its_command_stored(tmp_path: Path) -> None:
    """The same bytes found at an input's end roll back its savepoint only, and what it had
    numbered: the next input of the command numbers on from what the store holds."""
    db, a, b = tmp_path / "lab.db", tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(HEADER + "thp,w,t_s,1\n")
    b.write_text(HEADER + "thp,w,t_s,2\nshp1g,w,t_s,3\n")
    assert lab("import", str(a), "--db", str(db)).returncode == 0
    copy = tmp_path / "copy.csv"
    copy.write_bytes(a.read_bytes())
    both = lab("import", str(copy), str(b), "--db", str(db))
    assert both.returncode == 0, said(both)
    assert "nothing stored" in said(both) and "stored 2 new iteration(s)" in said(both)
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT g.name, i.iteration, s.value FROM sample s JOIN guest g ON g.id = s.guest_id"
            " JOIN iteration i USING (run_id, guest_id, iteration) ORDER BY s.value"
        ).fetchall()
    assert rows == [("thp", 1, 1.0), ("thp", 2, 2.0), ("shp1g", 1, 3.0)]
    check = lab("store", "check", "--db", str(db))
    assert check.returncode == 0, said(check)


# -- 3. what is not a regular file -----------------------------------------------------------


def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo, db = tmp_path / "results.csv", tmp_path / "lab.db"
    os.mkfifo(fifo)
    done = lab("import", str(fifo), "--db", str(db), timeout=10)  # it used to wait forever
    assert done.returncode == 2
    assert f"{fifo} is a FIFO (named pipe), not a results file" in said(done)
    assert len(done.stderr.splitlines()) == 1 and b"Traceback" not in done.stderr
    assert not db.exists()


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device")])
def test_a_device_is_refused_before_it_is_read(tmp_path: Path, path: str, kind: str) -> None:
    done = lab("import", path, "--format", "csv", "--db", str(tmp_path / "lab.db"), timeout=10)
    assert done.returncode == 2 and f"{path} is {kind}, not a results file" in said(done)
    assert "lab import - < /dev/zero" in said(done)


def test_a_socket_is_refused(tmp_path: Path) -> None:
    import socket

    where = tmp_path / "s.csv"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(where))
        done = lab("import", str(where), "--db", str(tmp_path / "lab.db"), timeout=10)
    assert done.returncode == 2 and f"{where} is a socket, not a results file" in said(done)


# -- 2. names are data ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "name", "shown_as", "code"),
    [
        ("variant", "\x1b[2J", "'\\x1b[2J'", "U+001B"),  # clears the screen
        ("workload", "a\x7fb", "'a\\x7fb'", "U+007F"),  # DEL
        ("metric", "t\x9bs", "'t\\x9bs'", "U+009B"),  # C1: a CSI on some terminals
        ("guest", "g\u2028h", "'g\\u2028h'", "U+2028"),  # a line separator
        ("host", "h\u202eost", "'h\\u202eost'", "U+202E"),  # right-to-left override
        ("study", "s\x01", "'s\\x01'", "U+0001"),
        ("unit", "m\ts", "'m\\ts'", "U+0009"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_name_with_a_control_character_is_refused_with_its_line(
    tmp_path: Path, field: str, name: str, shown_as: str, code: str, fmt: str
) -> None:
    import csv
    import json

    row = {"variant": "thp", "workload": "w", "metric": "t_s", "value": "1", "direction": "lower"}
    rows = [dict(row), {**row, field: name}]
    path = tmp_path / f"r.{fmt}"
    if fmt == "csv":
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=[*row, "guest", "host", "study", "unit"])
            writer.writeheader()
            writer.writerows(rows)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "lab.db"
    done = lab("import", str(path), "--db", str(db))
    assert done.returncode == 2, said(done)
    line = 3 if fmt == "csv" else 2
    expect = f"{path}:{line}: {field} {shown_as} holds a control character ({code}"
    assert expect in said(done)
    assert len(done.stderr.splitlines()) == 1 and b"\x1b" not in done.stderr
    assert not db.exists() or values(db) == []


def test_a_name_longer_than_200_characters_is_refused(tmp_path: Path) -> None:
    path, db = tmp_path / "r.csv", tmp_path / "lab.db"
    path.write_text(HEADER + "thp,w,t_s,1\n" + "v" * 201 + ",w,t_s,2\n")
    done = lab("import", str(path), "--db", str(db))
    assert done.returncode == 2
    assert f"{path}:3: variant '{'v' * 80}'… (201 characters) is longer than 200" in said(done)
    path.write_text(HEADER + "v" * 200 + ",w,t_s,2\n")  # 200 is a name
    assert lab("import", str(path), "--db", str(db)).returncode == 0


def test_a_name_on_the_command_line_is_refused_before_the_store_is_made(tmp_path: Path) -> None:
    path, db = tmp_path / "r.csv", tmp_path / "lab.db"
    path.write_text("variant,metric,value\nthp,t_s,1\n")
    done = lab("import", str(path), "--workload", "w\x1b]0;x\x07", "--db", str(db))
    assert done.returncode == 2 and "--workload: workload 'w\\x1b]0;x\\x07'" in said(done)
    assert not db.exists()


@pytest.mark.parametrize("name", ["[/x]", "[bold red]X[/bold red]", "a]b[c", "thp\\"])
def test_a_name_that_looks_like_markup_is_stored_as_it_is(tmp_path: Path, name: str) -> None:
    path, db = tmp_path / "r.csv", tmp_path / "lab.db"
    path.write_text(HEADER + f'"{name}",w,t_s,1\n')
    done = lab("import", str(path), "--db", str(db))
    assert done.returncode == 0, said(done)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT variant FROM guest").fetchall() == [(name,)]


# -- 5. numbers that would crash a later command --------------------------------------------


@pytest.mark.parametrize(
    ("columns", "row", "why"),
    [
        ("value", "inf", "value inf is not a finite number"),
        ("value", "nan", "value nan is not a finite number"),
        ("value", "-1e308", "value -1e+308 is larger than ±1e+75"),
        ("value", "1e76", "value 1e+76 is larger than ±1e+75"),
        ("value,iteration", "1,9223372036854775808", "iteration '9223372036854775808' is"),
        ("value,iteration", "1,9007199254740993", "iteration '9007199254740993' is past 2**53"),
        ("value,timestamp", "1,1e20", "timestamp 1e+20 is not a time between the years 1970"),
        ("value,timestamp", "1,inf", "timestamp inf is not a time between"),
        ("value,timestamp", "1,nan", "timestamp nan is not a time between"),
        ("value,timestamp", "1,-1", "timestamp -1 is not a time between"),
        ("value,started", "1,1969-12-31T00:00:00Z", "timestamp -86400 is not a time between"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("rows_before", [0, 2_500])  # read by the csv module, or in blocks
def test_a_number_a_later_command_would_fail_on_is_refused(
    tmp_path: Path, columns: str, row: str, why: str, rows_before: int
) -> None:
    path, db = tmp_path / "r.csv", tmp_path / "lab.db"
    with path.open("w") as f:
        f.write(f"variant,workload,metric,{columns}\n")
        for i in range(rows_before):  # good rows
            second = "" if columns == "value" else f",{i + 1}" if "iter" in columns else ",1.7e9"
            f.write(f"thp,w,t_s,1{second}\n")
        f.write(f"thp,w,t_s,{row}\n")
    done = lab("import", str(path), "--db", str(db))
    assert done.returncode == 2, said(done)
    assert f"{path}:{rows_before + 2}: {why}" in said(done)
    assert not db.exists() or values(db) == []


def test_a_jsonl_value_past_the_bound_is_refused(tmp_path: Path) -> None:
    path, db = tmp_path / "r.jsonl", tmp_path / "lab.db"
    row = '{"variant": "thp", "workload": "w", "metric": "t_s", "value": %s}\n'
    path.write_text(row % "1" + row % "1e300")
    done = lab("import", str(path), "--db", str(db))
    assert done.returncode == 2 and f"{path}:2: value 1e+300 is larger than" in said(done)


def test_a_raw_start_time_past_year_9999_is_refused(tmp_path: Path) -> None:
    capture = (ROOT / "tests/fixtures/import/iperf3-3.12-client-J-guest-tcg.json").read_text()
    path, db = tmp_path / "run.json", tmp_path / "lab.db"
    path.write_text(capture.replace('"timesecs":\t1795343891', '"timesecs":\t1e20'))
    assert path.read_text() != capture
    done = lab("import", str(path), "--variant", "thp", "--db", str(db))
    assert done.returncode == 2 and f"{path}:1: timestamp 1e+20 is not a time" in said(done)


def test_values_at_the_bound_are_compared_and_reported(tmp_path: Path) -> None:
    """The bound is what lab compare and lab report compute with: values of ±1e75 (the
    Welch-Satterthwaite degrees of freedom take their fourth power) stay finite."""
    path, db = tmp_path / "r.csv", tmp_path / "lab.db"
    with path.open("w") as f:
        f.write("variant,workload,metric,value,direction\n")
        for i in range(200):
            f.write(f"thp,w,t_s,{(1 - i % 7 / 10) * 1e75!r},lower\n")
            f.write(f"shp1g,w,t_s,{-(1 - i % 5 / 10) * 1e75!r},lower\n")
    assert lab("import", str(path), "--db", str(db)).returncode == 0
    compared = lab("compare", "--detail", "--db", str(db))
    assert compared.returncode == 0 and b"Warning" not in compared.stderr, said(compared)
    reported = lab("report", "--db", str(db), "--out", str(tmp_path / "report"))
    assert reported.returncode == 0, said(reported)
    runs = lab("runs", "--db", str(db))
    assert runs.returncode == 0, said(runs)


# -- 6. encodings, duplicates, standard input closed ---------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_byte_order_mark_is_skipped(tmp_path: Path, fmt: str) -> None:
    text = HEADER + "thp,w,t_s,1\n"
    if fmt == "jsonl":
        text = '{"variant": "thp", "workload": "w", "metric": "t_s", "value": 1}\n'
    data, db = b"\xef\xbb\xbf" + text.encode(), tmp_path / "lab.db"
    (tmp_path / f"r.{fmt}").write_bytes(data)
    from_file = lab("import", str(tmp_path / f"r.{fmt}"), "--db", str(db))
    assert from_file.returncode == 0, said(from_file)
    from_stdin = lab("import", "-", "--format", fmt, "--study", "s", "--db", str(db), stdin=data)
    assert from_stdin.returncode == 0, said(from_stdin)
    assert values(db) == [1.0, 1.0]


def test_bytes_that_are_not_utf8_after_a_bom_are_named_by_offset(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_bytes(b"\xef\xbb\xbf" + HEADER.encode() + b"caf\xe9,w,t_s,1\n")
    done = lab("import", str(path), "--db", str(tmp_path / "lab.db"))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert f"{path} is not a text results file (byte 0xe9 at offset 36 is not UTF-8)" in said(done)


def test_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("variant,workload,metric,value, value\nthp,w,t_s,1,2\n")
    done = lab("import", str(path), "--db", str(tmp_path / "lab.db"))
    assert done.returncode == 2 and f"{path}:1: the column 'value' is named twice" in said(done)


def test_a_json_key_given_twice_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    row = '{"variant": "thp", "workload": "w", "metric": "t_s", "value": 1'
    path.write_text(row + "}\n" + row + ', "value": 2}\n')
    done = lab("import", str(path), "--db", str(tmp_path / "lab.db"))
    assert done.returncode == 2 and f"{path}:2: the key 'value' is given twice" in said(done)


def test_standard_input_closed_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_CONFIG": os.devnull}
    done = subprocess.run(
        ["bash", "-c", f'exec "{sys.executable}" -m lab import - --db "{db}" <&-'],
        capture_output=True, env=env, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, said(done)
    assert done.stderr.decode().startswith("lab: error: standard input (-) is closed")
    assert len(done.stderr.splitlines()) == 1 and not db.exists()


# -- 4. bounded messages --------------------------------------------------------------------


def test_a_hundred_thousand_unknown_columns_make_one_short_line(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("variant,workload,metric,value," + ",".join(f"c{i}" for i in range(100_000)))
    done = lab("import", str(path), "--db", str(tmp_path / "lab.db"))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert len(done.stderr) < 500, len(done.stderr)  # it was 789 KB
    assert "unknown column(s) 'c0', 'c1', 'c2' and 99,997 more" in said(done)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_long_value_is_quoted_cut(tmp_path: Path, fmt: str) -> None:
    # CSV fields end at the csv module's 128 KiB; a JSON line goes on to 1 MiB
    size = 100_000 if fmt == "csv" else 400_000  # 900 KB as JSON
    value = "9" * (size // 2) + "x\x1b" * (size // 4)
    path = tmp_path / f"r.{fmt}"
    if fmt == "csv":
        path.write_text(HEADER + f"thp,w,t_s,{value}\n")
    else:
        import json

        row = {"variant": "thp", "workload": "w", "metric": "t_s", "value": value}
        path.write_text(json.dumps(row) + "\n")
    done = lab("import", str(path), "--db", str(tmp_path / "lab.db"))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert len(done.stderr) < 600, len(done.stderr)
    line = 2 if fmt == "csv" else 1
    expect = f"{path}:{line}: value '{'9' * 80}'… ({size:,} characters) is not a number"
    assert expect in said(done)


def test_a_jsonl_line_of_unknown_keys_and_escapes_is_one_short_line(tmp_path: Path) -> None:
    import json

    path = tmp_path / "r.jsonl"
    row = {"variant": "thp", "workload": "w", "metric": "t_s", "value": 1}
    row |= {f"\x1b[2J{i}\n": i for i in range(30_000)}  # 600 KB: a line under 1 MiB
    path.write_text(json.dumps(row) + "\n")
    done = lab("import", str(path), "--db", str(tmp_path / "lab.db"))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert len(done.stderr) < 600 and b"\x1b" not in done.stderr, said(done)
    assert "unknown key(s) '\\x1b[2J0\\n', '\\x1b[2J1\\n', '\\x1b[2J2\\n' and 29,997" in said(done)


def test_skip_bad_names_ten_lines_then_counts(tmp_path: Path) -> None:
    path, db = tmp_path / "r.csv", tmp_path / "lab.db"
    with path.open("w") as f:
        f.write(HEADER + "thp,w,t_s,1\n")
        for _ in range(20_000):  # each a 5 KB value: 100 MB of stderr if each were echoed whole
            f.write("thp,w,t_s," + "y" * 5_000 + "\n")
    done = lab("import", str(path), "--skip-bad", "--db", str(db))
    assert done.returncode == 0, said(done)[-500:]
    lines = done.stderr.decode().splitlines()
    assert len(done.stderr) < 3_000, len(done.stderr)
    assert [line.split(": ")[2] for line in lines[:10]] == [f"{path}:{n}" for n in range(3, 13)]
    assert f"{path}: 19,990 more malformed line(s) skipped" in lines[10]
    assert "skipped 20000 malformed line(s)" in said(done) and values(db) == [1.0]


# -- 7. nothing that can fail after the commit ------------------------------------------------


def test_an_import_into_a_full_stdout_stores_and_succeeds(tmp_path: Path) -> None:
    """stdout on a full device: the import writes nothing there, so the samples it committed
    are stored and it exits 0; what it did is said on stderr."""
    path, db = tmp_path / "r.csv", tmp_path / "lab.db"
    path.write_text(HEADER + "thp,w,t_s,1\nthp,w,t_s,2\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_CONFIG": os.devnull}
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "lab", "import", str(path), "--db", str(db)],
            stdout=full, stderr=subprocess.PIPE, env=env, cwd=ROOT, timeout=60,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert f"lab: {path}: read 2 sample(s) as csv; stored 2 new iteration(s)" in (
        done.stderr.decode()
    )
    assert values(db) == [1.0, 2.0]


def test_the_summary_prints_markup_like_names_as_they_are(tmp_path: Path) -> None:
    path, db = tmp_path / "r.csv", tmp_path / "lab.db"
    path.write_text(HEADER + "[bold red]X[/bold red],w,t_s,1\n[/x],w,t_s,2\n")
    done = lab("import", str(path), "--db", str(db))
    assert done.returncode == 0 and done.stdout == b"", said(done)
    assert "imported/w [/x]: 1" in said(done) and "imported/w [bold red]X[/bold red]: 1" in said(
        done
    )


def test_a_file_whose_start_changes_while_it_is_read_is_refused(tmp_path: Path) -> None:
    """The start of a file imported before is hashed when the import begins (so its lines
    are skipped) and again as it is read: a rewrite in between stores nothing."""
    from lab.core.errors import UsageError
    from lab.importers.identity import Identities
    from lab.importers.ingest import ImportOptions, import_file, import_inputs, plan
    from lab.importers.inputs import Input
    from lab.store import Store

    path = tmp_path / "r.csv"
    rows = "".join(f"thp,w,t_s,{i}\n" for i in range(1, 40_001))  # past the head's 256 KiB
    path.write_text(HEADER + rows)
    options = ImportOptions()
    with Store.open(tmp_path / "lab.db") as store:
        assert import_file(store, path, options).stored == 40_000
        with path.open("a") as f:
            f.write("thp,w,t_s,0.5\n")  # appended: only this line is new
        assert import_file(store, path, options).stored == 1  # its start checked as it is read
        with path.open("a") as f:
            f.write("thp,w,t_s,0.25\n")
        hashed = Identities.appended

        def then_rewritten(self: Identities, source: Input, options: str) -> int | None:
            lines = hashed(self, source, options)
            with path.open("r+b") as f:  # right after its start was hashed: a line changes
                f.seek(len(HEADER) + len(rows) - 2)  # 40000 becomes 40007
                f.write(b"7")
            return lines

        planned = plan([str(path)], options)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Identities, "appended", then_rewritten)
            with pytest.raises(UsageError, match="changed while it was read"):
                import_inputs(store, planned, options)
        assert len(store.values(metric="t_s")[0].values) == 40_001


# -- issue 39 §2: an import's identity is its bytes and its options ------------------------


def test_the_same_file_with_another_variant_is_stored(tmp_path: Path) -> None:
    db, path = tmp_path / "lab.db", tmp_path / "f.csv"
    path.write_text("metric,value\nt_s,1\nt_s,2\n")
    first = lab("import", str(path), "--variant", "thp", "--workload", "w", "--db", str(db))
    assert first.returncode == 0, said(first)
    other = lab("import", str(path), "--variant", "shp1g", "--workload", "w", "--db", str(db))
    assert other.returncode == 0 and "stored 2 new iteration(s)" in said(other), said(other)
    assert values(db) == [1.0, 1.0, 2.0, 2.0]
    again = lab("import", str(path), "--variant", "shp1g", "--workload", "w", "--db", str(db))
    assert "nothing stored" in said(again), said(again)
    assert values(db) == [1.0, 1.0, 2.0, 2.0]


def test_a_path_record_from_before_options_still_skips_what_the_store_holds(
    tmp_path: Path,
) -> None:
    db, path = tmp_path / "lab.db", tmp_path / "f.csv"
    path.write_text("metric,value\nt_s,1\n")
    argv = ("--variant", "thp", "--workload", "w", "--db", str(db))
    assert lab("import", str(path), *argv).returncode == 0
    with sqlite3.connect(db) as conn:  # as a lab before options were recorded left it
        conn.execute("DELETE FROM meta WHERE key LIKE 'import:%'")
        (value,) = conn.execute("SELECT value FROM meta WHERE key LIKE 'import-path:%'").fetchone()
        old = json.loads(value)
        old.pop("options", None)
        conn.execute("UPDATE meta SET value=? WHERE key LIKE 'import-path:%'", (json.dumps(old),))
    with path.open("a") as f:
        f.write("t_s,2\n")
    same = lab("import", str(path), *argv)
    assert "stored 1 new iteration(s)" in said(same), said(same)
    assert values(db) == [1.0, 2.0]
    other = lab("import", str(path), "--variant", "shp1g", "--workload", "w", "--db", str(db))
    assert "stored 2 new iteration(s)" in said(other), said(other)
    assert values(db) == [1.0, 1.0, 2.0, 2.0]


@pytest.mark.parametrize(
    "command", [("import", "f.csv", "--variant", "a", "--workload", "w"), ("runs",), ("report",)]
)
def test_an_empty_db_is_refused_and_writes_nothing(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    (tmp_path / "f.csv").write_text("metric,value\nt_s,1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_CONFIG": os.devnull}
    env["LAB_DB"] = str(tmp_path / "default.db")  # what an empty --db fell back to
    done = subprocess.run(
        [sys.executable, "-m", "lab", *command, "--db", ""],
        capture_output=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "--db is empty" in said(done), said(done)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("default.db")]


def test_a_url_as_the_store_is_refused_and_makes_no_folder(tmp_path: Path) -> None:
    (tmp_path / "f.csv").write_text("metric,value\nt_s,1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_CONFIG": os.devnull}
    env["LAB_DB"] = "ssh://host/x.db"
    done = subprocess.run(
        [sys.executable, "-m", "lab", "import", "f.csv", "--variant", "a", "--workload", "w"],
        capture_output=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "is a URL" in said(done), said(done)
    assert not (tmp_path / "ssh:").exists()


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
def test_report_out_naming_the_store_or_its_companions_is_refused(
    tmp_path: Path, suffix: str
) -> None:
    db = tmp_path / "lab.db"
    data = (HEADER + "thp,w,t_s,1\nthp,w,t_s,2\nshp,w,t_s,3\nshp,w,t_s,4\n").encode()
    assert lab("import", "-", "--db", str(db), stdin=data).returncode == 0
    done = lab("report", "--db", str(db), "--out", f"{db}{suffix}")
    assert done.returncode == 2 and "is the result store" in said(done), said(done)
    assert not Path(f"{db}{suffix}").is_dir()
    assert (
        lab("import", "-", "--db", str(db), stdin=(HEADER + "thp,w,t_s,5\n").encode()).returncode
        == 0
    )


def test_an_out_with_a_newline_is_shown_escaped(tmp_path: Path) -> None:
    db, other = tmp_path / "lab.db", tmp_path / "x\ny.db"
    data = (HEADER + "thp,w,t_s,1\n").encode()
    assert lab("import", "-", "--db", str(db), stdin=data).returncode == 0
    other.write_bytes(db.read_bytes())  # a database the lab did not make, under a raw name
    done = lab("export", "--db", str(db), "--out", str(other))
    assert done.returncode == 2 and "is a SQLite database" in said(done), said(done)
    assert "x\\ny.db" in said(done) and "x\ny.db" not in said(done), said(done)


@pytest.mark.parametrize(
    "text",
    [
        "variant,workload,metric,value\nthp,w,t,abc\n",  # malformed
        "variant,workload,metric,value\n",  # no samples
        "variant,workload,metric,value\nthp,w,t,1\n",  # no direction for t
    ],
)
def test_a_refused_first_import_leaves_no_file_behind(tmp_path: Path, text: str) -> None:
    # issue 39 §2: a refused first import left an empty store (118 KB) behind
    (tmp_path / "in.csv").write_text(text)
    folder = tmp_path / "new" / "deeper"
    assert lab("import", str(tmp_path / "in.csv"), "--db", str(folder / "lab.db")).returncode == 2
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "none.toml"]  # as before
