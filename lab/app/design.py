"""A study's factorial design: its ``[factors]`` table made into cells and the blocks they run
in (issue 41).

``[factors]`` names some of the lab's factors (``lab variants``) and the levels to cross, e.g.
``page = ["thp", "1g"]`` and ``prealloc = ["off", "on"]``. Every combination is a cell
(:mod:`lab.core.cells`); one libvirt cannot express (1 GiB pages on demand) is left out with
its reason, which leaves an incomplete factorial whose other cells still contrast what they
can. A host runs two guests at a time, so the cells run in blocks of two: every pair of cells
once (a balanced incomplete block design, each pair together λ = 1 time), the blocks in a
random order and the two cells of a block on randomly chosen CPU sets, both drawn from a seed
that is the design's own (the same file gives the same plan, so a study resumes where it
stopped). Each block is one pair brought up and every workload run on it; ``lab compare``
then fits the factors with the block as a fixed effect (:mod:`lab.app.effects`).
"""

from __future__ import annotations

import itertools
import json
import zlib
from dataclasses import dataclass

from lab.core.cells import cell_name
from lab.core.errors import ConfigError
from lab.guests.factors import FACTORS, cell_problem
from lab.stats.pairblocks import pair_blocks

MAX_CELLS = 12  # 66 blocks of two: more is a study of its own


@dataclass(frozen=True)
class Design:
    """The factors and levels crossed, the cells that can run, those left out and why, and
    the blocks (pairs of cells) in the order they run."""

    factors: tuple[tuple[str, tuple[str, ...]], ...]
    cells: tuple[str, ...]
    left_out: tuple[tuple[str, str], ...]
    blocks: tuple[tuple[str, str], ...]
    seed: int

    def lines(self) -> list[str]:
        """The design as ``lab study check`` prints it."""
        crossed = " × ".join(f"{f} ({', '.join(levels)})" for f, levels in self.factors)
        out = [f"design: {crossed}: {len(self.cells)} cells in {len(self.blocks)} blocks of 2"
               f" (every pair once, seed {self.seed})"]  # fmt: skip
        out += [f"  left out: {cell}: {why}" for cell, why in self.left_out]
        out += [f"  block {i}: {a}, {b}" for i, (a, b) in enumerate(self.blocks, 1)]
        return out


def parse_design(source: str, table: object) -> Design:
    """The :class:`Design` of a study file's ``[factors]`` table; ``source`` names the file in
    every error."""
    example = 'e.g. [factors] with page = ["thp", "1g"] and prealloc = ["off", "on"]'
    if not isinstance(table, dict) or not table:
        raise ConfigError(f"{source}: [factors] must be a table of factors and their levels",
                          hint=example)  # fmt: skip
    factors = []
    for name, levels in table.items():
        if name not in FACTORS:
            raise ConfigError(
                f"{source}: [factors]: unknown factor {name!r} (the lab's: {', '.join(FACTORS)})",
                hint="`lab variants` lists the factors and their levels",
            )
        if (
            not isinstance(levels, list) or len(levels) < 2
            or not all(isinstance(v, str) for v in levels) or len(set(levels)) != len(levels)
        ):  # fmt: skip
            raise ConfigError(
                f"{source}: [factors]: {name} must list two or more distinct levels",
                hint=f"e.g. {name} = {json.dumps(list(FACTORS[name].levels)[:2])}",
            )
        factors.append((name, tuple(levels)))
    cells, left_out = [], []
    for combination in itertools.product(*(levels for _, levels in factors)):
        cell = cell_name(zip([f for f, _ in factors], combination, strict=True))
        problem = cell_problem(cell)
        if problem is not None and "libvirt" not in problem:
            raise ConfigError(f"{source}: [factors]: {problem}",
                              hint="`lab variants` lists the factors and their levels")  # fmt: skip
        if problem is None:
            cells.append(cell)
        else:
            left_out.append((cell, problem))
    if len(cells) < 2:
        raise ConfigError(f"{source}: [factors] leaves {len(cells)} cell that can run",
                          hint="Cross levels that libvirt can express together")  # fmt: skip
    if len(cells) > MAX_CELLS:
        raise ConfigError(
            f"{source}: [factors] makes {len(cells)} cells, more than {MAX_CELLS}",
            hint="Cross fewer factors or levels (a study each)",
        )
    seed = zlib.crc32(json.dumps(factors).encode())
    return Design(tuple(factors), tuple(cells), tuple(left_out),
                  tuple(pair_blocks(cells, seed=seed)), seed)  # fmt: skip
