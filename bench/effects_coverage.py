"""Factorial effects' intervals against simulation (issue 41): do they cover the true effects
as often as they say?

Three designs with known effects, each simulated ``--designs`` times (1,000 by default):

- a full 2^3 (A, B, C), 3 replications a cell;
- a mixed 3 × 2 (thp always/madvise/never × prealloc off/on), 3 replications a cell;
- the 2^(4−1) fraction with D = ABC, 2 replications a run (its aliased partners are zero in
  the truth, so each estimable term's true value is its own).

Normal noise checks the intervals in the metric's unit (``ci``), log-normal noise (a
multiplicative truth) the ratio intervals (``ratio_ci``). Printed: each term's coverage with
``correction="none"`` at 90 % and 95 %, and the family-wise coverage (every interval of the
design at once) with ``"bonferroni"`` (and, for contrast, with ``"none"``). The true effects
come from numpy's ANOVA decomposition of the true cell means (inclusion–exclusion over
marginal means), not from the code under test. About 10 minutes on one core.

    python bench/effects_coverage.py [--designs 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))  # this checkout's lab

from lab.stats.designs import Design, fractional, full_factorial, two_level  # noqa: E402
from lab.stats.effects import fit_effects  # noqa: E402

CONFIDENCES = (0.90, 0.95)


@dataclass(frozen=True)
class Case:
    name: str
    design: Design
    replications: int
    truth: np.ndarray  # true value per run of the design (normal case: the mean)
    sigma: float
    log_truth: np.ndarray  # true log-mean per run (log-normal case)
    log_sigma: float


def _codes(design: Design) -> np.ndarray:
    return np.array(design.runs)


def true_effects(design: Design, cell_means: np.ndarray) -> dict[tuple[str, str], float]:
    """(term, level) -> the sum-to-zero effect of the full factorial's true cell means, by
    inclusion–exclusion over marginal means; for a fraction, the coefficient of each ±1 term."""
    sizes = [len(levels) for levels in design.levels]
    out: dict[tuple[str, str], float] = {}
    if len(design.runs) < math.prod(sizes):  # a two-level fraction: regress on ±1 columns
        x = 2 * _codes(design) - 1
        for term in design.estimable_terms():
            col = np.prod(x[:, [design.factors.index(f) for f in term]], axis=1)
            out[_name(term), ":".join(["+"] * len(term))] = float(col @ cell_means / len(col))
        return out
    grid = np.zeros(sizes)
    for run, mu in zip(design.runs, cell_means, strict=True):
        grid[run] = mu
    axes = range(len(sizes))
    for order in range(1, len(sizes) + 1):
        for term_axes in itertools.combinations(axes, order):
            effect = np.zeros([sizes[a] for a in term_axes])
            for k in range(order + 1):
                for subset in itertools.combinations(term_axes, k):
                    other = tuple(a for a in axes if a not in subset)
                    marginal = grid.mean(axis=other) if other else grid
                    shape = [sizes[a] if a in subset else 1 for a in term_axes]
                    effect = effect + (-1) ** (order - k) * np.reshape(marginal, shape)
            term = tuple(design.factors[a] for a in term_axes)
            for combo in itertools.product(*(range(sizes[a]) for a in term_axes)):
                if any(sizes[a] == 2 and c == 0 for a, c in zip(term_axes, combo, strict=True)):
                    continue  # reported at a two-level factor's high level only
                label = ":".join(design.levels[a][c] for a, c in zip(term_axes, combo, strict=True))
                out[_name(term), label] = float(effect[combo])
    return out


def _factors(name: str) -> list[str]:
    return name.split(":") if ":" in name else list(name) if name.isupper() else [name]


def _name(term: tuple[str, ...]) -> str:
    return "".join(term) if all(len(f) == 1 for f in term) else ":".join(term)


def cases() -> list[Case]:
    full = two_level("ABC")
    x = 2 * _codes(full) - 1
    a, b, c = x.T
    mixed = full_factorial({"thp": ("always", "madvise", "never"), "prealloc": ("off", "on")})
    mixed_means = np.array([100.0, 104, 97, 103, 110, 99])  # runs: thp fastest, then prealloc
    half = fractional("ABC", ["D = ABC"])
    h = 2 * _codes(half) - 1
    return [
        Case(
            "full 2^3, r = 3",
            full,
            3,
            100 + 5 * a - 3 * b + 2 * c + 1.5 * a * b - 1 * b * c + 0.5 * a * b * c,
            4.0,
            np.log(100) + 0.05 * a - 0.03 * b + 0.02 * c + 0.015 * a * b - 0.01 * b * c,
            0.04,
        ),
        Case(
            "mixed 3 × 2, r = 3",
            mixed,
            3,
            mixed_means,
            3.0,
            np.log(mixed_means),
            0.03,
        ),
        Case(
            "fraction 2^(4-1), D = ABC, r = 2",
            half,
            2,
            50 + 4 * h[:, 0] - 3 * h[:, 1] + 2 * h[:, 3] + 1.5 * h[:, 0] * h[:, 1],
            2.0,
            np.log(50)
            + 0.04 * h[:, 0]
            - 0.03 * h[:, 1]
            + 0.02 * h[:, 3]
            + 0.015 * h[:, 0] * h[:, 1],
            0.03,
        ),
    ]


def samples(case: Case) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    cells = case.design.cells()
    factors = {f: [cell[f] for cell in cells for _ in range(case.replications)]
               for f in case.design.factors}  # fmt: skip
    levels = {f: list(lv) for f, lv in zip(case.design.factors, case.design.levels, strict=True)}
    return factors, levels


def simulate(case: Case, designs: int, rng: np.random.Generator) -> None:
    factors, levels = samples(case)
    truth = true_effects(case.design, case.truth)
    log_truth = true_effects(case.design, case.log_truth)
    ratio_truth = {
        (term, label): math.exp((2 if all(len(levels[f]) == 2 for f in _factors(term)) else 1) * v)
        for (term, label), v in log_truth.items()
    }  # exp(2q) for a term of two-level factors, exp(q) otherwise (lab.stats.effects)
    mean = np.repeat(case.truth, case.replications)
    log_mean = np.repeat(case.log_truth, case.replications)
    rows = list(truth)
    # hits[(scale, correction, confidence)] -> per-row cover counts, and all-rows counts
    hits: dict[tuple[str, str, float], np.ndarray] = {}
    family: dict[tuple[str, str, float], int] = {}
    for _ in range(designs):
        y = mean + rng.normal(0, case.sigma, len(mean))
        ylog = np.exp(log_mean + rng.normal(0, case.log_sigma, len(log_mean)))
        for scale, values, target, pick in (
            ("unit", y, truth, _ci),
            ("ratio", ylog, ratio_truth, _ratio_ci),
        ):
            for correction in ("none", "bonferroni"):
                for level in CONFIDENCES:
                    fit = fit_effects(values, factors, levels=levels, confidence=level,
                                      correction=correction)  # fmt: skip
                    got = {(e.term, e.level): pick(e) for e in fit.effects}
                    assert set(got) == set(rows), (set(got), set(rows))
                    cover = np.array([got[r][0] <= target[r] <= got[r][1] for r in rows])
                    key = (scale, correction, level)
                    hits[key] = hits.get(key, np.zeros(len(rows))) + cover
                    family[key] = family.get(key, 0) + int(cover.all())
    print(f"\n{case.name}: {designs:,} designs, {len(mean)} samples each, {len(rows)} intervals")
    print(f"{'term':>20} {'level':>16} | unit 90 %  95 % | ratio 90 %  95 %   (correction none)")
    for i, (term, label) in enumerate(rows):
        cells = [100 * hits["unit", "none", c][i] / designs for c in CONFIDENCES]
        cells += [100 * hits["ratio", "none", c][i] / designs for c in CONFIDENCES]
        print(f"{term:>20} {label:>16} |   {cells[0]:5.1f} {cells[1]:5.1f} |     "
              f"{cells[2]:5.1f} {cells[3]:5.1f}")  # fmt: skip
    for correction in ("bonferroni", "none"):
        cells = [100 * family[s, correction, c] / designs for s in ("unit", "ratio")
                 for c in CONFIDENCES]  # fmt: skip
        print(f"{'all at once':>20} {correction:>16} |   {cells[0]:5.1f} {cells[1]:5.1f} |     "
              f"{cells[2]:5.1f} {cells[3]:5.1f}")  # fmt: skip


def _ci(effect: object) -> tuple[float, float]:
    return effect.ci  # type: ignore[attr-defined, no-any-return]


def _ratio_ci(effect: object) -> tuple[float, float]:
    return effect.ratio_ci  # type: ignore[attr-defined, no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--designs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    started = time.monotonic()
    for case in cases():
        simulate(case, args.designs, rng)
    for level in CONFIDENCES:
        error = 100 * math.sqrt(level * (1 - level) / args.designs)
        print(f"\nMonte Carlo standard error at {level:.0%}: ±{error:.2f} points")
    print(f"{time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
