"""Which iterations of a target this import made, and the lines its later samples add to them.

A file in any order but the iterations' (grouped by metric, shuffled) gives most samples of
an iteration after the batch that made it was stored. Merged with the general path
(:meth:`lab.store.bulk.Bulk.merge`) each costs lookups, and its line a rewrite of the
iteration's source. What this import made is known without asking the store: a bit per
iteration number above those stored before it (:class:`Made`). A later sample of such an
iteration is inserted as it is, its clash with a sample stored already told by the insert
itself (``INSERT OR IGNORE ... RETURNING``), and its line kept (:class:`Lines`) until the input
ends, when every iteration's source gets its lines in one update.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from itertools import chain, groupby

import numpy as np

MAX_OFFSET = 1 << 26  # iteration numbers a target's bits cover above those stored (8 MiB)


class Made:
    """The iteration numbers above ``first`` (the highest stored before the import) that this
    import made, a bit each; a number past :data:`MAX_OFFSET` above it is not known (its
    samples take the general path)."""

    __slots__ = ("bits", "first")

    def __init__(self, first: int) -> None:
        self.first = first
        self.bits = bytearray()

    def state(self, number: int) -> bool | None:
        """True: made by this import; False: new (above those stored before, not made yet);
        None: not known here (stored before, perhaps, or too far above)."""
        offset = number - self.first - 1
        if offset < 0 or offset >= MAX_OFFSET:
            return None
        byte = offset >> 3
        bits = self.bits
        return byte < len(bits) and bool(bits[byte] >> (offset & 7) & 1)

    def add(self, number: int) -> None:
        offset = number - self.first - 1
        if 0 <= offset < MAX_OFFSET:
            byte = offset >> 3
            bits = self.bits
            if byte >= len(bits):
                bits.extend(bytes(max(byte + 1 - len(bits), len(bits) // 2)))
            bits[byte] |= 1 << (offset & 7)


class Lines:
    """Lines of an input to join to the sources of iterations it did not make in their batch,
    as (iteration, line) pairs per (run id, guest id): 16 bytes a line."""

    __slots__ = ("count", "pairs")

    def __init__(self) -> None:
        self.pairs: dict[tuple[int, int], array[int]] = {}
        self.count = 0

    def extend(self, ids: tuple[int, int], numbers: list[int], lines: list[int]) -> None:
        """Each (number, line) of ``numbers`` and ``lines``, of the guest ``ids``."""
        pairs = self.pairs.get(ids)
        if pairs is None:
            pairs = self.pairs[ids] = array("q")
        pairs.extend(chain.from_iterable(zip(numbers, lines, strict=True)))
        self.count += len(numbers)

    def updates(self) -> Iterator[tuple[str, int, int, int]]:
        """(",line,line...", run id, guest id, iteration) of each iteration, in key order, the
        lines in the file's order, made as they are taken (a guest's at a time in memory);
        the pairs are forgotten."""
        held, self.pairs, self.count = self.pairs, {}, 0
        for ids in sorted(held):
            table = np.frombuffer(held.pop(ids), dtype=np.int64).reshape(-1, 2)
            order = np.argsort(table[:, 0], kind="stable")
            numbers = table[order, 0].tolist()
            lines = table[order, 1].tolist()
            del table, order
            at = 0
            for number, group in groupby(numbers):
                count = sum(1 for _ in group)
                yield ("," + ",".join(map(str, lines[at : at + count])), *ids, number)
                at += count
