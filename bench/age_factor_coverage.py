"""The host's age as a factor (issue 42): do the intervals ``lab compare`` gives a study with
``age`` in its ``[factors]`` cover the true effects, when runs differ by more than their
iterations do?

Every sample of a run is at one host age, so the age is confounded with the run, the block
of ``lab compare``'s fit (lab.app.effects): its interactions are fitted within runs, its main
effect from the runs' means (lab.stats.effects.fit_effects). This simulates that fit for two
designs as ``lab study run`` runs them:

- ``pair``: page × age on one pair (page-thp, page-1g), the runs fresh, f80, f80, fresh;
- ``cells``: page × prealloc's three cells (page-1g.prealloc-off left out), every pair of
  them a block, each block run at fresh and at f80 (six runs).

Each run gets an offset of its own, N(0, τ) (a boot, the host's state), each iteration
N(0, 1) noise, ``--n`` iterations per guest; the truth is additive in the metric's unit
(thp aged +6, 1g aged +1: q_page:age = −1.25 in ``pair``). Printed: the share of
``--sims`` simulated studies whose 95 % interval (correction none) covers the true page ×
age interaction and the true age main effect, for τ = 0 and τ > 0. About a minute on one core.

    python bench/age_factor_coverage.py [--sims 400] [--n 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))  # this checkout's lab

from lab.stats.effects import fit_effects  # noqa: E402

# true means per (page, prealloc, age): additive, with page × age
BASE = {("thp", "off"): 100.0, ("thp", "on"): 98.0, ("1g", "on"): 90.0}
AGED = {"thp": 6.0, "1g": 1.0}  # what f80 adds to each page level
PAIRS = [(("thp", "off"), ("thp", "on")), (("thp", "off"), ("1g", "on")),
         (("thp", "on"), ("1g", "on"))]  # fmt: skip
DESIGNS = {  # (pair, host age) per run, in the order lab study run runs them (ABBA)
    "pair": [(PAIRS[2], age) for age in ("fresh", "f80", "f80", "fresh")],
    "cells": [
        (pair, age)
        for i, pair in enumerate(PAIRS)
        for age in (("fresh", "f80") if i % 2 == 0 else ("f80", "fresh"))
    ],
}


def truth(design: str) -> dict[str, float]:
    """The true page × age interaction and age main effect (sum-to-zero, at 1g and f80) of
    the cells the design runs: page:age = (1g's aging − thp's aging) / 4; age = the mean
    aging over the page levels / 2 (prealloc adds nothing to either)."""
    del design
    return {"page:age": (AGED["1g"] - AGED["thp"]) / 4, "age": (AGED["1g"] + AGED["thp"]) / 4}


def simulate(design: str, tau: float, n: int, rng: np.random.Generator) -> dict[str, bool]:
    values, page, prealloc, age, blocks = [], [], [], [], []
    for run, (pair, level) in enumerate(DESIGNS[design]):
        offset = rng.normal(0, tau)
        label = f"run {run}"  # the block: the run (age is confounded with it)
        for p, a in pair:
            mean = BASE[(p, a)] + (AGED[p] if level == "f80" else 0.0) + offset
            values.append(mean + rng.normal(0, 1.0, n))
            page += [p] * n
            prealloc += [a] * n
            age += [level] * n
            blocks += [label] * n
    factors = {"page": page, "age": age}
    if design == "cells":
        factors["prealloc"] = prealloc
    fit = fit_effects(
        np.concatenate(values), factors,
        levels={"page": ["thp", "1g"], "age": ["fresh", "f80"], "prealloc": ["off", "on"]},
        blocks=blocks if len(set(blocks)) > 1 else None, confidence=0.95, correction="none",
    )  # fmt: skip
    true = truth(design)
    found = {}
    for effect in fit.effects:
        if effect.term in true:
            low, high = effect.ci
            found[effect.term] = low <= true[effect.term] <= high
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=400)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(f"{args.sims} simulated studies each, {args.n} iterations per guest and run,"
          " iteration noise sd 1; coverage of 95 % intervals (nominal 0.95):")  # fmt: skip
    print(f"{'design':8} {'run sd τ':>8} {'page:age':>9} {'age':>9}")
    for design in DESIGNS:
        for tau in (0.0, 0.5, 2.0):
            hits: dict[str, list[bool]] = {"page:age": [], "age": []}
            for _ in range(args.sims):
                for term, covered in simulate(design, tau, args.n, rng).items():
                    hits[term].append(covered)
            cover = {t: float(np.mean(h)) if h else float("nan") for t, h in hits.items()}
            print(f"{design:8} {tau:8.1f} {cover['page:age']:9.3f} {cover['age']:9.3f}")
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
