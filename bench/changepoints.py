"""Benchmark: which change-point library finds the known shifts of a metric's history.

Synthetic histories of ``--versions`` versions with ``--samples`` samples each (CV 2 %), 0 to 3
mean shifts of 2–10 % (either sign, at least 15 versions apart), in three noise kinds: normal,
heavy-tailed (Student t with 3 degrees of freedom, scaled to the same CV) and normal with 5 %
outliers (a sample 30 % slower). Every method reads the same series, the per-version medians,
but ``lab-split``, which is ``lab.stats.changes`` itself: PELT-l1 on the medians of each
version's even samples only (it keeps the odd ones for the intervals). A detection is right
when it falls within ±2 versions of a true shift not matched yet. It prints, per method and
noise kind, precision, recall, the share of shift-free histories with a false alarm, and the
time per history.

    python bench/changepoints.py [--histories 40] [--methods pelt,binseg,pelt-l1,edivisive,otava]

The libraries: ruptures (Pelt and binary segmentation with an l2 cost and a BIC penalty
2σ̂²·log n, σ̂ from the median absolute first difference; Pelt with an l1 cost, penalty
2σ̂·log n); MongoDB's signal-processing-algorithms (E-divisive, permutation p < 0.05, 100
permutations); Apache Otava (``compute_change_points``: E-divisive in windows of 50, p < 0.001).
signal-processing-algorithms needs numpy < 2 and Otava numpy < 2.3 and scipy < 1.17, so they
ran in their own virtualenvs; a method whose library is missing is left out with a note. The
series are drawn from ``--seed`` alone; the checksum line shows they match across numpy releases.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

VERSIONS, SAMPLES, CV = 200, 5, 0.02
KINDS = ("normal", "heavy", "outliers")
TOLERANCE = 2


def history(rng: np.random.Generator, kind: str, shifts: int, versions: int, samples: int):
    """(samples, versions × samples; true change indices: the first version after each shift)."""
    while True:
        where = np.sort(rng.choice(np.arange(10, versions - 10), shifts, replace=False))
        if shifts < 2 or np.min(np.diff(where)) >= 15:
            break
    level = np.ones(versions)
    for w in where:
        level[w:] *= 1 + rng.uniform(0.02, 0.10) * rng.choice([-1, 1])
    if kind == "heavy":
        noise = rng.standard_t(3, (versions, samples)) * CV / np.sqrt(3.0)
    else:
        noise = rng.normal(0, CV, (versions, samples))
    x = level[:, None] * (1 + noise)
    if kind == "outliers":
        x = np.where(rng.random(x.shape) < 0.05, x * 1.3, x)
    return x, [int(w) for w in where]


def sigma(y: np.ndarray) -> float:
    """The noise sd of a piecewise-constant series, robust to its jumps."""
    return float(1.4826 * np.median(np.abs(np.diff(y))) / np.sqrt(2))


def ruptures_method(name: str) -> Callable[[np.ndarray], list[int]]:
    import ruptures as rpt

    def detect(y: np.ndarray) -> list[int]:
        s, n = sigma(y), len(y)
        if name == "pelt-l1":
            algo = rpt.Pelt(model="l1", min_size=3, jump=1).fit(y)
            return algo.predict(pen=2 * s * np.log(n))[:-1]
        cls = rpt.Pelt if name == "pelt" else rpt.Binseg
        algo = cls(model="l2", min_size=3, jump=1).fit(y)
        return algo.predict(pen=2 * s * s * np.log(n))[:-1]

    return detect


def lab_split() -> Callable[[np.ndarray], list[int]]:
    """What lab.stats.changes does: PELT-l1 on the medians of each version's even samples
    (the odd ones are kept for the intervals)."""
    from lab.stats.changes import locate

    return lambda x: locate(np.median(x[:, 0::2], axis=1))


def edivisive() -> Callable[[np.ndarray], list[int]]:
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    return lambda y: sorted(e_divisive(y, pvalue=0.05, permutations=100))


def otava() -> Callable[[np.ndarray], list[int]]:
    from otava.analysis import compute_change_points

    return lambda y: [cp.index for cp in compute_change_points(list(map(float, y)))[0]]


METHODS: dict[str, Callable[[], Callable[[np.ndarray], list[int]]]] = {
    "pelt": lambda: ruptures_method("pelt"),
    "binseg": lambda: ruptures_method("binseg"),
    "pelt-l1": lambda: ruptures_method("pelt-l1"),
    "edivisive": edivisive,
    "otava": otava,
    "lab-split": lab_split,
}
WHOLE = {"lab-split"}  # methods that read every sample, not the per-version medians


def matched(found: list[int], true: list[int]) -> int:
    left = list(true)
    hits = 0
    for f in sorted(found):
        near = [t for t in left if abs(t - f) <= TOLERANCE]
        if near:
            left.remove(min(near, key=lambda t: abs(t - f)))
            hits += 1
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=40, help="per kind and shift count")
    parser.add_argument("--versions", type=int, default=VERSIONS)
    parser.add_argument("--samples", type=int, default=SAMPLES)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    data = {
        kind: [
            history(rng, kind, k, args.versions, args.samples)
            for k in (0, 1, 2, 3)
            for _ in range(args.histories)
        ]
        for kind in KINDS
    }
    checksum = sum(float(np.median(x, axis=1).sum()) for kind in KINDS for x, _ in data[kind])
    print(
        f"{args.histories} histories per kind and shift count (0–3), {args.versions} versions"
        f" × {args.samples} samples, CV {CV * 100:g} %; series checksum {checksum:.6f}"
    )
    print(f"{'method':<10} {'noise':<9} {'precision':>9} {'recall':>7} {'false alarm':>11}"
          f" {'ms/history':>10}")  # fmt: skip
    for name in args.methods.split(","):
        try:
            detect = METHODS[name]()
        except ImportError as e:
            print(f"{name:<10} not installed here ({e.name})")
            continue
        for kind in KINDS:
            hits = found = true = alarms = 0
            t0 = time.perf_counter()
            for x, where in data[kind]:
                points = detect(x if name in WHOLE else np.median(x, axis=1))
                hits += matched(points, where)
                found += len(points)
                true += len(where)
                alarms += not where and bool(points)
            ms = (time.perf_counter() - t0) / len(data[kind]) * 1000
            precision = hits / found if found else float("nan")
            print(f"{name:<10} {kind:<9} {precision:9.3f} {hits / true:7.3f}"
                  f" {alarms / args.histories:11.3f} {ms:10.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
