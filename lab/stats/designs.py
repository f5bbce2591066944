"""Factorial designs: which cells a study runs, and for a fraction, what it confounds.

- :func:`full_factorial`: every combination of every factor's levels, two or more levels each
  (a 2^k design, or a mixed one such as 3 × 2).
- :func:`fractional`: a 2^(k−p) fraction of a two-level design, built from p generators
  (``"D = ABC"``: the level of D is the product of the ±1 levels of A, B and C). Its defining
  relation (``I = ABCD``) and the alias sets it implies (``A = BCD``, ``AB = CD``, …) follow
  from multiplying words, each letter squared away (Montgomery, "Design and Analysis of
  Experiments", ch. 8; Jain, "The Art of Computer Systems Performance Analysis", ch. 19).

A design's runs are level indices, one per factor; for a two-level factor 0 is the low (−1)
level and 1 the high (+1), as Jain's sign table writes them. Runs are in standard order: the
first factor's level changes fastest. A term is a tuple of factor names, printed ``AB`` when
every factor's name is one letter and ``page:prealloc`` otherwise.

Hand-written rather than pyDOE3's ``fracfact``: the alias structure, which pyDOE3 does not
give, is the part that needs care, and the runs are a few lines of itertools.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lab.core.errors import UsageError

Term = tuple[str, ...]


def term_name(term: Term) -> str:
    """``AB`` for one-letter factors, ``page:prealloc`` otherwise; ``I`` for the empty word."""
    if not term:
        return "I"
    return "".join(term) if all(len(f) == 1 for f in term) else ":".join(term)


@dataclass(frozen=True)
class Alias:
    """Terms that a fraction cannot tell apart: their estimates are one sum. ``signs[i]`` is
    −1 where the fraction's generator was negative (``D = -ABC`` makes ``A = -BCD``)."""

    terms: tuple[Term, ...]
    signs: tuple[int, ...]

    @property
    def estimable(self) -> Term:
        """The term an effect fitted on the fraction is reported as: the lowest-order one."""
        return self.terms[0]

    def line(self) -> str:
        """``A = BCD``, ``AB = CD = -ACE``: the estimable term first."""
        return " = ".join(
            ("-" if sign < 0 else "") + term_name(term)
            for term, sign in zip(self.terms, self.signs, strict=True)
        )


@dataclass(frozen=True)
class Design:
    """A factorial design: its factors, each factor's levels (low first for two-level ones),
    its runs (one level index per factor) and, for a fraction, its generators."""

    factors: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    runs: tuple[tuple[int, ...], ...]
    generators: tuple[tuple[str, Term, int], ...] = ()  # (factor, word, sign): D = ABC

    def level_order(self) -> dict[str, tuple[str, ...]]:
        """Factor -> its levels, low first: ``fit_effects(..., levels=design.level_order())``."""
        return dict(zip(self.factors, self.levels, strict=True))

    def cells(self) -> list[dict[str, str]]:
        """Each run as factor -> level name."""
        return [
            {f: self.levels[i][run[i]] for i, f in enumerate(self.factors)} for run in self.runs
        ]

    @property
    def defining_relation(self) -> list[tuple[Term, int]]:
        """The words equal to I (with their signs), shortest first: ``I = ABCD``."""
        words: list[tuple[Term, int]] = []
        basis = [(_word_product((f,), word), sign) for f, word, sign in self.generators]
        for size in range(1, len(basis) + 1):
            for chosen in itertools.combinations(basis, size):
                word: Term = ()
                sign = 1
                for w, s in chosen:
                    word, sign = _word_product(word, w), sign * s
                words.append((self._sorted(word), sign))
        return sorted(words, key=lambda ws: (len(ws[0]), self._key(ws[0])))

    @property
    def resolution(self) -> int | None:
        """The length of the shortest word of the defining relation (None for a full design)."""
        words = self.defining_relation
        return min(len(w) for w, _ in words) if words else None

    def aliases(self, max_order: int | None = None) -> list[Alias]:
        """The alias sets of a two-level design: every term up to ``max_order`` factors (all
        by default) with what it is confounded with, each set in order of its estimable term."""
        if any(len(levels) != 2 for levels in self.levels):
            raise UsageError(
                "alias sets are worked out for two-level designs only",
                hint="A mixed-level full factorial confounds nothing; fit its effects directly",
            )
        top = len(self.factors) if max_order is None else max_order
        relation = self.defining_relation
        seen: set[Term] = set()
        out: list[Alias] = []
        for term in all_terms(self.factors):
            if term in seen:
                continue
            members = [(term, 1)] + [
                (self._sorted(_word_product(term, word)), sign) for word, sign in relation
            ]
            seen.update(t for t, _ in members)
            if any(not t for t, _ in members):
                continue  # a word of the defining relation: confounded with the mean
            members.sort(key=lambda ts: (len(ts[0]), self._key(ts[0])))
            kept = [(t, s * members[0][1]) for t, s in members if len(t) <= top]
            if kept and kept[0][0] == members[0][0]:
                out.append(Alias(tuple(t for t, _ in kept), tuple(s for _, s in kept)))
        out.sort(key=lambda a: (len(a.estimable), self._key(a.estimable)))
        return out

    def alias_lines(self, max_order: int | None = None) -> list[str]:
        """The defining relation and every alias set as text: ``I = ABCD``, ``A = BCD``, …"""
        relation = self.defining_relation
        lines = []
        if relation:
            words = [("-" if s < 0 else "") + term_name(w) for w, s in relation]
            lines.append(" = ".join(["I", *words]))
        lines.extend(alias.line() for alias in self.aliases(max_order))
        return lines

    def estimable_terms(self, max_order: int | None = None) -> list[Term]:
        """One term for each alias set: the main effects and interactions the design supports."""
        return [alias.estimable for alias in self.aliases(max_order)]

    def _key(self, term: Term) -> tuple[int, ...]:
        return tuple(self.factors.index(f) for f in term)

    def _sorted(self, term: Term) -> Term:
        return tuple(sorted(term, key=self.factors.index))


