"""Mirror (foldover) blocks: each cell with its opposite, even-order interactions confounded
with the blocks, every other term measured within them. Checked by the ±1 columns themselves
and by an ordinary least squares fit (numpy), not by the function's own account."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lab.core.errors import UsageError
from lab.stats.pairblocks import mirror_blocks

LEVELS = {"a": ("lo", "hi"), "b": ("off", "on"), "c": ("x", "y"), "d": ("p", "q")}


def code(cell: dict[str, str], factor: str) -> int:
    return -1 if cell[factor] == LEVELS[factor][0] else 1


@pytest.mark.parametrize("k", [2, 3, 4])
def test_every_cell_runs_once_beside_its_mirror(k: int) -> None:
    levels = dict(list(LEVELS.items())[:k])
    blocks = mirror_blocks(levels, seed=7)
    assert len(blocks) == 2 ** (k - 1)
    cells = [tuple(sorted(c.items())) for block in blocks for c in block]
    assert sorted(cells) == sorted(
        tuple(sorted(zip(levels, combo, strict=True)))
        for combo in itertools.product(*levels.values())
    )
    for x, y in blocks:
        assert all(x[f] != y[f] for f in levels)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_even_words_are_the_blocks_and_odd_words_are_measured_within_them(k: int) -> None:
    levels = dict(list(LEVELS.items())[:k])
    blocks = mirror_blocks(levels, seed=3)
    for order in range(1, k + 1):
        for word in itertools.combinations(levels, order):
            within = [
                int(np.prod([code(x, f) for f in word])) - int(np.prod([code(y, f) for f in word]))
                for x, y in blocks
            ]
            if order % 2 == 0:
                assert within == [0] * len(blocks), word  # the same in both cells: the block's
            else:
                assert all(abs(d) == 2 for d in within), word


def test_least_squares_with_block_effects_recovers_the_main_effects_of_a_2x2() -> None:
    levels = {"a": LEVELS["a"], "b": LEVELS["b"]}
    blocks = mirror_blocks(levels, seed=11)
    rows, y = [], []
    truth = {"a": 0.30, "b": -0.12, "ab": 0.05}
    for i, block in enumerate(blocks):
        for cell in block:
            xa, xb = code(cell, "a"), code(cell, "b")
            block_dummies = [1.0 if j == i else 0.0 for j in range(len(blocks))]
            rows.append([*block_dummies, xa, xb, xa * xb])
            y.append(5.0 + 2.0 * i + truth["a"] * xa + truth["b"] * xb + truth["ab"] * xa * xb)
    x = np.array(rows)
    assert np.linalg.matrix_rank(x) == x.shape[1] - 1  # AB is the blocks' contrast
    beta, *_ = np.linalg.lstsq(x[:, :-1], np.array(y) - truth["ab"] * x[:, -1], rcond=None)
    assert beta[-2:] == pytest.approx([truth["a"], truth["b"]])  # block shifts drop out


def test_the_order_is_the_seed_s_and_changes_with_it() -> None:
    assert mirror_blocks(LEVELS, seed=1) == mirror_blocks(LEVELS, seed=1)
    orders = {tuple(tuple(b[0].values()) for b in mirror_blocks(LEVELS, seed=s)) for s in range(6)}
    assert len(orders) > 1


@pytest.mark.parametrize(
    "levels",
    [{"a": ("lo", "hi")}, {"a": ("lo", "hi"), "b": ("x", "x")}],
)
def test_one_factor_or_a_repeated_level_is_refused(levels: dict[str, tuple[str, str]]) -> None:
    with pytest.raises(UsageError, match="two or more factors"):
        mirror_blocks(levels, seed=1)
