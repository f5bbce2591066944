"""`lab host age`'s state handling on a fake host: the fragmenter started, recorded, waited
for and stopped through a fake process table; refusals made before anything is touched."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import pytest

from lab.app.aging import AgeRequest, age, aging_state, unage
from lab.core.clock import ManualClock
from lab.core.config import Config
from lab.core.context import Context
from lab.core.errors import LabError, UsageError
from lab.core.hostexec import Host, RecordingHost
from lab.host.aging import AGING_FILE, KIND, STATUS_FILE, Ager, Processes, budget
from lab.host.changes import ChangeLog
from lab.host.telemetry import unusable_index

FIXTURES = Path(__file__).parents[1] / "fixtures" / "host"
BUDDYINFO = (FIXTURES / "host-proc-buddyinfo.txt").read_text()  # index 0.16 or so
GIB = 1 << 30


def meminfo(total_gib: float = 24, free_gib: float = 18, available_gib: float = 21) -> str:
    kib = 1024 * 1024
    return (
        f"MemTotal:       {int(total_gib * kib)} kB\n"
        f"MemFree:        {int(free_gib * kib)} kB\n"
        f"MemAvailable:   {int(available_gib * kib)} kB\n"
        "HugePages_Total:       0\n"
    )


class FakeProcesses(Processes):
    """A process table: a started fragmenter writes its status file as the real one would
    (``outcome``: holding or failed) and runs until stopped."""

    def __init__(self, host: RecordingHost, outcome: str = "holding") -> None:
        super().__init__(host)
        self.files = host.files
        self.outcome = outcome
        self.alive: set[int] = set()
        self.started: list[list[str]] = []
        self.signals: list[tuple[int, bool]] = []

    def start(self, argv: list[str], log: Path) -> int:
        self.started.append(argv)
        pid = 4242 + len(self.started)
        status = argv[argv.index("--status") + 1]
        level = float(argv[argv.index("--level") + 1])
        self.files[status] = json.dumps(
            {
                "state": self.outcome,
                "level": level,
                "index": level + 0.01,
                "held_bytes": 3 * GIB,
                "peak_bytes": 7 * GIB,
                "rounds": 1,
                "seconds": 12.5,
                "pid": pid,
                "error": "no room left" if self.outcome == "failed" else "",
            }
        )
        if self.outcome != "failed":
            self.alive.add(pid)
        return pid

    def running(self, pid: int) -> bool:
        return pid in self.alive

    def gone(self, pid: int) -> bool:
        return pid not in self.alive

    def stop(self, pid: int, force: bool = False) -> None:
        self.signals.append((pid, force))
        self.alive.discard(pid)


def ager(tmp_path: Path, mem: str | None = None, outcome: str = "holding") -> Ager:
    host = RecordingHost(files={"/proc/buddyinfo": BUDDYINFO, "/proc/meminfo": mem or meminfo()})
    return Ager(host, ManualClock(), tmp_path, FakeProcesses(host, outcome), python="python3")


def fake(a: Ager) -> FakeProcesses:
    assert isinstance(a.processes, FakeProcesses)
    return a.processes


def recorded(state_dir: Path) -> list[dict[str, object]]:
    return [c.detail for c in ChangeLog.load(state_dir, AGING_FILE).changes if c.kind == KIND]


def test_age_records_the_holder_and_undo_stops_it(tmp_path: Path) -> None:
    a = ager(tmp_path)
    aged = a.age(0.8, keep_free=2 * GIB)
    (argv,) = fake(a).started
    assert argv[:3] == ["python3", "-m", "lab.host.fragmenter"]
    assert argv[argv.index("--level") + 1] == "0.8"
    assert argv[argv.index("--status") + 1] == str(tmp_path / STATUS_FILE)
    # the floor is the margin (max(2 GiB, 10 % of 24 GiB)) plus what is kept for the guests
    assert int(argv[argv.index("--floor") + 1]) == int(0.1 * 24 * GIB) + 2 * GIB
    assert int(argv[argv.index("--budget") + 1]) == 21 * GIB - int(0.1 * 24 * GIB) - 2 * GIB
    assert aged.pid == 4243 and aged.index == pytest.approx(0.81)
    assert aged.index_before == pytest.approx(unusable_index(BUDDYINFO))
    assert (aged.held_bytes, aged.peak_bytes) == (3 * GIB, 7 * GIB)
    (detail,) = recorded(tmp_path)
    assert (detail["pid"], detail["level"], detail["held_bytes"]) == (4243, 0.8, 3 * GIB)
    assert a.state().running and a.state().level == 0.8

    undone = a.undo()
    assert undone is not None and (undone.pid, undone.held_bytes) == (4243, 3 * GIB)
    assert undone.was_running and fake(a).signals == [(4243, False)]
    assert recorded(tmp_path) == [] and not (tmp_path / AGING_FILE).exists()
    assert a.state().pid is None


def test_undo_twice_says_there_is_nothing_to_undo(tmp_path: Path) -> None:
    a = ager(tmp_path)
    a.age(0.5, keep_free=0)
    assert a.undo() is not None
    assert a.undo() is None
    assert fake(a).signals == [(4243, False)]  # stopped once


def test_the_command_says_nothing_to_undo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ctx = Context(config=Config(state_dir=str(tmp_path)))
    assert unage(ctx) is None
    from lab.cli import main

    (tmp_path / "lab.toml").write_text(f'state_dir = "{tmp_path}"\n')
    code = main(["--config", str(tmp_path / "lab.toml"), "host", "age", "--undo"])
    assert code == 0
    assert "nothing to undo" in capsys.readouterr().err


@pytest.mark.parametrize("level", [-0.01, 1.001, 2.0, math.nan])
def test_a_level_outside_0_to_1_is_refused_before_anything(tmp_path: Path, level: float) -> None:
    a = ager(tmp_path)
    with pytest.raises(UsageError, match=r"outside \[0, 1.0\]") as raised:
        a.age(level, keep_free=0)
    assert "--level 0.8" in str(raised.value)
    assert fake(a).started == [] and a.host.commands == [] and recorded(tmp_path) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("level", [0.0, 1.0])
def test_the_bounds_themselves_are_accepted(tmp_path: Path, level: float) -> None:
    a = ager(tmp_path)
    aged = a.age(level, keep_free=0)
    assert aged.pid is None if level == 0.0 else aged.pid == 4243  # 0: reached already


def test_not_enough_free_memory_is_refused_before_anything_is_touched(tmp_path: Path) -> None:
    # 6 GiB available, 2.4 GiB margin, 3.5 GiB for the guests: 0.1 GiB usable, and the
    # fragmenter maps one batch of 2 MiB blocks (0.5 GiB) at its peak beside what it keeps
    a = ager(tmp_path, meminfo(free_gib=18, available_gib=6))
    with pytest.raises(LabError, match="not enough free memory") as raised:
        a.age(0.8, keep_free=int(3.5 * GIB))
    assert "nothing was touched" in str(raised.value)
    assert "0.5 GiB is faulted in" in str(raised.value) and "0.1 GiB may be" in str(raised.value)
    assert fake(a).started == [] and a.host.commands == [] and recorded(tmp_path) == []  # type: ignore[attr-defined]
    assert a.age(0.8, keep_free=3 * GIB).pid is not None  # 0.6 GiB usable: room for a batch


def test_an_aged_host_is_not_aged_again_until_undone(tmp_path: Path) -> None:
    a = ager(tmp_path)
    a.age(0.5, keep_free=0)
    with pytest.raises(LabError, match="aged already") as raised:
        a.age(0.8, keep_free=0)
    assert "--undo" in str(raised.value)
    assert len(fake(a).started) == 1
    # a holder that died since is forgotten: aging again starts a new one
    fake(a).alive.clear()
    a.age(0.8, keep_free=0)
    assert [d["pid"] for d in recorded(tmp_path)] == [4244]


def test_a_fragmenter_that_fails_leaves_nothing_recorded(tmp_path: Path) -> None:
    a = ager(tmp_path, outcome="failed")
    with pytest.raises(LabError, match="could not age the host: no room left"):
        a.age(0.8, keep_free=0)
    assert recorded(tmp_path) == []


def test_ctrl_c_while_waiting_stops_the_fragmenter_and_forgets_it(tmp_path: Path) -> None:
    a = ager(tmp_path, outcome="working")
    assert isinstance(a.host, RecordingHost)
    a.host.files["/proc/sys/vm/compact_unevictable_allowed"] = "1\n"

    class Interrupting(ManualClock):
        def sleep(self, seconds: float) -> None:
            raise KeyboardInterrupt

    a.clock = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        a.age(0.8, keep_free=0)
    assert fake(a).signals and fake(a).alive == set()
    assert recorded(tmp_path) == []
    assert a.host.read_text("/proc/sys/vm/compact_unevictable_allowed") == "1\n"  # put back


def test_the_status_reads_the_index_and_the_record(tmp_path: Path) -> None:
    ctx = Context(config=Config(state_dir=str(tmp_path)))
    ctx.host = RecordingHost(files={"/proc/buddyinfo": BUDDYINFO})
    state = aging_state(ctx)
    assert state.pid is None and state.index == pytest.approx(unusable_index(BUDDYINFO))
    with pytest.raises(UsageError):
        age(ctx, AgeRequest(1.5))


def test_the_margin_is_2_gib_or_a_tenth_of_memtotal() -> None:
    assert budget(meminfo(total_gib=8, available_gib=7), 0).margin == 2 * GIB
    assert budget(meminfo(total_gib=64, available_gib=60), 0).margin == int(6.4 * GIB)
    assert budget(meminfo(total_gib=8, available_gib=3), 2 * GIB).usable == 0


def test_the_real_process_table_knows_a_fragmenter_by_its_command_line(tmp_path: Path) -> None:
    processes = Processes(Host())
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    pid = processes.start([*sleeper, "lab.host.fragmenter"], tmp_path / "log")
    other = processes.start(sleeper, tmp_path / "log")
    try:
        assert processes.running(pid)
        assert not processes.running(other)  # a pid that is no fragmenter is never stopped
        assert not processes.running(2**22 + 1)  # above pid_max: no such process
        processes.stop(pid)
        for _ in range(50):  # a zombie has no command line
            if processes.gone(pid):
                break
            time.sleep(0.1)
        assert processes.gone(pid) and not processes.running(pid)
        assert not processes.gone(other) and processes.gone(2**22 + 1)
        processes.stop(pid)  # gone already: no error
    finally:
        processes.stop(other, force=True)


def test_release_warns_that_the_host_is_still_aged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lab.cli import main

    processes = Processes(Host())
    pid = processes.start(
        [sys.executable, "-c", "import time; time.sleep(30)", "lab.host.fragmenter"], tmp_path / "l"
    )
    try:
        for _ in range(100):  # until it has exec'd: before, its command line is the parent's
            if processes.running(pid):
                break
            time.sleep(0.05)
        ChangeLog.load(tmp_path, AGING_FILE).add(KIND, pid=pid, level=0.8, held_bytes=3 * GIB)
        (tmp_path / "lab.toml").write_text(f'state_dir = "{tmp_path}"\n')
        assert main(["--config", str(tmp_path / "lab.toml"), "host", "release"]) == 0
        err = " ".join(capsys.readouterr().err.split())
        assert "nothing to release" in err
        assert f"still aged (level 0.8, fragmenter pid {pid} holding 3.00 GiB)" in err
        assert "lab host age --undo" in err
    finally:
        processes.stop(pid, force=True)


def test_undo_caps_the_per_cpu_lists_while_the_memory_goes_back(tmp_path: Path) -> None:
    a = ager(tmp_path)
    sysctl = "/proc/sys/vm/percpu_pagelist_high_fraction"
    assert isinstance(a.host, RecordingHost)
    a.host.files[sysctl] = "0\n"
    a.age(0.5, keep_free=0)
    at_stop: list[str] = []
    processes = fake(a)
    stop = processes.stop
    processes.stop = lambda pid, force=False: (at_stop.append(a.host.read_text(sysctl)),  # type: ignore[method-assign]
                                               stop(pid, force))[-1]  # fmt: skip
    a.undo()
    assert at_stop == ["100000\n"] and a.host.read_text(sysctl) == "0\n"


def zoneinfo(counts: list[int]) -> str:
    return "".join(f"    pagesets\n      count:    {c}\n      high_min: 55\n" for c in counts)


def test_undo_keeps_the_lists_capped_until_they_have_drained(tmp_path: Path) -> None:
    # seen here: a probe that exited while the host was aged left 13,600 pages on the lists,
    # one fragment of as many blocks, and the index after undo at 0.71 against 0.09 before
    a = ager(tmp_path)
    assert isinstance(a.host, RecordingHost)
    sysctl = "/proc/sys/vm/percpu_pagelist_high_fraction"
    a.host.files[sysctl] = "0\n"
    a.host.files["/proc/zoneinfo"] = zoneinfo([3476, 10152])
    a.age(0.5, keep_free=0)
    looks: list[str] = []

    class Draining(ManualClock):  # the kernel drains the capped lists a second later
        def sleep(self, seconds: float) -> None:
            looks.append(a.host.read_text(sysctl))
            a.host.files["/proc/zoneinfo"] = zoneinfo([120, 165])  # type: ignore[attr-defined]
            super().sleep(seconds)

    a.clock = Draining()
    a.undo()
    assert looks == ["100000\n"]  # waited once, with the lists capped
    assert a.host.read_text(sysctl) == "0\n"


def test_undo_compacts_once_the_fragmenter_is_gone_and_compaction_may_move_all(
    tmp_path: Path,
) -> None:
    # seen here: two guests and a short run while aged left the index at 0.86 after the
    # fragmenter stopped, each block kept from merging by a page allocated meanwhile
    a = ager(tmp_path)
    assert isinstance(a.host, RecordingHost)
    files = a.host.files
    files["/proc/sys/vm/compact_unevictable_allowed"] = "1\n"
    a.age(0.5, keep_free=0)
    seen: dict[str, object] = {}
    write = a.host.write_text

    def watch(path: str | Path, text: str) -> None:
        if str(path) == "/proc/sys/vm/compact_memory":
            seen.update(alive=set(fake(a).alive), unevictable=files[
                "/proc/sys/vm/compact_unevictable_allowed"], pcp=files.get(
                "/proc/sys/vm/percpu_pagelist_high_fraction"))  # fmt: skip
        write(path, text)

    a.host.write_text = watch  # type: ignore[method-assign]
    files["/proc/sys/vm/percpu_pagelist_high_fraction"] = "0\n"
    a.undo()
    assert files["/proc/sys/vm/compact_memory"] == "1\n"
    assert seen == {"alive": set(), "unevictable": "1\n", "pcp": "100000\n"}


def test_undo_waits_for_the_lists_a_bounded_time(tmp_path: Path) -> None:
    a = ager(tmp_path)
    assert isinstance(a.host, RecordingHost)
    a.host.files["/proc/zoneinfo"] = zoneinfo([13600])  # never drains
    a.age(0.5, keep_free=0)
    start = a.clock.monotonic()
    assert a.undo() is not None
    assert 30 <= a.clock.monotonic() - start <= 31


def test_a_fragmenter_that_fails_between_two_looks_gives_its_reason(tmp_path: Path) -> None:
    # seen on the real pair: the status read said "working", then the process was gone, and
    # the command said only that it "ended before it reached the level"
    a = ager(tmp_path, outcome="failed")
    processes = fake(a)
    status = str(tmp_path / STATUS_FILE)
    written: dict[str, str] = {}
    start = processes.start

    def start_working(argv: list[str], log: Path) -> int:
        pid = start(argv, log)
        written["failed"] = processes.files[status]
        processes.files[status] = written["failed"].replace('"failed"', '"working"')
        return pid

    def running(pid: int) -> bool:  # it writes its end and exits as it is looked at
        processes.files[status] = written["failed"]
        return False

    processes.start, processes.running = start_working, running  # type: ignore[method-assign]
    with pytest.raises(LabError, match="could not age the host: no room left"):
        a.age(0.8, keep_free=0)


def test_the_holes_are_kept_from_compaction_while_aged_and_given_back_on_undo(
    tmp_path: Path,
) -> None:
    # on the real pair, THP faults compacted the fragmenter's mlocked pages away: the thp
    # twin's huge page share on a host aged to 0.8 was the fresh host's
    a = ager(tmp_path)
    assert isinstance(a.host, RecordingHost)
    sysctl = "/proc/sys/vm/compact_unevictable_allowed"
    a.host.files[sysctl] = "1\n"
    at_start: list[str] = []
    processes = fake(a)
    start = processes.start
    processes.start = lambda argv, log: (at_start.append(a.host.read_text(sysctl)),  # type: ignore[method-assign]
                                         start(argv, log))[-1]  # fmt: skip
    a.age(0.8, keep_free=0)
    # set before the fragmenter starts: kcompactd gathered its pages while it worked, and
    # level 1 took 1,111 batches holding 1.1 GiB on the real host
    assert at_start == ["0\n"] and a.host.read_text(sysctl) == "0\n"
    (detail,) = recorded(tmp_path)
    assert detail["unevictable_before"] == "1"  # kept with the change, so undo survives a restart
    a.undo()
    assert a.host.read_text(sysctl) == "1\n"


def test_a_host_without_the_setting_is_aged_all_the_same(tmp_path: Path) -> None:
    a = ager(tmp_path)  # no compact_unevictable_allowed: a kernel without compaction
    aged = a.age(0.8, keep_free=0)
    assert aged.pid is not None and "unevictable_before" not in recorded(tmp_path)[0]
    assert a.undo() is not None


def test_a_fragmenter_whose_command_line_reads_empty_is_still_running(tmp_path: Path) -> None:
    # seen on the real pair: read while the fragmenter unmapped gigabytes, its cmdline was
    # empty; the lab took it for ended ("ended before it reached the level") and, stopping
    # only what runs, left it holding 8 GiB with nothing recorded
    proc = tmp_path / "proc"
    (proc / "77").mkdir(parents=True)
    (proc / "77" / "cmdline").write_text("")
    (proc / "77" / "stat").write_text("77 (python3) S 1 77 77 0 -1")
    processes = Processes(Host(), proc)
    assert processes.running(77)
    (proc / "77" / "stat").write_text("77 (python3) Z 1 77 77 0 -1")
    assert not processes.running(77)  # a zombie: ended
