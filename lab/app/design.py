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

A ``[design]`` table's ``blocks = "mirror"`` runs each cell beside its mirror instead, every
factor at its other level (:func:`lab.stats.pairblocks.mirror_blocks`): a 2^k in 2^(k−1)
blocks, two for a 2 × 2 where every pair takes six, at the price of the even-order
interactions, which are then the blocks' and not estimated. Its ``fraction`` runs a 2^(k−p)
fraction of two-level factors instead of every cell (:mod:`lab.app.fraction`), and the design
then carries its generators and alias sets.
:func:`design_json` and :func:`design_from_json` are the design as the store keeps it.

The host's age (issue 42) is a factor too, ``age = ["fresh", "f80"]``
(:mod:`lab.host.agelevels`), but not a domain delta: it is no part of a cell's name, and every
block runs once per age level (a design of one block, twice), the host aged to it (``lab host
age``) before the block's ``lab up``. The age levels' order is drawn from the design's seed
and reversed from one block to the next (ABBA: fresh, f80 | f80, fresh | ...), so that neither
the hours a study takes nor the blocks' order pass for an effect of age; ``lab compare`` reads
each run's age back from it and adds it to the cell of each of its samples.
"""

from __future__ import annotations

import itertools
import json
import random
import zlib
from dataclasses import dataclass, replace
from typing import Any

from lab.app.fraction import parse_fraction
from lab.core.cells import cell_name
from lab.core.errors import ConfigError, UsageError
from lab.guests.factors import FACTORS, cell_problem
from lab.host.agelevels import AGE_FACTOR, age_index
from lab.stats.pairblocks import mirror_blocks, pair_blocks

MAX_CELLS = 12  # 66 blocks of two: more is a study of its own
PAIRS, MIRROR = "pairs", "mirror"  # [design] blocks: every pair of cells once, or mirror pairs


@dataclass(frozen=True)
class Design:
    """The factors and levels crossed, the cells that can run, those left out and why, and
    the blocks (pairs of cells) in the order they run."""

    factors: tuple[tuple[str, tuple[str, ...]], ...]
    cells: tuple[str, ...]
    left_out: tuple[tuple[str, str], ...]
    blocks: tuple[tuple[str, str], ...]
    seed: int
    fraction: tuple[str, ...] = ()  # a fraction's generators: "guest-thp = page * prealloc"
    aliases: tuple[str, ...] = ()  # a fraction's defining relation, then its alias sets
    ages: tuple[str, ...] = ()  # the host age levels each block runs at (none: as it is)
    blocking: str = PAIRS  # how the cells were put in blocks: PAIRS or MIRROR

    @property
    def steps(self) -> tuple[tuple[tuple[str, str], str | None], ...]:
        """(block, host age level) in the order they run: each block once per age level (a
        lone block twice), the levels in an order drawn from the seed and reversed every other
        block (ABBA)."""
        if not self.ages:
            return tuple((block, None) for block in self.blocks)
        order = random.Random(self.seed).sample(self.ages, len(self.ages))
        # one block runs twice: age's main effect is read from the runs' means, and needs a
        # run per level to spare (lab.stats.effects, confounded terms)
        blocks = self.blocks if len(self.blocks) > 1 else self.blocks * 2
        return tuple((block, age) for i, block in enumerate(blocks)
                     for age in (order if i % 2 == 0 else order[::-1]))  # fmt: skip

    @property
    def confounded(self) -> tuple[str, ...]:
        """The interactions mirror blocks confound with the blocks: every even-order one."""
        if self.blocking != MIRROR:
            return ()
        names = [f for f, _ in self.factors]
        return tuple(":".join(word) for order in range(2, len(names) + 1, 2)
                     for word in itertools.combinations(names, order))  # fmt: skip

    def lines(self) -> list[str]:
        """The design as ``lab study check`` prints it."""
        crossed = " × ".join(f"{f} ({', '.join(levels)})" for f, levels in self.factors)
        how = "every pair once" if self.blocking == PAIRS else "each cell beside its mirror"
        out = [f"design: {crossed}: {len(self.cells)} cells in {len(self.blocks)} blocks of 2"
               f" ({how}, seed {self.seed})"]  # fmt: skip
        if self.blocking == MIRROR:
            out.append(f"  confounded with the blocks, not estimated: {', '.join(self.confounded)}")
        if self.ages:
            out[0] += (f"; each block at host age {', '.join(self.ages)}: {len(self.steps)}"
                       " runs per workload")  # fmt: skip
        out += fraction_lines(self)
        out += [f"  left out: {cell}: {why}" for cell, why in self.left_out]
        if self.ages:
            out += [f"  block {i}: {a}, {b} at host age {age}"
                    for i, ((a, b), age) in enumerate(self.steps, 1)]  # fmt: skip
        else:
            out += [f"  block {i}: {a}, {b}" for i, (a, b) in enumerate(self.blocks, 1)]
        return out


def parse_design(source: str, table: object, fraction: object = None) -> Design:
    """The :class:`Design` of a study file's ``[factors]`` table, and of its ``[design]`` table
    when given (``fraction``); ``source`` names the file in every error."""
    example = 'e.g. [factors] with page = ["thp", "1g"] and prealloc = ["off", "on"]'
    if not isinstance(table, dict) or not table:
        raise ConfigError(f"{source}: [factors] must be a table of factors and their levels",
                          hint=example)  # fmt: skip
    ages = parse_ages(source, table.get(AGE_FACTOR))
    domain = {name: levels for name, levels in table.items() if name != AGE_FACTOR}
    if not domain:
        raise ConfigError(
            f"{source}: [factors] crosses the host's age with no factor of the guests",
            hint='Add one, e.g. page = ["thp", "1g"] (thp against 1 GiB pages, as thp and shp1g)',
        )
    factors = []
    for name, levels in domain.items():
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
    blocking, fraction = parse_blocking(source, fraction)
    if fraction is not None:
        if blocking == MIRROR:
            raise ConfigError(f"{source}: [design] blocks = \"mirror\" takes the full design,"
                              " not a fraction",
                              hint="Drop one of blocks and fraction")  # fmt: skip
        return replace(fractional_design(source, factors, fraction), ages=ages)
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
    seed = zlib.crc32(json.dumps(factors + ([(AGE_FACTOR, ages)] if ages else [])).encode())
    if blocking == MIRROR:
        blocks = mirror_cells(source, factors, left_out, seed)
    else:
        blocks = tuple(pair_blocks(cells, seed=seed))
    return Design(tuple(factors), tuple(cells), tuple(left_out), blocks, seed, ages=ages,
                  blocking=blocking)  # fmt: skip


def parse_blocking(source: str, table: object) -> tuple[str, object]:
    """``[design]``'s ``blocks`` (PAIRS when not given) and the rest of the table, None when
    nothing else is in it (else a fraction's, for :func:`fractional_design` to check)."""
    if not isinstance(table, dict) or "blocks" not in table:
        return PAIRS, table
    rest = {k: v for k, v in table.items() if k != "blocks"}
    blocking = table["blocks"]
    if blocking not in (PAIRS, MIRROR):
        raise ConfigError(
            f'{source}: [design] blocks must be "pairs" (every pair of cells once) or'
            f' "mirror" (each cell beside its mirror), not {blocking!r}',
            hint='e.g. [design] blocks = "mirror" for a 2 x 2 in two blocks',
        )
    return str(blocking), (rest or None)


def mirror_cells(
    source: str,
    factors: list[tuple[str, tuple[str, ...]]],
    left_out: list[tuple[str, str]],
    seed: int,
) -> tuple[tuple[str, str], ...]:
    """The mirror blocks of a full 2^k design, as cell names; refused with the reason when a
    factor has more than two levels or a cell cannot run (its mirror would run alone)."""
    wide = [f"{f} ({len(levels)} levels)" for f, levels in factors if len(levels) != 2]
    if wide:
        raise ConfigError(f"{source}: [design] blocks = \"mirror\" needs every factor at two"
                          f" levels; {', '.join(wide)} has more",
                          hint='Cross two levels of each, or drop blocks = "mirror"')  # fmt: skip
    if left_out:
        cell, why = left_out[0]
        raise ConfigError(
            f'{source}: [design] blocks = "mirror" needs every cell, and {cell} cannot run: {why}',
            hint='Cross levels that libvirt can express together, or drop blocks = "mirror"'
            " (every pair of the cells that can run)",
        )
    try:
        blocks = mirror_blocks(dict((f, (levels[0], levels[1])) for f, levels in factors),
                               seed=seed)  # fmt: skip
    except UsageError as err:
        raise ConfigError(f"{source}: [design]: {err.message}", hint=err.hint) from None
    names = [f for f, _ in factors]
    return tuple(
        (cell_name((f, a[f]) for f in names), cell_name((f, b[f]) for f in names))
        for a, b in blocks
    )


def parse_ages(source: str, levels: object) -> tuple[str, ...]:
    """The host age levels of ``[factors]``'s ``age`` (none where it has no ``age``)."""
    if levels is None:
        return ()
    if (
        not isinstance(levels, list) or len(levels) < 2
        or not all(isinstance(v, str) for v in levels) or len(set(levels)) != len(levels)
    ):  # fmt: skip
        raise ConfigError(f"{source}: [factors]: age must list two or more distinct levels",
                          hint='e.g. age = ["fresh", "f80"]')  # fmt: skip
    for level in levels:
        try:
            age_index(level)
        except UsageError as err:
            raise ConfigError(f"{source}: [factors]: {err.message}", hint=err.hint) from None
    return tuple(levels)


def fractional_design(
    source: str, factors: list[tuple[str, tuple[str, ...]]], table: object
) -> Design:
    """The :class:`Design` of ``[design]``'s fraction of the checked ``factors``: its cells only,
    none left out (a fraction that loses a cell is refused), its blocks seeded by the factors
    and the generators both."""
    part = parse_fraction(source, factors, table, cell_problem)
    if len(part.cells) > MAX_CELLS:
        raise ConfigError(
            f"{source}: [design] fraction makes {len(part.cells)} cells, more than {MAX_CELLS}",
            hint="Add a generator (a smaller fraction), or cross fewer factors",
        )
    seed = zlib.crc32(json.dumps([factors, part.generators]).encode())
    blocks = tuple(pair_blocks(part.cells, seed=seed))
    return Design(tuple(factors), part.cells, (), blocks, seed, part.generators, part.aliases)


def fraction_lines(design: Design) -> list[str]:
    """A fraction's generators, resolution and alias sets, as ``lab study check`` prints them
    under the design's line; none for a full design."""
    if not design.fraction:
        return []
    k, p = len(design.factors), len(design.fraction)
    relation, *sets = design.aliases
    words = [word.lstrip("-") for word in relation.split(" = ")[1:]]
    # a word's factors are joined by ':' (lab.stats.designs.term_name), or are its letters
    resolution = min(len(w.split(":")) if ":" in w else len(w) for w in words)
    return [
        f"  fraction 2^({k}-{p}) of resolution {_ROMAN.get(resolution, str(resolution))}:"
        f" {'; '.join(design.fraction)}",
        f"  defining relation: {relation}",
        "  aliases (what each estimate also holds):",
        *(f"    {line}" for line in sets),
    ]


_ROMAN = {3: "III", 4: "IV", 5: "V", 6: "VI"}


def design_json(design: Design) -> dict[str, Any]:
    """The design as JSON (``lab study check --json``'s ``design``, and the store's copy)."""
    return {
        "factors": {f: list(levels) for f, levels in design.factors},
        "fraction": list(design.fraction),
        "aliases": list(design.aliases),
        "cells": list(design.cells),
        "left_out": [{"cell": c, "why": why} for c, why in design.left_out],
        "blocks": [list(pair) for pair in design.blocks],
        "seed": design.seed,
        "ages": list(design.ages),
        "blocking": design.blocking,
        "confounded_with_blocks": list(design.confounded),
        "steps": [{"pair": list(pair), "host_age": age} for pair, age in design.steps],
    }


def design_from_json(doc: dict[str, Any]) -> Design:
    """The :class:`Design` that :func:`design_json` wrote."""
    return Design(
        factors=tuple((f, tuple(levels)) for f, levels in doc["factors"].items()),
        cells=tuple(doc["cells"]),
        left_out=tuple((x["cell"], x["why"]) for x in doc["left_out"]),
        blocks=tuple((a, b) for a, b in doc["blocks"]),
        seed=int(doc["seed"]),
        fraction=tuple(doc.get("fraction", ())),
        aliases=tuple(doc.get("aliases", ())),
        ages=tuple(doc.get("ages", ())),
        blocking=str(doc.get("blocking", PAIRS)),
    )
