"""Series read by child processes (lab.store.parts): the same arrays as a read here, and a
child that fails or is killed costs a read here, never a sample."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from lab.store import IterationRecord, MetricInfo, Store
from lab.store.parts import HEADER, PAIRS, RANGE, Children, _split, read_frame, shares

TIME = MetricInfo("time", "s", "lower")
RATE = MetricInfo("rate", "MiB/s", "higher")


def _filled(tmp_path: Path) -> Store:
    """Two variants, two runs of one workload (pooled by values()), two metrics; the second
    run has gaps (iterations without samples) and values that need all 17 digits."""
    store = Store.open(tmp_path / "lab.db")
    study = store.ensure_study("hp")
    first = store.ensure_run(study, "hp/a", "sysbench", {}, None, 300, [TIME, RATE])
    second = store.ensure_run(study, "hp/b", "sysbench", {}, None, 300, [TIME, RATE])
    rng = np.random.default_rng(7)
    for variant in ("thp", "shp1g"):
        guest = store.ensure_guest(study, f"lab-{variant}", variant)
        for run, gaps in ((first, False), (second, True)):
            store.record(run, guest, [
                IterationRecord(i, 1, True, boot_id=f"boot-{i // 100}",
                                metrics={"time": float(rng.normal(10, 1)) / 3,
                                         "rate": float(rng.uniform(1, 2))})
                for i in range(1, 301) if not (gaps and i % 7 == 0)
            ])  # fmt: skip
    return store


def _as_lists(series: list) -> list:
    return [(s.variant, s.metric, s.iterations.tolist(), s.values.tolist()) for s in series]


def test_children_read_what_a_read_here_reads(tmp_path: Path) -> None:
    store = _filled(tmp_path)
    with store.reading_values(children=0) as here:
        expected = here.result()
    with store.reading_values(children=3) as read:
        assert read._children is not None and len(read._children.procs) == 3
        found = read.result()
    assert _as_lists(found) == _as_lists(expected) == _as_lists(store.values())
    assert len(expected) == 4 and all(s.values.size == 300 + 258 for s in expected)
    # the second run's gaps came back as (iteration, value) pairs, the first as a range
    assert 7 not in found[0].iterations[300:] and found[0].iterations[:300].tolist() == list(
        range(1, 301)
    )
    assert read.iterations.keys() == here.iterations.keys() and len(read.iterations) == 8
    store.close()


def test_boots_from_the_parts_read_agree_with_boots_counted_again(tmp_path: Path) -> None:
    store = _filled(tmp_path)
    with store.reading_values(children=2) as read:
        read.result()
    given = store.sample_boots(iterations=read.iterations)
    counted = store.sample_boots()
    assert given.keys() == counted.keys() and len(given) == 4
    for key, (runs, boots) in counted.items():
        assert given[key][0].tolist() == runs.tolist()
        assert given[key][1].tolist() == boots.tolist()
        assert boots[0] == "boot-0" and boots[-1] == "boot-3"
    store.close()


def test_a_one_run_series_is_its_part_as_read_and_its_run_and_boot_take_no_memory(
    tmp_path: Path,
) -> None:
    """A series of one part is that part's arrays (no copy), and a part's one run id and one
    boot id are broadcast, not repeated per sample: at 2 × 3.1M samples each copy cost 50 to
    99 MB of compare's peak."""
    with Store.open(tmp_path / "lab.db") as store:
        study = store.ensure_study("hp")
        run = store.ensure_run(study, "hp/a", "sysbench", {}, None, 50, [TIME])
        guest = store.ensure_guest(study, "lab-thp", "thp")
        store.record(run, guest, [IterationRecord(i, 1, True, boot_id="b1",
                                                  metrics={"time": float(i)})
                                  for i in range(1, 51)])  # fmt: skip
        with store.reading_values(children=1) as read:
            (s,) = read.result()
        (iterations,) = read.iterations.values()
        assert s.iterations is iterations and s.values.tolist() == [float(i) for i in range(1, 51)]
        ((runs, boots),) = store.sample_boots(iterations=read.iterations).values()
    assert runs.tolist() == [run] * 50 and boots.tolist() == ["b1"] * 50
    assert runs.strides == boots.strides == (0,)


def test_a_child_that_fails_or_is_killed_has_its_parts_read_here(tmp_path: Path) -> None:
    store = _filled(tmp_path)
    conn = sqlite3.connect(tmp_path / "lab.db")
    part = (1, 1, "time")
    with Children(f"file:{tmp_path / 'missing.db'}?mode=ro", [[part]]) as failed:
        assert failed.frames(conn) == {part: read_frame(conn, *part)}
        assert failed.procs[0] is not None and failed.procs[0].returncode != 0
    with Children(f"file:{tmp_path / 'lab.db'}?mode=ro", [[part], [(1, 2, "time")]]) as killed:
        proc = killed.procs[0]
        assert proc is not None
        proc.kill()
        assert killed.frames(conn)[part] == read_frame(conn, *part)
        assert proc.returncode == -9
    store.close()


def test_close_stops_children_nobody_waited_for(tmp_path: Path) -> None:
    store = _filled(tmp_path)
    with store.reading_values(children=2) as read:
        children = read._children
    assert children is not None
    assert all(p is not None and p.returncode is not None for p in children.procs)
    store.close()


def test_a_frame_is_its_header_then_its_samples(tmp_path: Path) -> None:
    store = _filled(tmp_path)
    conn = sqlite3.connect(tmp_path / "lab.db")
    whole, gaps = read_frame(conn, 1, 1, "time"), read_frame(conn, 2, 1, "time")
    assert HEADER.unpack_from(whole) == (300, 1, 300, RANGE)
    assert len(whole) == HEADER.size + 300 * 8
    assert HEADER.unpack_from(gaps) == (258, 1, 300, PAIRS)
    assert len(gaps) == HEADER.size + 258 * 16
    assert HEADER.unpack_from(read_frame(conn, 9, 1, "time")) == (0, 0, -1, RANGE)
    assert _split(whole + gaps, 2) == [whole, gaps]
    assert _split(whole + gaps[:-1], 2) is None  # a child killed while writing
    assert _split(whole + gaps, 1) is None  # more than it was asked for
    store.close()


def test_parts_are_dealt_largest_first_to_the_least_loaded() -> None:
    parts = [(1, 1, "a"), (1, 2, "a"), (2, 1, "a"), (2, 2, "a"), (3, 1, "a")]
    dealt = shares(parts, [10, 100, 60, 50, 5], 2)
    # 100 → first; 60, then 50 → second (110); 10 → first (110); 5 → the first of the tied
    assert dealt == [[(1, 2, "a"), (1, 1, "a"), (3, 1, "a")], [(2, 1, "a"), (2, 2, "a")]]
    assert shares(parts[:1], [10], 3) == [[(1, 1, "a")]]


@pytest.mark.parametrize(("cpus", "expected"), [(1, None), (2, 1), (8, 4)])
def test_children_are_one_per_cpu_besides_this_process_from_a_size_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpus: int, expected: int | None
) -> None:
    store = _filled(tmp_path)
    monkeypatch.setattr("os.sched_getaffinity", lambda _: set(range(cpus)))
    with store.reading_values() as small:
        assert small._children is None  # 2,232 samples: not worth a process
    monkeypatch.setattr("lab.store.reads.CHILD_SAMPLES", 1_000)
    with store.reading_values() as large:
        found = None if large._children is None else len(large._children.procs)
        assert found == expected
        assert _as_lists(large.result()) == _as_lists(store.values())
    store.close()
