"""A guest whose in-guest runner is simulated in memory, for tests of the controller's
bookkeeping over many iterations (thousands, where the real runner would take minutes).

The journal lines are the runner's format (``lab.run.journal``), written the way
``guest/runner.py`` writes them: a ``begin`` line, then the attempt's result line. The
simulated runner progresses only when the controller reads the journal: each read finds
``per_read`` more iterations done, so a test knows how far a run got without any clock.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.core.clock import Clock
from lab.core.config import Config
from lab.core.context import Context
from lab.core.hostexec import Result
from lab.guests.channel import ChannelClosed
from lab.guests.labstate import GuestRecord, LabState
from lab.guests.ssh import GuestAddress, GuestShell
from lab.run.controller import Controller, RunPlan
from lab.store import Store
from tests.unit.test_controller import ShellWorkload

NAMES = ("lab-thp", "lab-shp1g")


def wall_of(name: str, iteration: int) -> float:
    """The wall time the simulated runner reports: tells guests and iterations apart."""
    return round(iteration / 1000 + (0.5 if name == "lab-thp" else 0.25), 6)


class FakeRunnerGuest(GuestShell):
    """Answers the controller's runner commands and journal reads like a guest would."""

    def __init__(self, name: str, per_read: int = 5, tail_chars: int = 400) -> None:
        self.address = GuestAddress(name, "127.0.0.1", "", "lab", Path("/dev/null"))
        self.name = name
        self.per_read = per_read
        self.tail = "t" * tail_chars  # output_tail: a real runner keeps up to 2000 chars
        self.journal = bytearray()
        self.running = False
        self.todo: list[int] = []
        self.attempt_base = 1
        self.spec: dict[str, Any] = {}
        self.reads = 0
        self.written = 0  # journal bytes ever written
        self.synced_at = 0  # self.written at the last synced line
        self.bytes_read = 0  # journal bytes sent to the controller
        self.starts = 0
        self.steps = 0  # steps a stepped runner was given
        self.stepped = False  # the runner runs stepped (open_channel), not detached
        self.boot = "boot-1"  # the guest's boot id

    # -- the simulated runner ------------------------------------------------------------

    def _line(self, record: dict[str, Any]) -> None:
        line = (json.dumps({"v": 1, **record}, separators=(",", ":")) + "\n").encode()
        self.journal += line
        self.written += len(line)

    def _result(self, iteration: int, attempt: int) -> str:
        """Journal one ok attempt of ``iteration`` (its ``begin`` line first); its line."""
        self._line({"event": "begin", "iteration": iteration, "attempt": attempt,
                    "time": 1.0e9 + iteration, "boot_id": self.boot})  # fmt: skip
        wall = wall_of(self.name, iteration)
        record = {
            "iteration": iteration, "attempt": attempt, "ok": True,
            "started": 1.0e9 + iteration, "ended": 1.0e9 + iteration + wall, "wall": wall,
            "user": 0.001, "sys": 0.002, "exit_status": 0, "boot_id": self.boot,
            "metrics": {"wall_s": wall}, "error": None, "output_tail": self.tail,
        }  # fmt: skip
        self._line(record)
        return json.dumps({"v": 1, **record})

    def advance(self, count: int) -> None:
        """Do up to ``count`` iterations of the started range; journal ``done`` at its end.
        A stepped runner does nothing by itself."""
        if self.stepped:
            return
        while self.running and count > 0 and self.todo:
            iteration = self.todo.pop(0)
            self._result(iteration, self.attempt_base)
            count -= 1
            if iteration % 10 == 0:  # a real runner fsyncs every half second or 256 KiB
                self._sync()
        if self.running and not self.todo:
            self._line({"event": "done", "time": 2.0e9, "ok": 0, "failed": 0})
            self._sync()
            self.running = False

    def _sync(self) -> None:
        self._line({"event": "synced", "time": 1.5e9})
        self.synced_at = self.written

    def finish(self) -> None:
        """The runner goes on to the end of its range (while no controller watches)."""
        self.advance(len(self.todo))

    # -- GuestShell ------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        timeout: float | None = None,
        sudo: bool = False,
    ) -> Result:
        args = list(argv)
        out = ""
        if args[:2] == ["python3", "-c"]:  # the spec file, written from an argument
            self.spec = json.loads(args[4])
        elif args[0] == "python3" and args[2] == "start":
            done = {json.loads(line)["iteration"] for line in self._results()}
            first, last = self.spec["start_iteration"], self.spec["end_iteration"]
            self.todo = [i for i in range(first, last + 1) if i not in done]
            self.attempt_base = self.spec["attempt_base"]
            self.running, self.starts, self.stepped = True, self.starts + 1, False
            self._line({"event": "start", "time": 1.0e9, "todo": len(self.todo)})
            out = json.dumps({"started": True, "running": True})
        elif args[0] == "python3" and args[2] == "status":
            out = json.dumps({"running": self.running})
        elif args[0] == "python3" and args[2] == "stop":
            self.running = False
            out = json.dumps({"stopped": True})
        return Result(tuple(args), 0, out, "")

    def on_step(self) -> None:
        """A line sent to the stepped runner (tests make a guest vanish here)."""

    def open_channel(self, argv: Sequence[str]) -> FakeChannel:
        """The stepped runner (``runner step``): an iteration per ``go N``, at once."""
        assert list(argv)[2] == "step", argv
        self.attempt_base = self.spec["attempt_base"]
        self.todo, self.running, self.starts = [], True, self.starts + 1
        self.stepped = True
        self._line({"event": "start", "time": 1.0e9, "todo": 0})
        return FakeChannel(self)

    def read_bytes(self, remote: str, offset: int, size: int) -> bytes | None:
        """A journal read: the simulated runner moves on ``per_read`` iterations first, and
        then fsyncs them (a ``synced`` line, as a runner does once per group)."""
        if remote.endswith(".pyz"):  # the runner's zipapp: always there, whole
            return bytes(size)
        if not remote.endswith(".journal"):
            return b""
        self.reads += 1
        self.advance(self.per_read)
        if not self.journal and not self.starts:
            return None
        if self.written > self.synced_at:
            self._sync()
        data = bytes(self.journal[offset : offset + size])
        self.bytes_read += len(data)
        return data

    def _results(self) -> list[str]:
        lines = self.journal.decode().splitlines()
        return [line for line in lines if '"ok":' in line and '"event"' not in line]

    def put(self, local: Path, remote: str) -> None:
        pass

    def forget(self, remote: str) -> None:
        pass

    def put_bytes(self, data: bytes, remote: str) -> None:
        pass

    def close(self) -> None:
        pass


