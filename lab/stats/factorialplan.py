"""How many samples per cell a factorial study needs, so that ``lab compare`` tells each factor's
effect (issue 41).

**What the study can repeat.** ``lab study run`` runs a design's blocks (pairs of cells,
:func:`lab.stats.pairblocks.pair_blocks`) once each, every ``[[workload]]`` with its ``n``
iterations per guest on each block's pair (``lab.app.studyrun``); the design's blocks are not
repeated (``lab.app.design`` makes every pair once). So the plan's unit is **n, the samples
per cell per block**: a workload's ``n``. A cell in v − 1 blocks of a v-cell design gets
n·(v − 1) samples, the study n·2·b for b blocks.

**The model is compare's.** ``lab compare`` fits, by least squares on log(values), the block
as a fixed effect plus every main effect and interaction the cells support, in sum-to-zero
coding (:func:`lab.stats.effects.fit_effects`), and reports each term at its levels (a
two-level factor at its high level, a factor of three or more at each level) with t intervals
on the residual degrees of freedom, Bonferroni-corrected over the m effects it reports: each
at 1 − α/m. Its verdict on an effect, "better" or "worse", is that interval excluding ratio 1.
With one sample per cell per block the design matrix X is fixed; n samples of each multiply
X'X by n, so a reported effect c'β has variance σ²·f(n)·c'(X'X)⁻¹c / n, with σ the residual
sd on the log scale (for a few percent, the coefficient of variation: CV 2 % is σ ≈ 0.02),
and the residual degrees of freedom are ν = n·U − p for U cells-in-blocks and p = rank(X).
The terms, their estimability and their coding are taken from ``lab.stats.effects`` itself,
so that the plan's family and contrasts are compare's.

**The effect.** Size E is the ratio compare would print: for a term of two-level factors the
change from the low level to the high, exp(2q) (q the log-scale estimate); for a term with a
factor of three or more levels, that level's geometric mean over the mean across levels,
exp(q). (A level that stands apart from the k − 1 others by E' shows there as E'^((k−1)/k).)
The power of a term is the smallest, over the levels compare reports it at, of

    P = nct.sf(c / √f, ν, δ / √f),  c = t(1 − α/(2m), ν),  δ = |q| / (σ·√(c'(X'X)⁻¹c / n)),

the probability that the interval lies wholly on the effect's side of 1 (the wrong side's
tail, below α/(2m), is not counted: it would be the wrong verdict).

**Autocorrelation.** With lag-1 r within a run (AR(1)), a cell-in-block mean of n samples has
variance σ²/n · f(n), f(n) = 1 + 2·Σ_{k<n} (1 − k/n)·r^k, while compare's least squares still
reads the residual spread as independent: its intervals are too narrow by √f and the true
estimate √f wider, which is what P above carries (the interval's hit rate drops; the rate of
false verdicts rises too, which no n cures: planning.py's batch means are two-variant only).
r ≤ 0 is not credited. ``bench/factorial_plan.py`` checks the promise against
``fit_effects`` on simulated studies, with and without r.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from lab.core.cells import cell_levels
from lab.core.errors import UsageError

# compare's own coding and estimability, not a copy of them: the plan must count the same
# family and read the same contrasts as the fit it plans for
from lab.stats.coding import Coded, estimable_terms, reported_levels, sum_columns, term_columns
from lab.stats.descriptive import check_confidence
from lab.stats.designs import Term, all_terms, term_name
from lab.stats.monotone import smallest_holding

FORMULA = (
    "n samples per cell per block: the smallest n at which P = nct.sf(c/√f, ν, δ/√f) reaches"
    " the power for every level compare reports the term at, δ = |q|/(σ·√(c'(X'X)⁻¹c/n)),"
    " c = t(1 − α/(2m), ν), ν = n·U − rank(X), m the effects compare reports (Bonferroni),"
    " X compare's model (block + every estimable term, sum-to-zero) with one sample per cell"
    " per block, q = ln(E)/2 (two-level terms) or ln(E), f the AR(1) variance factor of a mean"
    " of n"
)
MAX_N = 10**7  # samples per cell per block beyond which the plan is no plan
CURVE = (0.5, 1.0, 2.0)  # the power curve: P at these multiples of the planned n


@dataclass(frozen=True)
class Layout:
    """A factorial as compare fits it: the factors and their levels (low first), and the
    blocks, each the cells (names such as ``page-1g.prealloc-on``) that run in it."""

    factors: tuple[tuple[str, tuple[str, ...]], ...]
    blocks: tuple[tuple[str, ...], ...]

    @property
    def cells(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c for block in self.blocks for c in block))

    @property
    def units(self) -> int:
        """Cells-in-blocks: the runs of n samples the study makes."""
        return sum(len(block) for block in self.blocks)


@dataclass(frozen=True)
class TermPlan:
    """The samples per cell per block at which compare tells one term of size E."""

    term: str  # "page", "page:prealloc"
    levels: tuple[str, ...]  # the levels compare reports it at ("1g", "1g:on")
    effect_log: float  # |q|: the log-scale effect E means for this term
    variance: float  # the largest c'(X'X)⁻¹c over its levels, one sample per cell per block
    n: int  # samples per cell per block
    power: float  # P at n (its least powerful level)
    df: int  # residual degrees of freedom at n
    curve: tuple[tuple[int, float], ...]  # (n, P) at CURVE × n


@dataclass(frozen=True)
class FactorialPlan:
    factors: tuple[tuple[str, tuple[str, ...]], ...]
    cells: tuple[str, ...]
    cell_blocks: tuple[int, ...]  # the blocks each cell runs in
    blocks: int
    units: int  # cells-in-blocks
    rank: int  # of compare's design matrix: the residual df at n are n·units − rank
    family: int  # m: the effects compare reports, the Bonferroni family
    reported: tuple[str, ...]  # the terms compare fits, in its order
    not_estimable: tuple[str, ...]
    effect: float  # E, the ratio planned for
    sd_log: float  # σ, residual sd on the log scale
    confidence: float  # of the family (0..1)
    correction: str
    power: float
    autocorrelation: float
    terms: tuple[TermPlan, ...]

    @property
    def n(self) -> int:
        """The samples per cell per block the study needs: its most demanding term's."""
        return max(t.n for t in self.terms)

    def samples_per_cell(self, n: int, cell: str) -> int:
        """Samples ``cell`` collects at n per cell per block: n in each of its blocks."""
        return n * self.cell_blocks[self.cells.index(cell)]

    def total(self, n: int) -> int:
        """Samples the whole study collects at n per cell per block."""
        return n * self.units


