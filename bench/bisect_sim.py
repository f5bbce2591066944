"""Simulation: how often ``lab.stats.bisection`` names the right commit, and at what cost.

``--commits`` commits (GOOD the first, BAD the last), one step of ``--step`` (3 %) in the
mean time at a commit drawn at random among the others, every sample normal with a CV of
``--cv`` (2 %). Each bisection measures pairs (candidate, GOOD) as a twin study would. It
prints the share of bisections that named the right commit with its Monte Carlo standard
error, the wrong and the open (skipped commits) ones, the pairs measured (mean, max), and the
same for asv-style single-value bisection on the same series: one sample per commit, GOOD
and BAD measured once, a commit bad when its sample is above the midpoint of those two.

    python bench/bisect_sim.py [--bisections 1000] [--commits 1024] [--step 0.03] [--cv 0.02]
                               [--alpha 0.05] [--cap 300] [--batch-size auto|N] [--seed 1]
                               [--rho 0]

``--rho`` makes the pairs' log ratios AR(1) within a step (a drifting host), to see what the
autocorrelation guard costs and saves.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from lab.stats.bisection import BisectError, BisectSettings, bisect


def simulate(args: argparse.Namespace, rng: np.random.Generator) -> tuple[str, int, bool]:
    """One bisection: ('right' | 'wrong' | 'open' | 'error', pairs, asv named it right)."""
    commits = [f"c{i:05d}" for i in range(args.commits)]
    first_bad = int(rng.integers(1, args.commits))
    slow = 1.0 + args.step

    def mean_of(commit: str) -> float:
        return slow if int(commit[1:]) >= first_bad else 1.0

    def measure(commit: str, n: int) -> list[tuple[float, float]]:
        mu = mean_of(commit)
        noise = rng.normal(0.0, args.cv, size=(n, 2))
        if args.rho:  # an AR(1) drift shared by both twins' ratio
            e = rng.normal(0.0, args.cv * math.sqrt(1 - args.rho**2), n)
            drift = np.empty(n)
            prev = rng.normal(0.0, args.cv)
            for i in range(n):
                prev = args.rho * prev + e[i]
                drift[i] = prev
            noise[:, 0] += drift
        return [(mu * (1 + c), 1.0 * (1 + g)) for c, g in noise]

    settings = BisectSettings(alpha=args.alpha, cap=args.cap, batch_size=args.batch_size)
    try:
        result = bisect(commits, measure, settings)
    except BisectError:
        outcome, pairs = "error", 0
    else:
        pairs = result.pairs
        if result.first_bad is None:
            outcome = "open"
        else:
            outcome = "right" if result.first_bad == commits[first_bad] else "wrong"

    # asv-style: one sample per commit against the midpoint of GOOD's and BAD's single samples
    good = 1.0 + rng.normal(0.0, args.cv)
    bad = slow * (1 + rng.normal(0.0, args.cv))
    middle = (good + bad) / 2
    lo, hi = 0, args.commits - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        value = mean_of(commits[mid]) * (1 + rng.normal(0.0, args.cv))
        lo, hi = (lo, mid) if value > middle else (mid, hi)
    return outcome, pairs, hi == first_bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bisections", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=1024)
    parser.add_argument("--step", type=float, default=0.03)
    parser.add_argument("--cv", type=float, default=0.02)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--cap", type=int, default=300)
    parser.add_argument("--batch-size", default="auto")
    parser.add_argument("--rho", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.batch_size = None if args.batch_size == "auto" else int(args.batch_size)
    rng = np.random.default_rng(args.seed)
    counts = {"right": 0, "wrong": 0, "open": 0, "error": 0}
    pairs: list[int] = []
    asv_right = 0
    t0 = time.perf_counter()
    for _ in range(args.bisections):
        outcome, used, asv = simulate(args, rng)
        counts[outcome] += 1
        pairs.append(used)
        asv_right += asv
    seconds = time.perf_counter() - t0
    r = args.bisections
    probes = math.ceil(math.log2(args.commits - 1))

    def share(k: int) -> str:
        p = k / r
        return f"{p * 100:5.1f} % ± {math.sqrt(p * (1 - p) / r) * 100:.1f}"

    batch = "auto" if args.batch_size is None else args.batch_size
    print(
        f"{r} bisections of {args.commits} commits, a {args.step * 100:g} % step, CV"
        f" {args.cv * 100:g} %, rho {args.rho:g}; alpha {args.alpha:g}, cap {args.cap} pairs"
        f" a step, batch size {batch} ({seconds:.0f} s)"
    )
    print(f"  sequential: right {share(counts['right'])} (MC se), wrong {share(counts['wrong'])},"
          f" open (skips) {share(counts['open'])}, GOOD/BAD not told apart"
          f" {share(counts['error'])}")  # fmt: skip
    used = np.array(pairs)
    print(
        f"    pairs a bisection: mean {used.mean():.0f} (samples {2 * used.mean():.0f}),"
        f" median {np.median(used):.0f}, max {used.max()}"
    )
    print(f"  asv-style single value: right {share(asv_right)}, samples a bisection {probes + 2}")


if __name__ == "__main__":
    main()
