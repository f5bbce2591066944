"""Simulation: the power ``lab plan`` promises a factorial against what ``lab compare`` delivers.

For each design (2×2, 3×2 and 2^3 full factorials, and the lab's own page × prealloc, whose
1 GiB-on-demand cell is left out) run in pair blocks as ``lab study run`` runs them (every pair
of cells once, :func:`lab.stats.pairblocks.pair_blocks`), it plans the samples per cell per
block (:func:`lab.stats.factorialplan.plan_factorial`) for every main effect (and, where
named, an interaction) of ratio ``--effect`` at ``--confidence`` (Bonferroni over the effects
compare reports) and ``--power``, residual sd ``--cv`` on the log scale. Then it simulates
``--studies`` studies at the planned n: each block its own offset (a boot, the host's state;
sd 5 %), each planned term's true effect exactly the ratio planned for (a three-level factor:
its levels at 1/E, 1, E, so its high level's reported ratio is E), noise lognormal, with lag-1
r within each cell-in-block run where the design says so. Each study is fitted with
:func:`lab.stats.effects.fit_effects` itself (compare's fit: block + every estimable term,
Bonferroni intervals) and a term counts as found when its ratio interval lies above 1 at the
level planned for. It prints per design and term: n, promised P, delivered P with its Monte
Carlo SE, and the same at half the planned n.

    python bench/factorial_plan.py [--studies 400] [--effect 1.02] [--cv 0.02] [--seed 41]
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import signal

from lab.core.cells import cell_levels, cell_name
from lab.stats.effects import fit_effects
from lab.stats.factorialplan import (
    FactorialPlan,
    Layout,
    contrast_power,
    layout_of,
    plan_factorial,
    sd_from_cv,
)
from lab.stats.pairblocks import pair_blocks

BLOCK_SD = 0.05  # between blocks, log scale: what the block fixed effect takes out


@dataclass(frozen=True)
class Case:
    name: str
    factors: dict[str, list[str]]
    terms: list[str] | None = None  # None: the main effects
    left_out: tuple[str, ...] = ()  # cells that do not run
    r: float = 0.0  # lag-1 autocorrelation within a cell-in-block run


CASES = [
    Case("2x2", {"A": ["lo", "hi"], "B": ["lo", "hi"]}),
    Case("2x2 + AB", {"A": ["lo", "hi"], "B": ["lo", "hi"]}, ["A", "B", "A:B"]),
    Case("3x2", {"A": ["a1", "a2", "a3"], "B": ["lo", "hi"]}),
    Case("3x2, A only", {"A": ["a1", "a2", "a3"], "B": ["lo", "hi"]}, ["A"]),
    Case("2^3", {"A": ["lo", "hi"], "B": ["lo", "hi"], "C": ["lo", "hi"]}),
    Case(
        "page x prealloc (lab)",
        {"page": ["thp", "1g"], "prealloc": ["off", "on"]},
        left_out=("page-1g.prealloc-off",),
    ),
    Case("2x2, r = 0.3", {"A": ["lo", "hi"], "B": ["lo", "hi"]}, r=0.3),
]


def layout(case: Case) -> Layout:
    names = list(case.factors)
    cells = [cell_name(zip(names, combo, strict=True))
             for combo in itertools.product(*case.factors.values())]  # fmt: skip
    cells = [c for c in cells if c not in case.left_out]
    return layout_of(case.factors, pair_blocks(cells, seed=41))


def truth(case: Case, plan: FactorialPlan, effect: float) -> dict[str, float]:
    """cell -> its true log mean: every planned term at the ratio planned for."""
    log_e = math.log(effect)
    means = {}
    for cell in plan.cells:
        levels = cell_levels(cell)
        assert levels is not None
        value = 0.0
        for term in plan.terms:
            parts = term.term.split(":") if ":" in term.term else list(term.term)
            if not all(p in case.factors for p in parts):
                parts = [term.term]
            x = 1.0
            for f in parts:
                order = case.factors[f]
                if len(order) == 2:
                    x *= 1.0 if levels[f] == order[1] else -1.0  # ±1 coding: q = ln(E)/2
                else:
                    x *= order.index(levels[f]) - (len(order) - 1) / 2  # 3 levels: -1, 0, +1
            two = all(len(case.factors[f]) == 2 for f in parts)
            value += x * (log_e / 2 if two else log_e)
        means[cell] = value
    return means


def simulate(
    case: Case, lay: Layout, plan: FactorialPlan, n: int, studies: int, sd: float, effect: float,
    confidence: float, rng: np.random.Generator,
) -> dict[str, float]:  # fmt: skip
    """term -> the share of studies in which compare's interval finds it at its planned level."""
    means = truth(case, plan, effect)
    found = {t.term: 0 for t in plan.terms}
    names = list(case.factors)
    units = [(b, cell) for b, block in enumerate(lay.blocks) for cell in block]
    levels = {f: [cell_levels(c)[f] for _, c in units for _ in range(n)] for f in names}  # type: ignore[index]
    blocks = [str(b) for b, _ in units for _ in range(n)]
    base = np.repeat([means[c] for _, c in units], n)
    block_of = np.repeat([b for b, _ in units], n)
    wanted = {t.term: t.levels[-1] for t in plan.terms}  # the high level, as truth() set it
    for _ in range(studies):
        noise = rng.standard_normal((len(units), n))
        if case.r > 0:
            start = noise[:, :1]
            rest = signal.lfilter([math.sqrt(1 - case.r**2)], [1.0, -case.r], noise[:, 1:],
                                  axis=1, zi=case.r * start)[0]  # fmt: skip
            noise = np.hstack([start, rest])
        offsets = rng.normal(0, BLOCK_SD, len(lay.blocks))
        y = np.exp(base + offsets[block_of] + sd * noise.ravel())
        fit = fit_effects(y, levels, levels=case.factors, blocks=blocks, confidence=confidence)
        for e in fit.effects:
            if wanted.get(e.term) == e.level and e.ratio_ci is not None and e.ratio_ci[0] > 1:
                found[e.term] += 1
    return {t: k / studies for t, k in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=400)
    parser.add_argument("--effect", type=float, default=1.02)
    parser.add_argument("--cv", type=float, default=0.02)
    parser.add_argument("--confidence", type=float, default=0.99)
    parser.add_argument("--power", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--only", metavar="TEXT", help="only the designs whose name holds TEXT")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    sd = sd_from_cv(args.cv)
    print(f"effect ×{args.effect:g}, CV {args.cv:g} (σ_log {sd:.5f}), confidence"
          f" {args.confidence:g} (Bonferroni), power {args.power:g}, {args.studies} studies"
          " per row, fitted with lab.stats.effects.fit_effects")  # fmt: skip
    print(f"{'design':<24}{'cells':>6}{'blocks':>7}{'m':>3}  {'term':<10}{'n':>5}"
          f"{'promised':>10}{'delivered':>11}{'± SE':>7}"
          "   at n/2: promised, delivered")  # fmt: skip
    for case in CASES:
        if args.only and args.only not in case.name:
            continue
        start = time.perf_counter()
        lay = layout(case)
        plan = plan_factorial(lay, args.effect, sd, args.confidence, args.power,
                              terms=case.terms, autocorrelation=case.r)  # fmt: skip
        rank = plan.rank
        delivered = simulate(case, lay, plan, plan.n, args.studies, sd, args.effect,
                             args.confidence, rng)  # fmt: skip
        half = max(2, plan.n // 2)
        delivered_half = simulate(case, lay, plan, half, args.studies, sd, args.effect,
                                  args.confidence, rng)  # fmt: skip
        for t in plan.terms:
            p = contrast_power(plan.n, t.variance, t.effect_log, sd, plan.units, rank,
                               plan.family, plan.confidence, case.r)  # fmt: skip
            p_half = contrast_power(half, t.variance, t.effect_log, sd, plan.units, rank,
                                    plan.family, plan.confidence, case.r)  # fmt: skip
            got = delivered[t.term]
            se = math.sqrt(max(got * (1 - got), 1e-9) / args.studies)
            print(f"{case.name:<24}{len(plan.cells):>6}{plan.blocks:>7}{plan.family:>3}  "
                  f"{t.term:<10}{plan.n:>5}{p:>10.3f}{got:>11.3f}{se:>7.3f}   "
                  f"n={half}: {p_half:.3f}, {delivered_half[t.term]:.3f}")  # fmt: skip
        print(f"{'':<24}({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