def sd_from_cv(cv: float) -> float:
    """The log-scale sd of a lognormal whose coefficient of variation is ``cv``."""
    if not 0 < cv < math.inf:
        raise UsageError(f"coefficient of variation {cv:g} must be above 0", hint="e.g. --cv 2%")
    return math.sqrt(math.log1p(cv * cv))


def variance_factor(n: int, r: float) -> float:
    """Var(mean of n AR(1) samples) / (σ²/n): 1 + 2·Σ_{k=1}^{n−1} (1 − k/n)·r^k."""
    if r <= 0 or n < 2:
        return 1.0
    k = np.arange(1, n)
    return float(1 + 2 * np.sum((1 - k / n) * r**k))


@dataclass(frozen=True)
class _Model:
    """X with one sample per cell-in-block, and each fitted term's reported contrasts."""

    rank: int
    contrasts: dict[Term, list[tuple[str, float]]]  # term -> (level label, c'(X'X)⁻¹c)
    not_estimable: tuple[Term, ...]


def _model(layout: Layout) -> _Model:
    names = tuple(f for f, _ in layout.factors)
    levels = tuple(tuple(v) for _, v in layout.factors)
    rows, block_ids = [], []
    for b, block in enumerate(layout.blocks):
        for cell in block:
            found = cell_levels(cell)
            if found is None or set(found) != set(names):
                raise UsageError(
                    f"cell {cell!r} does not spell one level of each of {', '.join(names)}",
                    hint="Name cells FACTOR-LEVEL joined by dots, e.g. page-1g.prealloc-on",
                )
            try:
                rows.append([levels[i].index(found[f]) for i, f in enumerate(names)])
            except ValueError:
                raise UsageError(
                    f"cell {cell!r} has a level the factors do not list",
                    hint="List every level of each factor",
                ) from None
            block_ids.append(b)
    codes = np.array(rows, dtype=int)
    for i, f in enumerate(names):
        if len(set(codes[:, i].tolist())) < 2:
            raise UsageError(
                f"factor {f!r} takes one level in the cells that run",
                hint="Cross two or more levels of every factor",
            )
    block_index = np.array(block_ids) if len(layout.blocks) > 1 else None
    coded = Coded(names, levels, codes, block_index)
    # a term confounded with the blocks (a factor of the runs) is not sized within them
    terms, dropped, confounded = estimable_terms(coded, all_terms(names))
    dropped = dropped + confounded
    if not terms:
        raise UsageError(
            "every factor is confounded with the blocks (each block holds one level of each)",
            hint="Run several cells in a block (pair blocks)",
        )
    parts = [np.ones((len(codes), 1))]
    if block_index is not None:
        parts.append(sum_columns(block_index, len(layout.blocks)))
    spans: dict[Term, tuple[int, int]] = {}
    width = sum(p.shape[1] for p in parts)
    for term in terms:
        columns = term_columns(coded, codes, term)
        spans[term] = (width, width + columns.shape[1])
        width += columns.shape[1]
        parts.append(columns)
    x = np.hstack(parts)
    rank = int(np.linalg.matrix_rank(x))
    if rank < x.shape[1]:  # _estimable keeps the columns full rank; a change there would show
        raise AssertionError("the factorial's design matrix is not of full rank")
    inverse = np.linalg.inv(x.T @ x)
    contrasts: dict[Term, list[tuple[str, float]]] = {}
    for term in terms:
        start, stop = spans[term]
        reported: list[tuple[str, float]] = []
        for combo in reported_levels(coded, term):
            c = np.zeros(x.shape[1])
            row = np.zeros((1, len(names)), dtype=int)  # the term's levels; the rest unread
            for f, j in zip(term, combo, strict=True):
                row[0, names.index(f)] = j
            c[start:stop] = term_columns(coded, row, term)[0]
            label = ":".join(levels[names.index(f)][j] for f, j in zip(term, combo, strict=True))
            reported.append((label, float(c @ inverse @ c)))
        contrasts[term] = reported
    return _Model(rank, contrasts, tuple(dropped))