class FakeChannel:
    """The channel to a simulated stepped runner: each ``go N`` is answered at once."""

    def __init__(self, guest: FakeRunnerGuest) -> None:
        self.guest, self.closed = guest, False
        self.answers = [json.dumps({"ready": True, "pid": 1})]
        self.read_fd, write_fd = os.pipe()  # always readable: a wait never sleeps
        os.write(write_fd, b"x")
        os.close(write_fd)

    def send_line(self, line: str) -> None:
        self.guest.on_step()
        if self.closed or not self.guest.running:
            raise ChannelClosed(f"{self.guest.name}: the runner's channel closed")
        word, _, number = line.partition(" ")
        if word == "go":
            done = {json.loads(r)["iteration"] for r in self.guest._results()}
            iteration = int(number)
            self.guest.steps += 1
            if iteration in done:
                self.answers.append(json.dumps({"skipped": iteration}))
            else:
                self.answers.append(self.guest._result(iteration, self.guest.attempt_base))
        elif word == "end":
            self.guest.running = False

    def lines(self) -> list[str]:
        answers, self.answers = self.answers, []
        if not self.guest.running:
            self.closed = True
        return answers

    def fileno(self) -> int:
        return self.read_fd

    def close(self) -> None:
        self.closed = True
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1


class NoSleep(Clock):
    def sleep(self, seconds: float) -> None:
        pass


def make_controller(
    tmp_path: Path, guests: dict[str, FakeRunnerGuest], n: int, cache_kib: int | None = None,
    schedule: str = "concurrent", clock: Clock | None = None, poll_interval: float = 0.0,
    reboot_every: int | None = None,
) -> tuple[Controller, Store]:  # fmt: skip
    """``lab run probe --n N`` on the fake guests: the same arguments give the same run
    (``cache_kib``: the store's page cache, as ``Store.open`` takes it)."""
    ctx = Context(config=Config(state_dir=str(tmp_path / "state")), clock=clock or NoSleep())
    ctx.__dict__["libvirt"] = None  # no hypervisor: domain XML is optional context
    records = []
    for i, name in enumerate(guests):
        mac = f"52:54:00:00:00:0{i}"
        variant = name.removeprefix("lab-")
        facts: dict[str, object] = {"cpus": 1}
        records.append(
            GuestRecord(name, variant, mac, str(tmp_path), [i], 0, "", "127.0.0.1", facts)
        )
    state = LabState(records, "qemu", "test", "img", "h", "lab", "127.0.0.1", [0], 0.0)
    store = Store.open(tmp_path / "lab.db", cache_kib=cache_kib)
    plan = RunPlan("s", ShellWorkload(["true"]), {}, n, schedule, 10,
                   poll_interval=poll_interval, runner_dir="/fake/runner",
                   reboot_every=reboot_every)  # fmt: skip
    controller = Controller(ctx, store, state, records, plan, lambda r: guests[r.name])
    return controller, store
