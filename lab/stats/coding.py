"""The samples of a factorial coded for a linear model: each factor's levels as indices
(low first), its sum-to-zero columns, a term's columns as their products, the terms the
samples can estimate (or the blocks confound), and the levels a term is reported at. The fit
(:mod:`lab.stats.effects`) and the factorial plan (:mod:`lab.stats.factorialplan`) code
alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np

from lab.core.errors import UsageError
from lab.stats.designs import Term, all_terms


@dataclass(frozen=True)
class Coded:
    """The samples with each factor (and block) as level indices, and the levels' names."""

    factors: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    codes: np.ndarray  # samples × factors, level index
    block: np.ndarray | None  # block index per sample

    def sizes(self, term: Term) -> list[int]:
        return [len(self.levels[self.factors.index(f)]) for f in term]


def code_samples(
    y: np.ndarray,
    factors: Mapping[str, Sequence[str]],
    levels: Mapping[str, Sequence[str]] | None,
    blocks: Sequence[str] | None,
) -> Coded:
    if y.ndim != 1 or not np.all(np.isfinite(y)):
        raise UsageError("the values are not one finite number per sample", hint="Drop NaNs")
    if not factors:
        raise UsageError("no factors to fit", hint="Give each sample its level of each factor")
    names, columns, codes = tuple(factors), [], []
    for name in names:
        labels = np.asarray([str(v) for v in factors[name]])
        if len(labels) != len(y):
            raise UsageError(
                f"factor {name!r} has {len(labels)} levels for {len(y)} values",
                hint="Give one level of each factor per sample",
            )
        seen = set(labels.tolist())
        order = [str(v) for v in (levels or {}).get(name, _default_order(seen))]
        if seen - set(order):
            raise UsageError(
                f"factor {name!r} has levels {', '.join(sorted(seen - set(order)))} not listed",
                hint=f"List every level of {name!r}, low first",
            )
        order = [v for v in order if v in seen]
        if len(order) < 2:
            raise UsageError(
                f"factor {name!r} takes only the level {order[0]!r} in these samples",
                hint="Leave it out of the fit, or add samples at its other levels",
            )
        columns.append(tuple(order))
        index = {v: i for i, v in enumerate(order)}
        codes.append(np.array([index[v] for v in labels.tolist()]))
    block = None
    if blocks is not None:
        if len(blocks) != len(y):
            raise UsageError(
                f"{len(blocks)} block labels for {len(y)} values", hint="Give one per sample"
            )
        first = {b: i for i, b in enumerate(dict.fromkeys(map(str, blocks)))}
        block = np.array([first[str(b)] for b in blocks]) if len(first) > 1 else None
    return Coded(names, tuple(columns), np.column_stack(codes), block)


def _default_order(seen: set[str]) -> list[str]:
    """Sorted, but for the pairs whose sort puts the high level first."""
    for low, high in (("-", "+"), ("low", "high")):
        if seen == {low, high}:
            return [low, high]
    return sorted(seen)


def sum_columns(codes: np.ndarray, size: int) -> np.ndarray:
    """Sum-to-zero columns of one factor: level j > 0 is 1 in column j − 1, level 0 is −1."""
    out = np.zeros((len(codes), size - 1))
    for j in range(1, size):
        out[:, j - 1] = codes == j
    out[codes == 0, :] = -1.0
    return out


def term_columns(coded: Coded, codes: np.ndarray, term: Term) -> np.ndarray:
    out = np.ones((len(codes), 1))
    for f in term:
        i = coded.factors.index(f)
        x = sum_columns(codes[:, i], len(coded.levels[i]))
        out = np.einsum("ni,nj->nij", out, x).reshape(len(codes), -1)
    return out


def estimable_terms(
    coded: Coded, candidates: list[Term]
) -> tuple[list[Term], list[Term], list[Term]]:
    """The candidates whose sub-terms are fitted (or confounded with the blocks) and whose
    columns add full rank, in order; those that are not; and those the blocks span alone
    (confounded: a factor of the blocks, such as a run's host age)."""
    keys = coded.codes if coded.block is None else np.column_stack([coded.codes, coded.block])
    rows = np.unique(keys, axis=0)
    codes = rows[:, : len(coded.factors)]
    span = [np.ones((len(rows), 1))]
    if coded.block is not None:
        span.append(sum_columns(rows[:, -1], int(coded.block.max()) + 1))
    blocks = np.hstack(span)
    block_rank = rank = np.linalg.matrix_rank(blocks)
    kept: list[Term] = []
    dropped: list[Term] = []
    confounded: list[Term] = []
    for term in candidates:
        subterms = [t for t in all_terms(term) if t != term]
        if all(t in kept or t in confounded for t in subterms):
            columns = term_columns(coded, codes, term)
            wider = np.linalg.matrix_rank(np.hstack([*span, columns]))
            if wider == rank + columns.shape[1]:
                span.append(columns)
                rank = wider
                kept.append(term)
                continue
            if coded.block is not None and (
                np.linalg.matrix_rank(np.hstack([blocks, columns])) == block_rank
            ):
                confounded.append(term)
                continue
        dropped.append(term)
    return kept, dropped, confounded


def reported_levels(coded: Coded, term: Term) -> list[tuple[int, ...]]:
    """The level combinations a term is reported at: a two-level factor's high level only,
    every level of a factor with more."""
    return list(product(*([1] if n == 2 else range(n) for n in coded.sizes(term))))