def contrast_power(
    n: int, variance: float, effect_log: float, sd_log: float, units: int, rank: int,
    family: int, confidence: float, autocorrelation: float = 0.0,
) -> float:  # fmt: skip
    """P(compare's interval of one reported effect lies wholly on its side of 1) at n samples
    per cell per block; ``variance`` is c'(X'X)⁻¹c with one sample per cell per block."""
    df = n * units - rank
    if df < 1:
        return 0.0
    crit = float(stats.t.ppf(1 - (1 - confidence) / (2 * family), df))
    f = variance_factor(n, autocorrelation)
    ncp = abs(effect_log) / (sd_log * math.sqrt(variance / n))
    value = float(stats.nct.sf(crit / math.sqrt(f), df, ncp / math.sqrt(f)))
    if math.isnan(value):  # scipy's noncentral t fails far out; the normal limit holds there
        value = float(stats.norm.sf((crit - ncp) / math.sqrt(f)))
    return value


def _smallest_n(reaches: Callable[[int], bool]) -> int:
    """The smallest n ≥ 2 at which ``reaches`` holds (it only ever turns true)."""
    found = smallest_holding(reaches, start=2, floor=2, cap=MAX_N)
    if found is None:
        raise UsageError(
            f"the effect needs more than {MAX_N:,} samples per cell per block",
            hint="Plan for a larger --effect, a lower --confidence or --power",
        )
    return found


def effect_ratio(effect: float) -> float:
    """``effect`` checked as a ratio: positive, finite and not 1 (no effect to find)."""
    if not 0 < effect < math.inf or math.isclose(effect, 1.0, rel_tol=0, abs_tol=1e-12):
        raise UsageError(
            f"effect {effect:g} is no effect to plan for: give the ratio to find, above 0 and"
            " not 1",
            hint="e.g. --effect 5% (a ratio of 1.05) or --effect 0.95",
        )
    return effect


