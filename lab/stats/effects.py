"""The effects of a factorial study's factors and their interactions, fitted by least squares.

A study that runs cells such as ``page-1g.prealloc-on`` asks how much each factor, and each
combination of factors, moves the metric. :func:`fit_effects` takes one value per sample and
each factor's level per sample (two-level and multi-level factors, cells of unequal
replication, an optional block per sample: a boot, or a pair block of
:func:`lab.stats.pairblocks.pair_blocks`, fitted as an additive fixed effect) and fits, with
statsmodels' ordinary least squares, the model with every main effect and interaction the
design supports, in sum-to-zero (effect) coding: ``C(f, Sum)`` in statsmodels' formulas.

**What an estimate means.** With sum-to-zero coding a term's effects over its levels sum to
zero, and the intercept is the mean of the cell means. For a two-level factor the coding is
−1 at the low level (the first of ``levels``) and +1 at the high: the estimate is Jain's q
("The Art of Computer Systems Performance Analysis", ch. 17–18), half the change from low to
high, averaged over the other factors; an interaction of two-level factors is reported at all
its factors' high levels (q_AB: the amount by which A's half-change at B's high level exceeds
its average). A factor of three or more levels is reported at every level: that level's mean
minus the mean over levels (and an interaction with it at every combination of its levels with
the two-level factors' high ones).

**Ratios.** The same model fitted to log(values) gives, for a term of two-level factors,
``ratio`` = exp(2·q): the multiplicative change from the low level to the high (for a main
effect, of the geometric mean, averaged over the other factors; for an interaction, the factor
by which the interaction multiplies one factor's ratio at the other's high level, and divides
it at its low). For a term with a factor of three or more levels, ``ratio`` = exp(q): that
level's geometric mean over the geometric mean across levels.

**Intervals.** t intervals on the residual degrees of freedom. ``correction="bonferroni"``
(the default) makes the intervals of all the effects reported (one family, each scale) hold
together with the given confidence, each at 1 − (1 − confidence)/m; ``"none"`` gives each
interval on its own, as Jain prints them.

**Shares of variation** (Jain's allocation of variation): each term's sum of squares over
the total, SS_term/SST, with SST = Σ(y − ȳ)², and the error's SSE/SST. The sums of squares
are statsmodels' type 3 (``anova_lm(typ=3)``): each term's after all the others, which with
sum-to-zero coding tests the very effects estimated here whether or not the cells are equally
replicated (type 2 would test a main effect as if its interactions were absent). In a balanced
design type 2 and type 3 agree with Jain's sign table and the shares add to one; unbalanced,
the terms are not orthogonal and the shares need not add up.

**Fractions and incomplete designs.** Terms are taken in order, main effects first, and a
term is fitted when its sub-terms are and its columns add to what the terms before it (and the
blocks) already span; a term the data cannot tell from those is ``not_estimable``. In a
2^(k−p) fraction that keeps the lowest-order term of each alias set; each effect names its
aliases (what its estimate also contains, from lab.stats.designs's word algebra's twin: equal
or opposite columns).

**Factors of the blocks** (a split plot: the host's age, one level per run, issue 42). A term
whose columns the blocks span (every block at one level of it) cannot be estimated within
blocks: it is ``confounded`` with them. It still stands in the formula (its interactions are
coded as with it, in sum-to-zero coding, and OLS's pseudo-inverse leaves it unidentified), so
that its interactions with factors that vary within blocks are fitted from within the blocks
alone, free of what differs between them. The confounded term itself is estimated from the
blocks' means of what the within-block terms leave, regressed on its columns, with t intervals
on the degrees of freedom the blocks leave (``df_between``): what differs between blocks is its
error. With no block to spare (one block per level), it is not reported.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm
from statsmodels.tools.sm_exceptions import SingularMatrixWarning, ValueWarning

from lab.core.errors import UsageError
from lab.stats.coding import Coded, code_samples, estimable_terms, reported_levels, term_columns
from lab.stats.descriptive import check_confidence
from lab.stats.designs import Term, all_terms, term_name

METHOD = "least squares, sum-to-zero coding (statsmodels C(f, Sum)), type 3 sums of squares"


class IntervalCorrection(StrEnum):
    BONFERRONI = "bonferroni"  # every effect's interval at once
    NONE = "none"  # each interval on its own


@dataclass(frozen=True)
class Effect:
    """One estimated effect: ``term`` at the levels ``level`` (``1g`` or ``1g:on``)."""

    term: str
    level: str
    estimate: float  # in the metric's unit
    ci: tuple[float, float]
    ratio: float | None  # None when a value is not positive
    ratio_ci: tuple[float, float] | None
    aliases: tuple[str, ...] = ()  # terms this estimate also contains (fractions): "-C:D"


@dataclass(frozen=True)
class Share:
    """A term's (or ``block``'s, or ``error``'s) share of the variation, SS/SST."""

    term: str
    df: int
    sum_of_squares: float
    share: float


