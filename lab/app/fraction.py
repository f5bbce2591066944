"""A fractional factorial study: the ``[design]`` table's ``fraction`` (issue 41).

``fraction = ["guest-thp = page * prealloc"]`` runs the half of the 2^3 design of three
two-level factors in which guest-thp's level is the product of page's and prealloc's, each
level coded −1 (the first level ``[factors]`` lists) or +1 (the second); ``"guest-thp = -page *
prealloc"`` runs the other half. Factor names hold dashes, so a word's factors are joined by
``*`` (or spaces), never written together as in ``D = ABC``. Each generator adds one factor to
the full design of the others (:func:`lab.stats.designs.fractional`), which confounds effects:
the defining relation (``I = page:prealloc:guest-thp``) and the alias sets it implies
(``page = prealloc:guest-thp``) are what ``lab study check`` prints.

Only two-level factors make a fraction here: the word algebra is that of ±1 columns. A fraction
must run every one of its cells: one libvirt cannot express is not left out as from a full
design, because a fraction without one of its runs is no longer orthogonal (each effect's
estimate then takes part of effects outside its alias set, and the printed alias sets would be
false), so such a fraction is refused with the cell, its reason and, when it can run, the
other half.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lab.core.cells import cell_name
from lab.core.errors import ConfigError, LabError
from lab.stats.designs import Design as StatsDesign
from lab.stats.designs import fractional

EXAMPLE = 'e.g. [design] fraction = ["guest-thp = page * prealloc"]'
_GENERATOR = re.compile(r"^\s*(?P<factor>[^\s=*]+)\s*=\s*(?P<minus>-?)\s*(?P<word>[^=]*?)\s*$")


@dataclass(frozen=True)
class Fraction:
    """A fraction's cells (in standard order, the first base factor fastest), its generators
    as the file should read (``guest-thp = page * prealloc``) and its alias structure."""

    cells: tuple[str, ...]
    generators: tuple[str, ...]
    resolution: int
    aliases: tuple[str, ...]  # the defining relation, then every alias set


def parse_generator(source: str, text: object, factors: Sequence[str]) -> tuple[str, str, int]:
    """``"guest-thp = -page * prealloc"`` into (factor, ``a*b`` product, sign)."""
    where = f"{source}: [design] fraction"
    match = _GENERATOR.match(text) if isinstance(text, str) else None
    parts = re.split(r"[\s*]+", match["word"].strip("* ")) if match else []
    if match is None or not all(parts):
        raise ConfigError(f"{where}: {text!r} is not of the form 'FACTOR = FACTOR * FACTOR'",
                          hint=f"{EXAMPLE}: the added factor, '=', then the product of"
                          " others, joined by '*'")  # fmt: skip
    for name in (match["factor"], *parts):
        if name not in factors:
            raise ConfigError(
                f"{where}: {text!r} names {name!r}, which is not a factor of [factors]"
                f" ({', '.join(factors)})",
                hint="A generator multiplies factors that [factors] crosses, each once",
            )
    factor = match["factor"]
    if len(parts) < 2:
        raise ConfigError(
            f"{where}: {text!r} makes {factor} the same as {parts[0]}: their main effects"
            " would be one estimate",
            hint="Give each added factor the product of two or more other factors",
        )
    twice = next((p for p in parts if parts.count(p) > 1 or p == factor), None)
    if twice is not None:
        raise ConfigError(f"{where}: {text!r} names {twice} twice",
                          hint="A generator multiplies other factors, each once")  # fmt: skip
    return factor, "*".join(parts), -1 if match["minus"] else 1


def generator_text(factor: str, product: str, sign: int) -> str:
    """A generator as ``lab study check`` prints and the store keeps it."""
    return f"{factor} = {'-' if sign < 0 else ''}{product.replace('*', ' * ')}"


def parse_fraction(
    source: str,
    factors: Sequence[tuple[str, tuple[str, ...]]],
    table: object,
    problem: Callable[[str], str | None],
    suggest: bool = True,
) -> Fraction:
    """The :class:`Fraction` of a study's ``[design]`` ``table`` over its ``[factors]``;
    ``problem(cell)`` says why a cell cannot run (None when it can). ``source`` names the file
    in every error."""
    if not isinstance(table, dict) or set(table) - {"fraction"}:
        unknown = ", ".join(sorted(set(table) - {"fraction"})) if isinstance(table, dict) else ""
        raise ConfigError(f"{source}: [design] takes one key, fraction" +
                          (f" (not {unknown})" if unknown else ""), hint=EXAMPLE)  # fmt: skip
    given = table.get("fraction")
    if not isinstance(given, list) or not given:
        raise ConfigError(f"{source}: [design] fraction must list one or more generators",
                          hint=EXAMPLE)  # fmt: skip
    names = [f for f, _ in factors]
    wide = [f"{f} ({len(levels)} levels)" for f, levels in factors if len(levels) != 2]
    if wide:
        raise ConfigError(
            f"{source}: [design] fraction needs every factor at two levels; {', '.join(wide)}"
            " has more",
            hint="Cross two levels of each factor in a fraction, or drop [design] for the full"
            " (mixed) design",
        )
    gens = [parse_generator(source, text, names) for text in given]
    added = [f for f, _, _ in gens]
    base = [f for f in names if f not in added]
    texts = [generator_text(*g) for g in gens]
    try:
        stats = fractional(base, [f"{f} = {'-' if s < 0 else ''}{w}" for f, w, s in gens])
    except LabError as err:
        raise ConfigError(f"{source}: [design] fraction {'; '.join(texts)}: {err.message}",
                          hint=err.hint) from None  # fmt: skip
    design = _in_file_order(stats, factors)
    if design.resolution is not None and design.resolution < 3:
        raise ConfigError(
            f"{source}: [design] fraction {'; '.join(texts)} aliases two main effects"
            f" ({design.alias_lines()[0]})",
            hint="Choose generators whose products leave every word of three factors or more",
        )
    cells = tuple(cell_name(cell.items()) for cell in design.cells())
    for cell in cells:
        why = problem(cell)
        if why is not None:
            why = why.removeprefix(f"cell {cell} cannot be a libvirt domain: ")
            raise ConfigError(
                f"{source}: [design] fraction {'; '.join(texts)} holds cell {cell}, which"
                f" cannot run ({why})",
                hint="A fraction that loses a run no longer keeps its alias sets apart. "
                + (_other_half(source, factors, gens, problem) if suggest else ""),
            )
    return Fraction(cells, tuple(texts), design.resolution or 0, tuple(design.alias_lines()))


def _in_file_order(
    stats: StatsDesign, factors: Sequence[tuple[str, tuple[str, ...]]]
) -> StatsDesign:
    """``stats`` (base factors first, levels ``-``/``+``) with the factors in the order
    [factors] gives them and each factor's own levels, so cells and aliases read as the file."""
    order = [stats.factors.index(f) for f, _ in factors]
    return StatsDesign(
        factors=tuple(f for f, _ in factors),
        levels=tuple(levels for _, levels in factors),
        runs=tuple(tuple(run[i] for i in order) for run in stats.runs),
        generators=stats.generators,
    )


def _other_half(
    source: str,
    factors: Sequence[tuple[str, tuple[str, ...]]],
    gens: list[tuple[str, str, int]],
    problem: Callable[[str], str | None],
) -> str:
    """What to try instead: the other half (the first generator's sign flipped) when all its
    cells can run, else levels libvirt can express together."""
    flipped = [(gens[0][0], gens[0][1], -gens[0][2]), *gens[1:]]
    table = {"fraction": [generator_text(*g) for g in flipped]}
    try:
        parse_fraction(source, factors, table, problem, suggest=False)
    except LabError:
        return (
            "The other half holds such a cell too (a fraction of resolution III or more runs"
            " every combination of any two factors' levels): cross levels libvirt can express"
            " together, or drop [design] to run the full design without its cell"
        )
    quoted = ", ".join(f'"{t}"' for t in table["fraction"])
    return f"Run the other half: [design] fraction = [{quoted}]"
