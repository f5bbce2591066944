"""A soak in seconds: `lab run`'s controller on simulated guests, as a process of its own.

``python -m tests.unit.soakdriver DIR N [--leak]`` runs the real controller for N iterations
of each of two simulated twins into the store DIR/lab.db (opened as `lab run` opens it),
pausing a little between polls so that a watcher (``bench/soak.py``'s) can look at the
process as it would at a real run. The simulated guests keep only the part of their
journals the controller has not read yet, so the process grows only by what the
controller keeps.

``--leak`` injects the leak the soak must catch: the controller keeps every journal line it
parses in a list (one per attempt), as a careless change to ``split_journal`` would.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import lab.run.ingest
from lab.inguest.journal import JournalEntry, JournalEvent
from lab.run.controller import STORE_CACHE_KIB
from tests.unit.fakeguest import NAMES, FakeRunnerGuest, make_controller

KEPT: list[str] = []


class StreamingGuest(FakeRunnerGuest):
    """A simulated guest that forgets the journal bytes the controller has read."""

    def __init__(self, name: str, per_read: int) -> None:
        super().__init__(name, per_read=per_read, tail_chars=0)
        self.dropped = 0  # journal bytes before self.journal[0]

    def read_bytes(self, remote: str, offset: int, size: int) -> bytes | None:
        if not remote.endswith(".journal"):
            return super().read_bytes(remote, offset, size)
        del self.journal[: offset - self.dropped]
        self.dropped = offset
        return super().read_bytes(remote, 0, size)


def leaky_split(data: bytes, where: str) -> tuple[list[JournalEntry | JournalEvent], int]:
    parsed, used = ORIGINAL_SPLIT(data, where)
    KEPT.extend(line for line in data[:used].decode().split("\n") if '"ok":' in line)
    return parsed, used


ORIGINAL_SPLIT = lab.run.ingest.split_journal


def main(argv: list[str]) -> int:
    folder, n, leak = Path(argv[0]), int(argv[1]), "--leak" in argv[2:]
    if leak:
        lab.run.ingest.split_journal = leaky_split
    guests = {name: StreamingGuest(name, per_read=2) for name in NAMES}
    controller, store = make_controller(folder, guests, n, cache_kib=STORE_CACHE_KIB)
    controller.on_update = lambda c: time.sleep(0.003)  # a watcher's looks see it run
    controller.run()
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
