"""Simulation: how often the interval of B − A covers the truth when boots differ.

Twins with no true difference, each arm ``--boots`` boots of ``--per-boot`` iterations, the
samples' variance split between boots (ICC) and within them. For each ICC it prints the
share of ``--studies`` simulated studies whose 95 % interval covers 0:

- **iterations**: Welch's interval on every sample, as if they were independent;
- **boots**: ``lab.stats.boots`` (Welch on the boot means), as ``lab compare`` reads a run
  with two boots or more per arm;
- **one boot**: Welch on the iterations of one boot per arm, which is all a run without
  reboots has: it covers the difference between *those two boots*, and misses the twins'.

    python bench/stat_boots.py [--studies 4000] [--boots 6] [--per-boot 40] [--seed 1]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from lab.stats.boots import boot_difference

LEVEL = 0.95
ICCS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5)


def welch_covers(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per study (rows), whether Welch's 95 % interval of mean(b) − mean(a) holds 0."""
    n_a, n_b = a.shape[1], b.shape[1]
    va, vb = a.var(axis=1, ddof=1) / n_a, b.var(axis=1, ddof=1) / n_b
    df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    half = stats.t.ppf(0.5 + LEVEL / 2, df) * np.sqrt(va + vb)
    return np.abs(b.mean(axis=1) - a.mean(axis=1)) <= half


def coverage(
    rng: np.random.Generator, icc: float, studies: int, boots: int, per_boot: int
) -> tuple[float, float, float]:
    """(iterations, boots, one boot) coverage at this ICC."""
    effects = rng.normal(0, math.sqrt(icc), (studies, 2, boots, 1))
    x = 100 + effects + rng.normal(0, math.sqrt(1 - icc), (studies, 2, boots, per_boot))
    flat = x.reshape(studies, 2, boots * per_boot)
    iterations = welch_covers(flat[:, 0], flat[:, 1]).mean()
    one = welch_covers(x[:, 0, 0], x[:, 1, 0]).mean()
    means = x.mean(axis=3)
    covered = 0
    for r in range(studies):
        found = boot_difference(means[r, 0], means[r, 1], LEVEL)
        covered += found.diff_ci[0] <= 0 <= found.diff_ci[1]
    return float(iterations), covered / studies, float(one)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=4000)
    parser.add_argument("--boots", type=int, default=6)
    parser.add_argument("--per-boot", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"coverage of 95 % intervals of B − A (no true difference), {args.studies} studies,"
          f" {args.boots} boots × {args.per_boot} iterations per arm")  # fmt: skip
    print(f"{'ICC':>5}  {'iterations':>10}  {'boots':>6}  {'one boot':>8}")
    for icc in ICCS:
        it, bt, one = coverage(rng, icc, args.studies, args.boots, args.per_boot)
        print(f"{icc:5.2f}  {it * 100:9.1f}%  {bt * 100:5.1f}%  {one * 100:7.1f}%")


if __name__ == "__main__":
    main()