@dataclass(frozen=True)
class FactorialEffects:
    n: int
    confidence: float
    correction: IntervalCorrection
    df_error: int
    mean: float  # the mean of the cell means (q0)
    mean_ci: tuple[float, float]
    effects: tuple[Effect, ...]
    shares: tuple[Share, ...]  # the fitted terms, then block (if any), then error
    not_estimable: tuple[str, ...]
    method: str = METHOD
    confounded: tuple[str, ...] = ()  # terms the blocks span: not estimable within them
    df_between: int | None = None  # their effects' degrees of freedom, from the blocks' means


_COLUMN = re.compile(r"C\((f\d+|blk), Sum\(omit=0\)\)\[S\.l(\d+)\]")


def fit_effects(
    values: Sequence[float] | np.ndarray,
    factors: Mapping[str, Sequence[str]],
    *,
    levels: Mapping[str, Sequence[str]] | None = None,
    blocks: Sequence[str] | None = None,
    confidence: float = 0.95,
    correction: IntervalCorrection | str = IntervalCorrection.BONFERRONI,
    max_order: int | None = None,
) -> FactorialEffects:
    """Effects of ``factors`` (factor -> its level for each sample) on ``values``.

    ``levels`` orders a factor's levels, low first (default: sorted, but ``-`` before ``+``
    and ``low`` before ``high``; a design's order is ``design.level_order()``); ``blocks``
    labels each sample's block; ``max_order`` leaves out interactions of more factors than that (an
    unreplicated design needs it, to keep degrees of freedom for the error)."""
    level = check_confidence(confidence)
    try:
        corr = IntervalCorrection(correction)
    except ValueError:
        raise UsageError(
            f"unknown interval correction {correction!r}",
            hint="Use 'bonferroni' (all effects at once) or 'none' (each on its own)",
        ) from None
    y = np.asarray(values, dtype=float)
    coded = code_samples(y, factors, levels, blocks)
    terms, dropped, confounded = estimable_terms(coded, all_terms(coded.factors, max_order))
    if not terms:
        raise UsageError(
            "every factor is confounded with the blocks (each block holds one level of each)",
            hint="Run several cells in a block (pair blocks), or fit without blocks",
        )
    fit = _fit(y, coded, [t for t in all_terms(coded.factors, max_order)
                          if t in terms or t in confounded])  # fmt: skip
    df_error = round(fit.df_resid)  # type: ignore[attr-defined]
    if df_error < 1:
        raise UsageError(
            f"{len(y)} samples leave no degrees of freedom for the error",
            hint="Replicate some cells, or leave the highest interactions out (max_order)",
        )
    with warnings.catch_warnings():  # a confounded term's test is left unread: its Wald
        warnings.simplefilter("ignore", SingularMatrixWarning)  # test has rank 0 (F = 0/0)
        warnings.simplefilter("ignore", ValueWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        anova = anova_lm(fit, typ=3)
    rows = [(t, combo) for t in terms for combo in reported_levels(coded, t)]
    contrast = _contrasts(fit, coded, rows)
    across = [(t, combo) for t in confounded for combo in reported_levels(coded, t)]
    across = across if _block_design(coded, confounded) is not None else []
    m = len(rows) + len(across) if corr is IntervalCorrection.BONFERRONI else 1
    alpha = (1 - level) / max(m, 1)
    estimates, cis = _intervals(fit, contrast, alpha)
    if np.all(y > 0):
        # the same columns, on log(values): the formula is built once
        with warnings.catch_warnings():  # as in _fit
            warnings.simplefilter("ignore", SingularMatrixWarning)
            log_fit = sm.OLS(np.log(y), fit.model.exog).fit()  # type: ignore[attr-defined]
        log_est, log_cis = _intervals(log_fit, contrast, alpha)
    between = _between(y, fit, coded, terms, confounded, across, alpha)
    df_between = None
    if between is not None:  # the confounded terms, from the blocks' means
        rows += across
        estimates = np.append(estimates, between[0])
        cis = cis + between[1]
        df_between = between[2]
        if np.all(y > 0):
            logs = _between(np.log(y), log_fit, coded, terms, confounded, across, alpha)
            assert logs is not None
            log_est, log_cis = np.append(log_est, logs[0]), log_cis + logs[1]
    aliases = _aliases(coded, terms, dropped)
    effects = []
    for i, (term, combo) in enumerate(rows):
        ratio: float | None = None
        ratio_ci: tuple[float, float] | None = None
        if np.all(y > 0):
            k = 2.0 if all(n == 2 for n in coded.sizes(term)) else 1.0
            ratio = math.exp(k * log_est[i])
            ratio_ci = (math.exp(k * log_cis[i][0]), math.exp(k * log_cis[i][1]))
        label = ":".join(
            coded.levels[coded.factors.index(f)][c] for f, c in zip(term, combo, strict=True)
        )
        effects.append(
            Effect(
                term_name(term),
                label,
                float(estimates[i]),
                cis[i],
                ratio,
                ratio_ci,
                aliases.get(term, ()),
            )
        )
    mean_est, mean_ci = _intervals(fit, _intercept(fit), 1 - level)
    sst = float(np.sum((y - y.mean()) ** 2))
    return FactorialEffects(
        n=len(y),
        confidence=level,
        correction=corr,
        df_error=df_error,
        mean=float(mean_est[0]),
        mean_ci=mean_ci[0],
        effects=tuple(effects),
        shares=_shares(anova, terms, coded, sst),
        not_estimable=tuple(term_name(t) for t in dropped),
        confounded=tuple(term_name(t) for t in confounded),
        df_between=df_between,
    )


def _between(
    y: np.ndarray, fit: object, coded: Coded, terms: list[Term], confounded: list[Term],
    rows: list[tuple[Term, tuple[int, ...]]], alpha: float,
) -> tuple[np.ndarray, list[tuple[float, float]], int] | None:  # fmt: skip
    """The confounded terms' effects from the blocks: each block's mean of what the terms
    fitted within blocks leave (``y`` less their part of ``fit``), regressed on the
    confounded terms' columns, t intervals on the blocks' own residual degrees of freedom
    (what differs between blocks is their error); None without a block left over for it."""
    design = _block_design(coded, confounded)
    if design is None or not rows:
        return None
    x, count = design
    model = fit.model  # type: ignore[attr-defined]
    within = [j for j, name in enumerate(model.exog_names) if _term_of(name, coded) in terms]
    left = y - model.exog[:, within] @ np.asarray(fit.params)[within]  # type: ignore[attr-defined]
    assert coded.block is not None
    means = np.array([left[coded.block == b].mean() for b in range(count)])
    contrast = []
    for term, combo in rows:
        at = np.zeros((1, len(coded.factors)), dtype=int)
        at[0, [coded.factors.index(f) for f in term]] = combo
        pieces = [term_columns(coded, at, t)[0] * (t == term) for t in confounded]
        contrast.append(np.concatenate([[0.0], *pieces]))
    test = sm.OLS(means, x).fit().t_test(np.array(contrast))
    bounds = np.atleast_2d(test.conf_int(alpha=alpha))
    return np.ravel(test.effect), [(float(lo), float(hi)) for lo, hi in bounds], count - x.shape[1]


def _block_design(coded: Coded, confounded: list[Term]) -> tuple[np.ndarray, int] | None:
    """The confounded terms' columns per block (an intercept first) and the number of
    blocks, where they leave a degree of freedom; else None."""
    if not confounded or coded.block is None:
        return None
    count = int(coded.block.max()) + 1
    firsts = np.array([coded.codes[coded.block == b][0] for b in range(count)])
    x = np.hstack([np.ones((count, 1)), *(term_columns(coded, firsts, t) for t in confounded)])
    if count - x.shape[1] < 1 or np.linalg.matrix_rank(x) < x.shape[1]:
        return None
    return x, count


def _term_of(name: str, coded: Coded) -> Term | None:
    """The term a column of the formula belongs to (None: the intercept's, a block's)."""
    found = [_COLUMN.fullmatch(piece) for piece in name.split(":")]
    if name == "Intercept" or any(m is None or m.group(1) == "blk" for m in found):
        return None
    return tuple(coded.factors[int(m.group(1)[1:])] for m in found if m)


def _formula_piece(coded: Coded, term: Term) -> str:
    return ":".join(f"C(f{coded.factors.index(f)}, Sum(omit=0))" for f in term)


def _fit(y: np.ndarray, coded: Coded, terms: list[Term]) -> object:
    frame = pd.DataFrame({"y": y})
    for i, names in enumerate(coded.levels):
        frame[f"f{i}"] = pd.Categorical.from_codes(
            coded.codes[:, i], categories=[f"l{j}" for j in range(len(names))]
        )
    pieces = [_formula_piece(coded, t) for t in terms]
    if coded.block is not None:
        count = int(coded.block.max()) + 1
        frame["blk"] = pd.Categorical.from_codes(
            coded.block, categories=[f"l{j}" for j in range(count)]
        )
        pieces.insert(0, "C(blk, Sum(omit=0))")
    engine = getattr(getattr(statsmodels.formula, "options", None), "formula_engine", "patsy")
    if engine != "patsy":  # formulaic's Sum takes no omit= and names columns otherwise
        raise UsageError(
            f"statsmodels is set to the {engine} formula engine",
            hint="Unset SM_FORMULA_ENGINE (the effects' formulas are written for patsy)",
        )
    with warnings.catch_warnings():  # a term confounded with the blocks: rank-deficient
        warnings.simplefilter("ignore", SingularMatrixWarning)
        return smf.ols("y ~ " + " + ".join(pieces or ["1"]), frame).fit()


def _column_value(name: str, term: Term, coded: Coded, combo: tuple[int, ...]) -> float:
    """Column ``name``'s value at the term's level combination (0 for another term's)."""
    pieces = name.split(":")
    parsed = [_COLUMN.fullmatch(p) for p in pieces]
    if name == "Intercept" or any(m is None or m.group(1) == "blk" for m in parsed):
        return 0.0
    factors = tuple(coded.factors[int(m.group(1)[1:])] for m in parsed if m)
    if factors != term:
        return 0.0
    value = 1.0
    for m, c in zip(parsed, combo, strict=True):
        j = int(m.group(2)) if m else 0
        value *= 1.0 if c == j else -1.0 if c == 0 else 0.0
    return value


def _contrasts(fit: object, coded: Coded, rows: list[tuple[Term, tuple[int, ...]]]) -> np.ndarray:
    names = list(fit.model.exog_names)  # type: ignore[attr-defined]
    _check_coding(fit, coded)
    return np.array([[_column_value(n, t, coded, combo) for n in names] for t, combo in rows])


def _check_coding(fit: object, coded: Coded) -> None:
    """The formula's columns are the sum-to-zero ones the contrasts assume (an internal check:
    a formula engine that coded them otherwise would make every estimate wrong)."""
    model = fit.model  # type: ignore[attr-defined]
    for j, name in enumerate(model.exog_names):
        if name == "Intercept":
            continue
        pieces = [_COLUMN.fullmatch(p) for p in name.split(":")]
        expected = np.ones(len(coded.codes))
        for m in pieces:
            if m is None:
                raise AssertionError(f"unexpected column {name!r} in the effects' formula")
            codes = coded.block if m.group(1) == "blk" else coded.codes[:, int(m.group(1)[1:])]
            assert codes is not None
            level = int(m.group(2))
            expected = expected * np.where(codes == level, 1.0, np.where(codes == 0, -1.0, 0.0))
        if not np.array_equal(model.exog[:, j], expected):
            raise AssertionError(f"column {name!r} is not sum-to-zero coded as expected")


def _intercept(fit: object) -> np.ndarray:
    names = list(fit.model.exog_names)  # type: ignore[attr-defined]
    return np.array([[1.0 if n == "Intercept" else 0.0 for n in names]])


def _intervals(
    fit: object, contrast: np.ndarray, alpha: float
) -> tuple[np.ndarray, list[tuple[float, float]]]:
    with warnings.catch_warnings():  # estimable contrasts of a rank-deficient fit (_fit)
        warnings.simplefilter("ignore", SingularMatrixWarning)
        test = fit.t_test(contrast)  # type: ignore[attr-defined]
    bounds = np.atleast_2d(test.conf_int(alpha=alpha))
    return np.ravel(test.effect), [(float(lo), float(hi)) for lo, hi in bounds]


def _aliases(coded: Coded, terms: list[Term], dropped: list[Term]) -> dict[Term, tuple[str, ...]]:
    """For two-level terms: the dropped terms whose columns over the cells equal (or negate)
    a fitted term's."""
    cells = np.unique(coded.codes, axis=0)
    two = [t for t in terms if all(n == 2 for n in coded.sizes(t))]
    column = {t: term_columns(coded, cells, t)[:, 0] for t in two}
    out: dict[Term, list[str]] = {}
    for d in dropped:
        if any(n != 2 for n in coded.sizes(d)):
            continue
        x = term_columns(coded, cells, d)[:, 0]
        for t in two:
            if np.array_equal(x, column[t]) or np.array_equal(x, -column[t]):
                sign = "" if np.array_equal(x, column[t]) else "-"
                out.setdefault(t, []).append(sign + term_name(d))
    return {t: tuple(v) for t, v in out.items()}


def _shares(anova: pd.DataFrame, terms: list[Term], coded: Coded, sst: float) -> tuple[Share, ...]:
    out = []
    named = [(_formula_piece(coded, t), term_name(t)) for t in terms]
    if coded.block is not None:
        named.append(("C(blk, Sum(omit=0))", "block"))
    named.append(("Residual", "error"))
    for key, name in named:
        ss = float(anova.loc[key, "sum_sq"])
        out.append(Share(name, int(anova.loc[key, "df"]), ss, ss / sst if sst > 0 else math.nan))
    return tuple(out)
