"""The runner's command line, as the controller calls it in a guest::

    python3 runner-HASH.pyz start  --dir DIR --run-key KEY --spec SPEC.json [--foreground]
    python3 runner-HASH.pyz step   --dir DIR --run-key KEY --spec SPEC.json
    python3 runner-HASH.pyz status --dir DIR --run-key KEY
    python3 runner-HASH.pyz stop   --dir DIR --run-key KEY [--timeout S]

Each prints one JSON object on stdout, except ``step``, which stays in the foreground and
answers a line per line it is given (:mod:`lab.inguest.stepper`). Exit status 2: a bad spec
or command line; 1: an operating-system error (the message says which file).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.inguest.child import boot_id
from lab.inguest.daemon import detach, emit, lock_state, log, take_lock
from lab.inguest.journal import TERMINAL_EVENTS, JournalEntry, JournalError, parse_journal_line
from lab.inguest.runfiles import KEY, RunFiles
from lab.inguest.runner import Runner
from lab.inguest.spec import SpecError, parse_spec
from lab.inguest.stepper import Steps
from lab.parsers import tools

STATUS_TAIL = 256 * 1024  # bytes of the journal's end that status reads


def cmd_start(files: RunFiles, args: argparse.Namespace) -> int:
    runner = Runner(files, parse_spec(_read_spec(args.spec), tools.parser_names()), log)
    running, pid = lock_state(files)
    if running:
        emit(started=False, running=True, pid=pid, run_key=files.key)
        return 0

    def body() -> int:
        log(f"run {files.key}: {runner.spec.start_iteration}..{runner.spec.end_iteration}")
        runner.children.install_signals()
        code = runner.serve()
        log(f"run {files.key}: finished with status {code}")
        return code

    if not args.foreground:
        detach(files, body)  # the parent and the runner both end in it
    if not take_lock(files):
        emit(started=False, running=True, pid=lock_state(files)[1], run_key=files.key)
        return 0
    return body()


def cmd_step(files: RunFiles, args: argparse.Namespace) -> int:
    """The runner in the foreground, one iteration per ``go N`` line on standard input."""
    runner = Runner(files, parse_spec(_read_spec(args.spec), tools.parser_names()), log)
    if not take_lock(files):  # a runner of this key is at work (one a dead controller left)
        emit(busy=True, pid=lock_state(files)[1], run_key=files.key)
        return 0
    # The log, not the channel, gets what the runner says to itself: nobody reads the
    # channel's stderr, and a full one would block the runner.
    output = os.open(files.path("log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(output, 2)
    os.close(output)
    log(f"run {files.key}: steps from {runner.spec.start_iteration}")
    runner.children.install_signals()
    stdout = sys.stdout.buffer

    def write(line: bytes) -> None:
        stdout.write(line)
        stdout.flush()

    code = Steps(runner, sys.stdin.fileno(), write).serve()
    log(f"run {files.key}: steps finished with status {code}")
    return code


def _read_spec(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise SpecError(f"cannot read the spec {path}: {err}") from None


def cmd_status(files: RunFiles, args: argparse.Namespace) -> int:
    """Running or not, and the state the end of the journal shows."""
    running, pid = lock_state(files)
    state: dict[str, Any] = dict(
        run_key=files.key, running=running, pid=pid, boot_id=boot_id(), journal_bytes=0,
        last_iteration=None, last_attempt=None, last_ok=None, last_event=None, in_flight=None,
    )  # fmt: skip
    with contextlib.suppress(FileNotFoundError), open(files.path("journal"), "rb") as stream:
        state["journal_bytes"] = size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - STATUS_TAIL))
        data = stream.read()
        lines = data[: data.rfind(b"\n") + 1].decode(errors="replace").split("\n")
        for line in lines[1:] if size > len(data) else lines:  # the first line may be cut
            with contextlib.suppress(JournalError):
                record = parse_journal_line(line + "\n")
                if isinstance(record, JournalEntry):
                    state.update(last_iteration=record.iteration, in_flight=None,
                                 last_attempt=record.attempt, last_ok=record.ok)  # fmt: skip
                elif record is None or record.event == "synced":
                    continue
                elif record.event == "begin":
                    state["in_flight"] = {
                        k: record.fields.get(k) for k in ("iteration", "attempt", "time")
                    }
                else:
                    state["last_event"] = record.event
    if not running:
        state["in_flight"] = None
    state["finished"] = not running and state["last_event"] in TERMINAL_EVENTS
    emit(**state)
    return 0


def cmd_stop(files: RunFiles, args: argparse.Namespace) -> int:
    """SIGTERM the runner; it records the attempt in progress as failed ("stopped")."""
    running, pid = lock_state(files)
    if not running or pid is None:
        emit(stopped=False, running=running, pid=pid, run_key=files.key)
        return 1 if running else 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while lock_state(files)[0]:
        if time.monotonic() > deadline:
            emit(stopped=False, running=True, pid=pid, run_key=files.key)
            return 1
        time.sleep(0.02)
    emit(stopped=True, running=False, pid=pid, run_key=files.key)
    return 0


COMMANDS: dict[str, Callable[[RunFiles, argparse.Namespace], int]] = {
    "start": cmd_start,
    "step": cmd_step,
    "status": cmd_status,
    "stop": cmd_stop,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="runner", description="The lab's in-guest runner.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        command = sub.add_parser(name)
        command.add_argument("--dir", required=True, help="the run's directory in the guest")
        command.add_argument("--run-key", required=True, help="names the journal and other files")
        if name in ("start", "step"):
            command.add_argument("--spec", required=True, help="the SPEC.json file")
        if name == "start":
            command.add_argument("--foreground", action="store_true", help="do not detach")
        if name == "stop":
            command.add_argument("--timeout", type=float, default=60.0, help="seconds to wait")
    args = parser.parse_args(argv)
    try:
        if not KEY.fullmatch(args.run_key):
            raise SpecError(f"run key {args.run_key!r} must match {KEY.pattern}")
        files = RunFiles(Path(args.dir).resolve(), args.run_key)
        files.dir.mkdir(parents=True, exist_ok=True)
        return COMMANDS[args.command](files, args)
    except SpecError as err:
        print(f"runner: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"runner: error: {err}", file=sys.stderr)
        return 1