def plan_factorial(
    layout: Layout,
    effect: float,
    sd_log: float,
    confidence: float = 0.9999,
    power: float = 0.9,
    *,
    terms: Sequence[str] | None = None,
    correction: str = "bonferroni",
    autocorrelation: float = 0.0,
) -> FactorialPlan:
    """The samples per cell per block at which compare finds each of ``terms`` (default: every
    main effect it can estimate) of size ``effect`` (a ratio, 1.05 = 5 %), with power
    ``power`` and its intervals at ``confidence`` for the family (``correction`` bonferroni,
    as compare; or none), given the residual sd on the log scale."""
    level = check_confidence(confidence)
    effect = effect_ratio(effect)
    if not 0 < power < 1:
        raise UsageError(f"power {power:g} must lie between 0 and 1", hint="e.g. --power 0.9")
    if not 0 < sd_log < math.inf:
        raise UsageError(f"sd {sd_log:g} must be above 0", hint="e.g. --cv 2%")
    if not -1 < autocorrelation < 1:
        raise UsageError(
            f"autocorrelation {autocorrelation:g} must lie strictly between -1 and 1",
            hint="It is the lag-1 autocorrelation of a pilot run (lab compare shows it)",
        )
    if correction not in ("bonferroni", "none"):
        raise UsageError(f"unknown correction {correction!r}", hint="bonferroni or none")
    model = _model(layout)
    fitted = list(model.contrasts)
    names = {term_name(t): t for t in fitted}
    mains: list[Term] = [t for t in fitted if len(t) == 1]
    wanted: list[Term]
    if terms is None:
        wanted = mains
    else:
        wanted = []
        for name in terms:  # "page:prealloc" or "prealloc:page" (or "AB" for A and B)
            parts = set(name.split(":")) if ":" in name or name in names else set(name)
            term = next((t for t in fitted if set(t) == parts), None)
            if term is None:
                lost = any(set(t) == parts for t in model.not_estimable)
                why = "is not estimable in these cells" if lost else "is no term of the design"
                raise UsageError(f"{name} {why}", hint=f"Plan for one of {', '.join(names)}")
            if term not in wanted:
                wanted.append(term)
    family = sum(len(model.contrasts[t]) for t in fitted) if correction == "bonferroni" else 1
    r = max(0.0, autocorrelation)
    units = layout.units
    plans = []
    for term in wanted:
        sizes = [len(dict(layout.factors)[f]) for f in term]
        q = math.log(effect) / (2 if all(s == 2 for s in sizes) else 1)
        variance = max(v for _, v in model.contrasts[term])

        def p_at(k: int, v: float = variance, q: float = q) -> float:
            return contrast_power(k, v, q, sd_log, units, model.rank, family, level, r)

        def reaches(k: int, p_at: Callable[[int], float] = p_at) -> bool:
            return p_at(k) >= power

        n = _smallest_n(reaches)
        curve = tuple((k, p_at(k)) for k in sorted({max(2, round(n * f)) for f in CURVE}))
        plans.append(
            TermPlan(
                term_name(term),
                tuple(label for label, _ in model.contrasts[term]),
                abs(q),
                variance,
                n,
                p_at(n),
                n * units - model.rank,
                curve,
            )
        )
    cells = layout.cells
    counts = tuple(sum(c in block for block in layout.blocks) for c in cells)
    return FactorialPlan(
        factors=layout.factors, cells=cells, cell_blocks=counts, blocks=len(layout.blocks),
        units=units, rank=model.rank, family=family, reported=tuple(term_name(t) for t in fitted),
        not_estimable=tuple(term_name(t) for t in model.not_estimable), effect=effect,
        sd_log=sd_log, confidence=level, correction=correction, power=power,
        autocorrelation=autocorrelation, terms=tuple(plans),
    )  # fmt: skip


def layout_of(
    factors: Mapping[str, Sequence[str]] | Sequence[tuple[str, Sequence[str]]],
    blocks: Sequence[Sequence[str]],
) -> Layout:
    """A :class:`Layout` from factor -> levels (low first) and the blocks' cells."""
    pairs = factors.items() if isinstance(factors, Mapping) else factors
    return Layout(tuple((f, tuple(v)) for f, v in pairs), tuple(tuple(b) for b in blocks))
