"""A balanced incomplete block arrangement of cells two at a time, for a host with two slots.

A host that runs two guests at once runs a block of two cells; a study of v cells cannot run
them all together, so it runs every pair of cells, each pair in ``replicates`` blocks (a BIBD
with v treatments, block size k = 2, b = replicates·v(v−1)/2 blocks, each cell in
r = replicates·(v−1) of them, every pair together λ = replicates times). Within a block the
two cells' order (which slot, which starts first) is drawn at random, and so is the order of
the blocks, from ``seed``, so a slot or a drift over time does not fall on one cell. Fitting
the effects with the block as an additive fixed effect (lab.stats.effects, ``blocks=``)
compares cells within blocks, so what differs between blocks (a boot, the host's state)
drops out.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Sequence

from lab.core.errors import UsageError


def pair_blocks(cells: Sequence[str], *, seed: int, replicates: int = 1) -> list[tuple[str, str]]:
    """Every pair of ``cells`` ``replicates`` times, as blocks in random order, each block's
    two cells in random order."""
    if len(set(cells)) != len(cells) or len(cells) < 2:
        raise UsageError(
            f"pair blocks need two or more distinct cells, not {', '.join(cells) or 'none'}",
            hint="Name each cell of the design once",
        )
    if replicates < 1:
        raise UsageError(
            f"replicates is {replicates}", hint="Run every pair of cells at least once"
        )
    rng = random.Random(seed)
    blocks: list[tuple[str, str]] = []
    for _ in range(replicates):
        for a, b in itertools.combinations(cells, 2):
            blocks.append((a, b) if rng.random() < 0.5 else (b, a))
    rng.shuffle(blocks)
    return blocks


def pair_counts(blocks: Sequence[tuple[str, str]]) -> Counter[frozenset[str]]:
    """How often each pair of cells shares a block (all equal in a balanced arrangement)."""
    return Counter(frozenset(block) for block in blocks)
