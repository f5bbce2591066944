"""Wrong stops of the boot-level stop rule (lab.stats.bootstop) on simulated A/A twins.

Each stream is two identical twins run boot by boot: a boot's level is drawn with the
between-boot share ICC, its iterations are AR(1) (phi 0.6) around it, and with swaps the
twins' CPU placements (a fixed +/-3 % offset) exchange every other boot. The rule looks after
each boot from the second and stops at the first interval that excludes 0: on A/A every stop
is wrong. Prints the wrong-stop rate against alpha, and its binomial standard error.

    PYTHONPATH=$PWD .venv/bin/python bench/bootstop_errors.py [streams]
"""

from __future__ import annotations

import sys

import numpy as np

from lab.stats.bootstop import boot_look


def boot_means(rng: np.random.Generator, boots: int, icc: float, iters: int, phi: float,
               placement: np.ndarray) -> np.ndarray:  # fmt: skip
    """One twin's boot means: boot level + AR(1) iterations (total variance 1)."""
    level = rng.normal(0.0, np.sqrt(icc), boots)
    e = np.empty((boots, iters))
    e[:, 0] = rng.normal(0.0, 1.0, boots)
    for j in range(1, iters):
        e[:, j] = phi * e[:, j - 1] + np.sqrt(1 - phi**2) * rng.normal(0.0, 1.0, boots)
    return 100.0 + level + placement + np.sqrt(1 - icc) * e.mean(axis=1)


def wrong_stop_rate(streams: int, icc: float, swap: bool, max_boots: int = 10,
                    confidence: float = 0.95, seed: int = 1, iters: int = 30,
                    phi: float = 0.6) -> float:  # fmt: skip
    rng = np.random.default_rng(seed)
    side = np.where(np.arange(max_boots) % 2 == 0, 3.0, -3.0) if swap else np.zeros(max_boots)
    wrong = 0
    for _ in range(streams):
        a = boot_means(rng, max_boots, icc, iters, phi, side)
        b = boot_means(rng, max_boots, icc, iters, phi, -side)
        for k in range(2, max_boots + 1):
            if boot_look(a[:k], b[:k], confidence, max_boots).excludes_zero:
                wrong += 1
                break
    return wrong / streams


def main() -> None:
    streams = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    alpha = 0.05
    se = np.sqrt(alpha * (1 - alpha) / streams)
    print(f"A/A wrong stops, alpha {alpha}, 10 boots max, {streams} streams (se {se:.4f})")
    for swap in (False, True):
        for icc in (0.0, 0.1, 0.5):
            rate = wrong_stop_rate(streams, icc, swap)
            print(f"  icc {icc:<4} swap {'yes' if swap else 'no ':<3}  wrong stops {rate:.4f}")


if __name__ == "__main__":
    main()
