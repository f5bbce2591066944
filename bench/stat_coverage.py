"""The statistics' promises against simulation (issue 32): the figures of README.md's
"Stopping early, honestly" and "Plans and verdicts that keep their promise".

1. ``lab plan``: P(verdict) it promises at its n, and what ``lab compare``'s rule delivers
   on simulated studies of whole samples (20,000 a case).
2. ``--until verdict``: wrong stops with no true difference, AR(1) samples with lag-1 r 0 to
   0.9, no swaps or ``--swap-every`` 1 to 50 (4,000 studies a case, α = 5 % and 1 %).
3. The ratio of means' interval: how often a true change of exactly the threshold is called
   beyond it, for lower- and higher-is-better, n 10 to 30, against the nominal α/2.

The simulations are the unit tests' (tests/unit/test_plan_rule.py,
tests/unit/test_stopping_swaps.py), run larger; a few minutes on two cores.

    python bench/stat_coverage.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))  # this checkout's lab and tests

from lab.stats.difference import ratio_of_means_ci  # noqa: E402
from lab.stats.planning import plan_samples  # noqa: E402
from lab.stats.verdict import Threshold  # noqa: E402
from tests.unit.helpers import ar1  # noqa: E402
from tests.unit.test_plan_rule import MODES, promised, simulated_shares  # noqa: E402
from tests.unit.test_stopping_swaps import blocks, first_stops  # noqa: E402


def plans(studies: int) -> None:
    print(f"1. lab plan: P(verdict) promised at the planned n, and delivered ({studies:,} studies)")
    for mode, (kwargs, direction) in MODES.items():
        plan = plan_samples(**kwargs)  # type: ignore[arg-type]
        limit = kwargs["threshold"]
        threshold = limit if isinstance(limit, Threshold) else Threshold(float(limit))  # type: ignore
        mean = float(kwargs.get("mean", 100.0))  # type: ignore[arg-type]
        shares = simulated_shares(
            plan.n, mean, plan.delta, plan.sd, plan.autocorrelation, threshold,
            plan.confidence, direction, sims=studies, seed=9,
        )  # fmt: skip
        print(f"   {mode}: n = {plan.n}, promised {promised(plan):.3f},"
              f" delivered {shares[plan.verdict]:.3f}")  # fmt: skip


def stops(studies: int) -> None:
    print(f"2. --until verdict, no true difference: wrong stops ({studies:,} studies a case)")
    for alpha in (0.05, 0.01):
        for r in (0.0, 0.5, 0.9):
            cells = []
            for swap in (0, 1, 5, 50):
                iterations = 400 if swap <= 1 else 40 * swap
                rng = np.random.default_rng(int(r * 100) + swap + 7)
                a, b = ar1(rng, r, (studies, iterations)), ar1(rng, r, (studies, iterations))
                if swap:
                    a, b = blocks(a, swap), blocks(b, swap)
                wrong = float((first_stops(a, b, alpha, max(2, a.shape[1] // 2)) > 0).mean())
                cells.append(
                    f"{'no swaps' if not swap else f'swap every {swap}'} {wrong * 100:.1f} %"
                )
            print(f"   α = {alpha * 100:g} %, r = {r}: " + ", ".join(cells))


def ratio(draws: int) -> None:
    print(f"3. ratio interval: a true change of exactly the threshold called beyond it,"
          f" as a multiple of α/2 ({draws:,} studies a case)")  # fmt: skip
    rng = np.random.default_rng(5)
    for level in (0.95, 0.99):
        for n in (10, 20, 30):
            cells = []
            for direction in ("lower", "higher"):
                for cv, theta in ((0.02, 0.01), (0.2, 0.05)):
                    ratio_true = 1 - theta if direction == "lower" else 1 + theta
                    a = 100 + 100 * cv * rng.standard_normal((draws, n))
                    b = 100 * ratio_true + 100 * cv * rng.standard_normal((draws, n))
                    ma, mb = a.mean(axis=1), b.mean(axis=1)
                    sa, sb = a.std(axis=1, ddof=1), b.std(axis=1, ddof=1)
                    low = high = 0
                    for i in range(draws):  # the library's interval, study by study
                        lo, hi = ratio_of_means_ci(ma[i], sa[i], n, mb[i], sb[i], n, level)
                        low += hi - 1 < -theta
                        high += lo - 1 > theta
                    wrong = (low if direction == "lower" else high) / draws
                    cells.append(f"{direction} cv {cv:g}: {wrong / ((1 - level) / 2):.2f}")
            print(f"   {level * 100:g} %, n = {n}: " + ", ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the studies")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    start = time.monotonic()
    plans(20_000 // scale)
    stops(4_000 // scale)
    ratio(20_000 // scale)
    print(
        f"({time.monotonic() - start:.0f} s; binomial sd of a rate p over N studies:"
        f" √(p(1 − p)/N), 0.3 points at 5 % over 4,000)"
    )


if __name__ == "__main__":
    main()
