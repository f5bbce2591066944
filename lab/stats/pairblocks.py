"""Cells two at a time, for a host with two slots: every pair of cells (a balanced incomplete
block arrangement), or each cell with its mirror (:func:`mirror_blocks`).

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
from collections.abc import Mapping, Sequence

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


def mirror_blocks(
    levels: Mapping[str, tuple[str, str]], *, seed: int
) -> list[tuple[dict[str, str], dict[str, str]]]:
    """The 2^k cells of two-level factors in 2^(k−1) blocks of two: each cell with its mirror,
    every factor at its other level (a foldover pair).

    Within a block every factor changes, so each main effect and each odd-order interaction
    is measured inside the blocks, while every even-order interaction (AB, ABCD, …) is the
    same in both cells of a block, so confounded with the blocks (Montgomery, "Design and
    Analysis of Experiments", ch. 7: a 2^k in 2^p blocks, here the p = k−1 generators AB,
    AC, …, whose group is every even word). For two factors: 2 blocks where every pair of
    cells once takes 6. The blocks' order and each block's slots are drawn from ``seed``."""
    names = list(levels)
    if len(names) < 2 or any(len(set(pair)) != 2 for pair in levels.values()):
        raise UsageError(
            "mirror blocks need two or more factors of two distinct levels each",
            hint="Cross two-level factors, or run every pair of cells (the default)",
        )
    rng = random.Random(seed)
    blocks: list[tuple[dict[str, str], dict[str, str]]] = []
    first = names[0]
    for rest in itertools.product((0, 1), repeat=len(names) - 1):
        low = {first: levels[first][0]} | {
            name: levels[name][i] for name, i in zip(names[1:], rest, strict=True)
        }
        high = {name: levels[name][1 - levels[name].index(level)] for name, level in low.items()}
        blocks.append((low, high) if rng.random() < 0.5 else (high, low))
    rng.shuffle(blocks)
    return blocks
