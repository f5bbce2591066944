"""Simulation: the power a boots plan promises against the power the planned study delivers.

For each cell (ICC of the boot effect, lag-1 r of the iterations within a boot) it draws
``--pilots`` pilots of ``--pilot-boots`` boots × ``--pilot-per-boot`` iterations per arm
(boot effects normal with variance ICC·σ², iterations a stationary AR(1) series of variance
(1 − ICC)·σ² about their boot's level, B better by ``--effect`` of A's mean), plans each
as ``lab plan --from-store`` does (``lab.stats.withinboot.boot_pilot``, then
``lab.stats.bootplan.plan_boots``), runs ``--studies`` studies of the planned boots ×
iterations per boot, and judges each as ``lab compare`` does: ``lab.stats.boots.components``
of each arm, then ``lab.stats.boots.boot_verdict`` on the boot means. It prints per cell:

- **oracle**: the plan from the true σ²_between, σ²_within and r, its promised P and the
  share of ``--studies`` × 25 studies that reach the verdict (the model, without pilot noise);
- **pilot**: the mean promised P of the pilots' plans and the share delivered over all;
- **old**: the plan as it was before issue 40 (the ANOVA's components, r left out).

    python bench/bootplan_power.py [--pilots 60] [--studies 40] [--seed 40]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import signal

from lab.stats.bootplan import BootPlan, Cost, plan_boots
from lab.stats.boots import boot_verdict, components
from lab.stats.verdict import Outcome, Threshold
from lab.stats.withinboot import boot_pilot

MEAN, SD = 100.0, 2.0  # A's mean, the total sd of one iteration (2 % of the mean)
CONFIDENCE, POWER = 0.95, 0.9
THRESHOLD = Threshold(0.005)  # ±0.5 % of A's mean
REBOOT, ITERATION = Cost(60.0, "bench"), Cost(2.0, "bench")
MAX_PER_BOOT = 2000  # the lab's cap is 100,000; a boots-free pilot would plan that many
CELLS = [(icc, r) for icc in (0.0, 0.1, 0.5) for r in (0.0, 0.5)]


def arm(
    rng: np.random.Generator, boots: int, per_boot: int, icc: float, r: float, mean: float
) -> tuple[np.ndarray, np.ndarray]:
    """One arm: (values in iteration order, boot codes)."""
    within = SD * math.sqrt(1 - icc)
    noise = rng.standard_normal((boots, per_boot))
    start = noise[:, :1] * within  # each boot's series stationary from its first iteration
    rest = signal.lfilter([within * math.sqrt(1 - r * r)], [1.0, -r], noise[:, 1:], axis=1,
                          zi=r * start)[0]  # fmt: skip
    x = np.concatenate([start, rest], axis=1) + rng.normal(0, SD * math.sqrt(icc), (boots, 1))
    return (x + mean).ravel(), np.repeat(np.arange(boots), per_boot)


def plan(between: float, within: float, r: float, effect: float) -> BootPlan:
    return plan_boots(between, within, effect * MEAN, REBOOT, ITERATION, CONFIDENCE, POWER,
                      threshold=THRESHOLD, mean=MEAN, max_per_boot=MAX_PER_BOOT,
                      autocorrelation=r, direction="lower")  # fmt: skip


def promised(p: BootPlan) -> float:
    return dict(p.plan.curve)[p.plan.n] if p.boots == p.plan.n else math.nan


def delivered(
    rng: np.random.Generator, p: BootPlan, icc: float, r: float, effect: float, studies: int
) -> int:
    """How many of ``studies`` studies of the plan ``lab compare`` judges "faster"."""
    hits = 0
    for _ in range(studies):
        a = arm(rng, p.boots, p.per_boot, icc, r, MEAN)
        b = arm(rng, p.boots, p.per_boot, icc, r, MEAN * (1 - effect))  # lower is better
        pair = boot_verdict(("A", components(*a)), ("B", components(*b)), "lower", THRESHOLD,
                            CONFIDENCE)  # fmt: skip
        hits += pair.verdict.outcome == Outcome.FASTER
    return hits


def cell(args: argparse.Namespace, rng: np.random.Generator, icc: float, r: float) -> str:
    effect = args.effect
    oracle = plan(SD**2 * icc, SD**2 * (1 - icc), r, effect)
    many = args.studies * 25
    got = delivered(rng, oracle, icc, r, effect, many) / many
    promise, hits, old_promise, old_hits, shape, old_shape = [], 0, [], 0, [], []
    for _ in range(args.pilots):
        arms = [arm(rng, args.pilot_boots, args.pilot_per_boot, icc, r, m)
                for m in (MEAN, MEAN * (1 - effect))]  # fmt: skip
        found = boot_pilot(arms)
        new = plan(found.between, found.within, found.r, effect)
        comps = found.arms  # the ANOVA's own components, as the old plan read them
        spare = np.array([c.samples - c.boots for c in comps])
        old_within = float(np.sum(spare * np.array([c.within for c in comps])) / spare.sum())
        old = plan(float(np.mean([c.between for c in comps])), old_within, 0.0, effect)
        promise.append(promised(new))
        old_promise.append(promised(old))
        shape.append((new.boots, new.per_boot))
        old_shape.append((old.boots, old.per_boot))
        hits += delivered(rng, new, icc, r, effect, args.studies)
        old_hits += delivered(rng, old, icc, r, effect, args.studies)
    total = args.pilots * args.studies

    def median(shapes: list[tuple[int, int]]) -> str:
        boots, per_boot = np.median(np.array(shapes), axis=0)
        return f"{boots:.0f}×{per_boot:.0f}"

    return (
        f"| {icc:g} | {r:g} | {oracle.boots}×{oracle.per_boot} | {promised(oracle):.3f} |"
        f" {got:.3f} | {median(shape)} | {np.nanmean(promise):.3f} | {hits / total:.3f} |"
        f" {median(old_shape)} | {np.nanmean(old_promise):.3f} | {old_hits / total:.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pilots", type=int, default=60)
    parser.add_argument("--studies", type=int, default=40, help="studies per pilot's plan")
    parser.add_argument("--pilot-boots", type=int, default=10)
    parser.add_argument("--pilot-per-boot", type=int, default=20)
    parser.add_argument("--effect", type=float, default=0.02, help="B better by this share")
    parser.add_argument("--seed", type=int, default=40)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(
        f"{args.pilots} pilots of {args.pilot_boots} boots × {args.pilot_per_boot} iterations"
        f" per arm, {args.studies} studies per plan; sd {SD / MEAN:.0%} of the mean, effect"
        f" {args.effect:.1%}, threshold ±{THRESHOLD}, {CONFIDENCE:.0%} confidence, power"
        f" {POWER:g}, reboot {REBOOT.seconds:g} s, iteration {ITERATION.seconds:g} s."
        " Plans as boots×iterations per boot (medians over the pilots); P promised and"
        ' delivered ("faster").'
    )
    print()
    print("| ICC | r | oracle plan | promised | delivered | pilot plan | promised | delivered"
          " | old plan | promised | delivered |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    started = time.perf_counter()
    for icc, r in CELLS:
        print(cell(args, rng, icc, r), flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
