"""Simulation: do the ratio intervals of ``lab.stats.changes`` hold after the search chose them?

Histories of 200 versions × ``--samples`` samples (CV 2 %): flat ones (any change point found
is a false one, its true ratio 1) and ones with a single shift of ``--shift``. For each change
point found it checks whether the 95 % interval covers the true ratio of the means of the
segments either side, for the intervals as ``lab.stats.changes`` computes them (located on
each version's even samples, measured on its odd ones) and for the same Fieller–Welch interval
on every sample, located and measured on the same data (what a naive tool does).

    python bench/change_intervals.py [--histories 300] [--samples 4] [--shift 0.03] [--seed 1]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from lab.stats.changes import change_points, fieller_welch, locate


def true_ratio(level: np.ndarray, before: tuple[int, int], after: tuple[int, int]) -> float:
    return float(level[after[0] : after[1]].mean() / level[before[0] : before[1]].mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=300)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--shift", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    for shifted in (False, True):
        split_cover = split_n = naive_cover = naive_n = 0
        for _ in range(args.histories):
            level = np.ones(200)
            if shifted:
                level[int(rng.integers(20, 180)) :] *= 1 + args.shift
            x = level[:, None] * (1 + rng.normal(0, 0.02, (200, args.samples)))
            for c in change_points([(str(i), row) for i, row in enumerate(x)]):
                split_n += 1
                split_cover += (
                    c.ratio_ci[0] <= true_ratio(level, c.before, c.after) <= c.ratio_ci[1]
                )
            cuts = locate(np.median(x, axis=1))
            edges = [0, *cuts, 200]
            for k in range(1, len(edges) - 1):
                before, after = (edges[k - 1], edges[k]), (edges[k], edges[k + 1])
                _, (low, high) = fieller_welch(
                    x[after[0] : after[1]].ravel(), x[before[0] : before[1]].ravel(), 0.95
                )
                naive_n += 1
                naive_cover += low <= true_ratio(level, before, after) <= high
        kind = f"one {args.shift * 100:g} % shift" if shifted else "flat"

        def share(k: int, n: int) -> str:
            if not n:
                return "no change point found"
            p = k / n
            return f"{p * 100:5.1f} % ± {math.sqrt(p * (1 - p) / n) * 100:.1f} of {n}"

        print(f"{args.histories} {kind} histories, 200 versions × {args.samples} samples, CV 2 %:")
        print(f"  split (lab.stats.changes): 95 % interval covers {share(split_cover, split_n)}")
        print(f"  same data (naive):         95 % interval covers {share(naive_cover, naive_n)}")


if __name__ == "__main__":
    main()
