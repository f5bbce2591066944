"""Series parts (one run's samples of one metric on one guest, by iteration) read as raw
frames, here or in child processes that read them while the caller does other work.

Reading a million samples through Python's sqlite3 costs 0.3 s of CPU (a tuple and a float
per row; SQLite itself takes a third of it), and ``lab compare`` of 2 × 1M samples also
spends 0.6 s importing scipy: children reading the parts meanwhile, one per CPU, take the
read off the command's critical path. A child is this file run as a script by a fresh
interpreter (``python -I -S``): it imports the standard library only, so it starts in 20 ms
and shares no SQLite connection or lock state with its parent (a forked one would inherit
both, which SQLite forbids).

A child reads the parts named on its standard input (a JSON list of [run id, guest id,
metric]) with its own read-only connection (the URI is its argument) and writes one frame
per part, in that order, to its standard output: a header of four native int64 (samples,
first iteration, last iteration, layout), then the samples as native float64. Layout
``RANGE``: the iterations are first … last, without gaps, and only the values follow;
layout ``PAIRS``: (iteration, value) pairs follow. The parent checks every frame; a child
that fails or writes a short frame gets its parts read again by the parent, which reports
the error if there is one.

Standard library only: this module is run outside the package.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import struct
import subprocess
import sys
from array import array
from collections.abc import Sequence

Part = tuple[int, int, str]  # run id, guest id, metric
HEADER = struct.Struct("=qqqq")  # samples, first iteration, last iteration, layout
RANGE, PAIRS = 0, 1
_PR_SET_PDEATHSIG = 1  # prctl(2)

# One part's samples: a range of the sample_series index, read without the table.
PART_WHERE = " FROM sample INDEXED BY sample_series WHERE run_id=? AND metric=? AND guest_id=?"


def first_last(
    conn: sqlite3.Connection, run_id: int, guest_id: int, metric: str
) -> tuple[int, int] | None:
    """A part's first and last iteration, None where it has no samples: one index lookup
    each (SQLite looks a MIN or a MAX up only when it is a statement's one aggregate)."""
    key = (run_id, metric, guest_id)
    first = conn.execute("SELECT MIN(iteration)" + PART_WHERE, key).fetchone()[0]
    if first is None:
        return None
    last = conn.execute("SELECT MAX(iteration)" + PART_WHERE, key).fetchone()[0]
    return int(first), int(last)


def read_frame(conn: sqlite3.Connection, run_id: int, guest_id: int, metric: str) -> bytes:
    """One part's frame. The values come from one index-only scan, chained straight into an
    array (no Python expression per sample). Without gaps (the first and last iteration are
    one index lookup each; the values tell how many there are) the iterations are a range;
    a part with gaps is read again as (iteration, value) pairs.

    Its statements read one snapshot (a read transaction, unless the caller has one open):
    a run recording meanwhile could otherwise add as many samples after the first and last
    iteration were read as the part had gaps, and its values would be given the iterations
    of a range they are not (compare would pair them and find their boots by them)."""
    if conn.in_transaction:
        return _read_frame(conn, run_id, guest_id, metric)
    conn.execute("BEGIN")
    try:
        return _read_frame(conn, run_id, guest_id, metric)
    finally:
        if conn.in_transaction:  # a read: nothing to keep or undo
            conn.execute("COMMIT")


def _read_frame(conn: sqlite3.Connection, run_id: int, guest_id: int, metric: str) -> bytes:
    span = first_last(conn, run_id, guest_id, metric)
    if span is None:
        return HEADER.pack(0, 0, -1, RANGE)
    first, last = span
    key = (run_id, metric, guest_id)
    values = array("d", itertools.chain.from_iterable(
        conn.execute("SELECT value" + PART_WHERE + " ORDER BY iteration", key)
    ))  # fmt: skip
    if len(values) and last - first + 1 == len(values):  # no gaps, as after a complete run
        return HEADER.pack(len(values), first, last, RANGE) + values.tobytes()
    pairs = array("d", itertools.chain.from_iterable(
        conn.execute("SELECT iteration, value" + PART_WHERE + " ORDER BY iteration", key)
    ))  # fmt: skip
    return HEADER.pack(len(pairs) // 2, first, last, PAIRS) + pairs.tobytes()


def frame_size(header: bytes) -> int:
    """The bytes a frame's samples take after its header."""
    samples, _, _, layout = HEADER.unpack(header)
    return samples * 8 * (2 if layout == PAIRS else 1)


class Children:
    """Child processes reading parts: :meth:`frames` waits for them; :meth:`close` (or the
    end of a ``with`` block) stops any still running."""

    def __init__(self, uri: str, shares: Sequence[Sequence[Part]]) -> None:
        self.shares = [[(int(r), int(g), str(m)) for r, g, m in share] for share in shares if share]
        self.procs: list[subprocess.Popen[bytes] | None] = []
        for share in self.shares:
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", os.path.abspath(__file__), uri, str(os.getpid())],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                )  # fmt: skip
            except OSError:  # no interpreter to start: the parent reads this share
                self.procs.append(None)
                continue
            assert proc.stdin is not None
            try:
                proc.stdin.write(json.dumps(share).encode())
                proc.stdin.close()
            except OSError:  # it died at once; frames() reads its share here
                pass
            self.procs.append(proc)

    def frames(self, conn: sqlite3.Connection) -> dict[Part, bytes | memoryview]:
        """Every part's frame: from its child, or read here with ``conn`` where the child
        failed (an SQLite error is then raised here, as a read here would raise it)."""
        found: dict[Part, bytes | memoryview] = {}
        for share, proc in zip(self.shares, self.procs, strict=True):
            got: Sequence[bytes | memoryview] | None = None
            if proc is not None and proc.stdout is not None:
                data = proc.stdout.read()
                if proc.wait() == 0:
                    got = _split(data, len(share))
            if got is None:
                got = [read_frame(conn, *part) for part in share]
            found.update(zip(share, got, strict=True))
        return found

    def close(self) -> None:
        for proc in self.procs:
            if proc is not None and proc.poll() is None:
                proc.kill()
            if proc is not None:
                proc.wait()
                if proc.stdout:
                    proc.stdout.close()

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _split(data: bytes, count: int) -> list[memoryview] | None:
    """``count`` whole frames that are all of ``data``, or None (a short or long output).
    The frames are views of ``data``, not copies of it (a million samples are 8 MB)."""
    view = memoryview(data)
    frames, at = [], 0
    for _ in range(count):
        if at + HEADER.size > len(data):
            return None
        end = at + HEADER.size + frame_size(data[at : at + HEADER.size])
        if end > len(data):
            return None
        frames.append(view[at:end])
        at = end
    return frames if at == len(data) else None


def shares(parts: Sequence[Part], sizes: Sequence[int], count: int) -> list[list[Part]]:
    """``parts`` dealt to ``count`` children, the largest first to the least loaded."""
    loads = [0] * count
    dealt: list[list[Part]] = [[] for _ in range(count)]
    for size, part in sorted(zip(sizes, parts, strict=True), key=lambda x: -x[0]):
        least = loads.index(min(loads))
        loads[least] += size
        dealt[least].append(part)
    return [share for share in dealt if share]


def _die_with_parent(parent: int) -> bool:
    """Have the kernel kill this child when its parent ends (Linux's PR_SET_PDEATHSIG):
    ``lab compare`` stopped by SIGTERM or SIGKILL never reaches its ``with`` block's end,
    and its children read on for seconds, up to a million samples each, for nobody. False
    where the parent (pid ``parent``) is gone already. The kernel's parent is the thread that
    started the child: a thread that ends before the frames are read costs a read there."""
    try:
        import ctypes  # here: only a child pays for it (a few ms)

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the child ends when its reads do
        pass
    return os.getppid() == parent


def main() -> int:
    """The child: the frames of the parts on standard input, from the store at argv[1],
    for the process whose pid is argv[2] (it stops if that one ends)."""
    if len(sys.argv) > 2 and not _die_with_parent(int(sys.argv[2])):
        return 1
    # Pages are read into SQLite's own small cache, not mapped (mmap_size): every page of a
    # mapping that a read touches counts in the child's resident memory, 88 bytes a sample
    # (544 MiB for 2 × 3.1M samples, more than the command itself), and
    # bench/compare_1m.py timed the two ways alike (0.95 s read, 0.99 s mapped, 2 × 1M).
    conn = sqlite3.connect(sys.argv[1], uri=True, isolation_level=None)
    frames = [read_frame(conn, int(r), int(g), str(m)) for r, g, m in json.load(sys.stdin)]
    sys.stdout.buffer.write(b"".join(frames))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