def all_terms(factors: Sequence[str], max_order: int | None = None) -> list[Term]:
    """Main effects, then two-factor interactions, …, each in the factors' order."""
    top = len(factors) if max_order is None else min(max_order, len(factors))
    return [t for size in range(1, top + 1) for t in itertools.combinations(factors, size)]


def _word_product(a: Term, b: Term) -> Term:
    """The product of two words: a letter in both squares to I and drops out."""
    return tuple(sorted(set(a) ^ set(b)))


def full_factorial(levels: Mapping[str, Sequence[str]]) -> Design:
    """Every combination of every factor's levels, first factor fastest."""
    factors = tuple(levels)
    names = tuple(tuple(levels[f]) for f in factors)
    _check_factors(factors, names)
    slowest_first = itertools.product(*(range(len(n)) for n in names[::-1]))
    runs = [tuple(reversed(run)) for run in slowest_first]
    return Design(factors, names, tuple(runs))


def two_level(factors: Sequence[str], low: str = "-", high: str = "+") -> Design:
    """The full 2^k design of ``factors``, each at levels ``low`` and ``high``."""
    return full_factorial({f: (low, high) for f in factors})


_GENERATOR = re.compile(r"^\s*([\w-]+)\s*=\s*(-?)\s*(.+?)\s*$")


def parse_generator(text: str, factors: Sequence[str]) -> tuple[str, Term, int]:
    """``"D = ABC"`` (one-letter factors), ``"D = A*B*C"`` or ``"d = -a:b:c"`` into
    (factor, word, sign)."""
    match = _GENERATOR.match(text)
    if match is None:
        raise UsageError(
            f"generator {text!r} is not of the form 'D = ABC'",
            hint="Write the new factor, '=', then the product of base factors (A*B*C or ABC)",
        )
    factor, minus, product = match.groups()
    parts = re.split(r"\s*[*:]\s*", product) if re.search(r"[*:]", product) else list(product)
    unknown = [p for p in parts if p not in factors]
    if unknown or len(set(parts)) != len(parts):
        raise UsageError(
            f"generator {text!r} names {', '.join(unknown) or 'a factor twice'}",
            hint=f"Its product takes each of the base factors {', '.join(factors)} at most once",
        )
    return factor, tuple(parts), -1 if minus else 1


def fractional(
    base: Sequence[str],
    generators: Sequence[str],
    low: str = "-",
    high: str = "+",
) -> Design:
    """The 2^(k−p) fraction: a full 2^(k−p) design of the ``base`` factors, and one added
    factor per generator whose level is the (signed) product of its word's levels."""
    gens = [parse_generator(g, base) for g in generators]
    added = [f for f, _, _ in gens]
    if len(set(added)) != len(added) or set(added) & set(base):
        raise UsageError(
            f"generators {', '.join(generators)} define a factor twice",
            hint="Each generator adds one new factor, not a base factor or another's",
        )
    if len({frozenset(w) for _, w, _ in gens}) != len(gens) or any(len(w) < 2 for _, w, _ in gens):
        raise UsageError(
            f"generators {', '.join(generators)} alias a factor with a main effect or each other",
            hint="Give each added factor a distinct product of two or more base factors",
        )
    full = two_level(base, low, high)
    runs = []
    for run in full.runs:
        code = {f: 2 * run[i] - 1 for i, f in enumerate(base)}
        extra = []
        for _, word, sign in gens:
            value = sign
            for f in word:
                value *= code[f]
            extra.append((value + 1) // 2)
        runs.append((*run, *extra))
    factors = (*base, *added)
    return Design(factors, tuple((low, high) for _ in factors), tuple(runs), tuple(gens))


def _check_factors(factors: tuple[str, ...], levels: tuple[tuple[str, ...], ...]) -> None:
    if not factors:
        raise UsageError("a design needs at least one factor", hint="Name its factors and levels")
    for f, names in zip(factors, levels, strict=True):
        if len(names) < 2 or len(set(names)) != len(names):
            raise UsageError(
                f"factor {f!r} has levels {', '.join(names) or 'none'}",
                hint="Give each factor two or more distinct levels",
            )
