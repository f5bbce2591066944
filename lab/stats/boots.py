"""The boot as the unit of replication: how much of an arm's spread lies between boots.

Thousands of iterations inside one boot measure *that boot*: which host pages QEMU got, how
much of a thp twin's memory the kernel backed with huge pages, where the guest kernel put its
own. Kalibera and Jones ("Rigorous benchmarking in reasonable time", ISMM 2013) show that the
variation between such repetitions often dominates, and that an interval from the iterations
alone is then far too narrow. So each arm's samples are split by boot (the run and the boot
id of each sample's attempt) and read with the one-way random-effects model

    y_ij = μ + b_i + e_ij,   b_i ~ (0, σ²_between),   e_ij ~ (0, σ²_within),

estimated by the method of moments (the ANOVA estimator, for boots of unequal sizes): with k
boots of n_i samples, N in all, MSB = Σ n_i (ȳ_i − ȳ)² / (k − 1), MSW = ΣΣ (y_ij − ȳ_i)² /
(N − k) and n₀ = (N − Σ n_i² / N) / (k − 1),

    σ²_within = MSW,   σ²_between = max(0, (MSB − MSW) / n₀),
    ICC = σ²_between / (σ²_between + σ²_within),

and the N samples are worth N / (1 + (n₀ − 1)·ICC) independent ones (the design effect).

With two boots or more in each arm, B against A is read from the boot means, one value per
boot: Welch's interval of the difference of the arms' mean boot means and the delta-method
interval of their ratio on the log scale, at the Welch–Satterthwaite degrees of freedom, as
``lab.stats.difference`` reads the iterations; the verdict reads them as
``lab.stats.verdict`` does. With one boot in an arm there is no between-boot variance to
estimate, and the verdict holds for the boots measured only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lab.stats.bootsneeded import boots_needed
from lab.stats.descriptive import check_confidence
from lab.stats.difference import ratio_of_means_ci, welch_batched
from lab.stats.series import Direction
from lab.stats.verdict import Outcome, Threshold, Verdict, decide

UNIT_BOOT = "boot"
UNIT_ITERATION = "iteration"


@dataclass(frozen=True, eq=False)
class BootComponents:
    """One arm's samples split by boot: the between- and within-boot variances."""

    sizes: np.ndarray  # samples per boot, in the order the boots first appear
    means: np.ndarray  # the mean of each boot
    between: float  # σ²_between (nan with one boot)
    within: float  # σ²_within (nan when no boot has two samples)
    n0: float  # the samples per boot the moments estimator weighs with (n with equal sizes)

    @property
    def boots(self) -> int:
        return int(self.sizes.size)

    @property
    def samples(self) -> int:
        return int(self.sizes.sum())

    @property
    def icc(self) -> float:
        """The intraclass correlation: the share of the variance that lies between boots."""
        total = self.between + self.within
        return self.between / total if total > 0 else math.nan

    @property
    def effective_samples(self) -> float:
        """What the samples are worth as independent ones: N / (1 + (n₀ − 1)·ICC)."""
        if not math.isfinite(self.icc):
            return math.nan
        return self.samples / (1 + (self.n0 - 1) * self.icc)


def components(values: np.ndarray, boots: Sequence[object] | np.ndarray) -> BootComponents:
    """The one-way random-effects ANOVA of ``values`` grouped by ``boots``, by the method of
    moments. ``boots`` are labels aligned with the values: text (the boots in the order they
    first appear), or codes 0 … k−1 (``lab.app.analyse.boot_labels``: in the codes' order),
    which a million samples group in milliseconds instead of a second."""
    x = np.asarray(values, dtype=np.float64)
    labels = np.asarray(boots)
    if labels.size != x.size:
        raise ValueError("values and boots must have the same length")
    if labels.dtype.kind in "iu" and (labels.size == 0 or labels.min() >= 0):
        used = np.bincount(labels) > 0  # codes no sample has (cut as warm-up) are no boot
        group = (np.cumsum(used) - 1)[labels]
        count = int(used.sum())
    else:
        _, first, index = np.unique(labels.astype(str), return_index=True, return_inverse=True)
        order = np.argsort(first)  # the boots in the order they first appear
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        group, count = rank[index], order.size
    sizes = np.bincount(group, minlength=count)
    means = np.bincount(group, weights=x, minlength=count) / np.maximum(sizes, 1)
    k, n = sizes.size, x.size
    within_ss = float(np.sum((x - means[group]) ** 2))
    within = within_ss / (n - k) if n > k else math.nan
    if k < 2:
        return BootComponents(sizes, means, math.nan, within, float(n))
    grand = float(x.mean())
    msb = float(np.sum(sizes * (means - grand) ** 2)) / (k - 1)
    n0 = (n - float(np.sum(sizes.astype(np.float64) ** 2)) / n) / (k - 1)
    between = max(0.0, (msb - within) / n0) if math.isfinite(within) else math.nan
    return BootComponents(sizes, means, between, within, n0)


@dataclass(frozen=True)
class BootDifference:
    """B against A with one value per boot: each arm's boot means."""

    confidence: float
    boots_a: int
    boots_b: int
    mean_a: float  # the mean of A's boot means
    mean_b: float
    diff: float
    diff_ci: tuple[float, float]
    df: float  # Welch–Satterthwaite's, of the boot means
    ratio: float
    ratio_ci: tuple[float, float]

    @property
    def percent(self) -> float:
        return (self.ratio - 1.0) * 100.0 if math.isfinite(self.ratio) else math.nan

    @property
    def percent_ci(self) -> tuple[float, float]:
        return ((self.ratio_ci[0] - 1.0) * 100.0, (self.ratio_ci[1] - 1.0) * 100.0)


def boot_difference(a: np.ndarray, b: np.ndarray, confidence: float) -> BootDifference:
    """Welch's interval of B − A and the ratio's, from the boot means ``a`` and ``b`` (two
    or more each)."""
    level = check_confidence(confidence)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size < 2 or b.size < 2:
        raise ValueError("the boot as the unit needs two boots or more in each arm")
    mean_a, mean_b = float(a.mean()), float(b.mean())
    sd_a, sd_b = float(a.std(ddof=1)), float(b.std(ddof=1))
    low, high, df, _ = welch_batched(a, sd_a, a.size - 1, b, sd_b, b.size - 1, level)
    ratio_ci = ratio_of_means_ci(mean_a, sd_a, a.size, mean_b, sd_b, b.size, level)
    ratio = mean_b / mean_a if mean_a > 0 and mean_b > 0 else math.nan
    return BootDifference(level, a.size, b.size, mean_a, mean_b, mean_b - mean_a, (low, high),
                          df, ratio, ratio_ci)  # fmt: skip


@dataclass(frozen=True)
class BootPair:
    """B against A read with the boot as the unit, and the verdict from it."""

    a: str
    b: str
    difference: BootDifference
    verdict: Verdict
    # an inconclusive verdict: the boots per variant to add for it to settle, holding the
    # boot means' mean and sd as observed (``lab.stats.bootsneeded``); None: decisive, or none
    boots_needed: int | None = None


@dataclass(frozen=True)
class BootAnalysis:
    """Each arm's boots and variance components, and (with two boots or more in every arm)
    the pairs read with the boot as the unit."""

    arms: tuple[tuple[str, BootComponents], ...]  # (arm label, its components)
    pairs: tuple[BootPair, ...]  # empty when an arm has fewer than two boots

    @property
    def unit(self) -> str:
        """What the verdicts replicate over: "boot", or "iteration" within the boots measured."""
        return UNIT_BOOT if self.pairs else UNIT_ITERATION

    @property
    def note(self) -> str:
        """What the verdict means, given the boots: one line for ``lab compare``."""
        counts = ", ".join(f"{label} {c.boots}" for label, c in self.arms)
        if self.pairs:  # each metric's intraclass correlation is in its Boots table
            return (
                f"unit: boot. Boots per arm: {counts}. The intervals and verdicts are read from"
                " the boot means (Welch), so they hold for other boots of these guests, not"
                " only the ones measured"
            )
        if all(c.boots == 1 for _, c in self.arms):
            return (
                f"unit: iteration, within one boot per arm ({counts}): the verdict holds for"
                " this boot only. How much a new boot moves the result is not measured here;"
                " `lab run --reboot-every K` measures it"
            )
        return (
            f"unit: iteration. Boots per arm: {counts}: with one boot in an arm the"
            " between-boot variance cannot be estimated, so the verdict holds for these boots"
            " only; `lab run --reboot-every K` gives each arm several"
        )


def boot_verdict(
    a: tuple[str, BootComponents],
    b: tuple[str, BootComponents],
    direction: Direction,
    threshold: Threshold,
    confidence: float,
    suffix: str = "",
) -> BootPair:
    """B against A from their boot means, and its verdict, which says that the boot is its
    unit; ``suffix`` is added to its text (a Bonferroni note)."""
    (label_a, comp_a), (label_b, comp_b) = a, b
    found = boot_difference(comp_a.means, comp_b.means, confidence)
    verdict = decide(found.percent_ci, direction, threshold, label_a, label_b, confidence,
                     found.diff_ci, found.mean_a)  # fmt: skip
    unit = f" [unit: boot, {found.boots_a} and {found.boots_b} boot means]"
    text = verdict.text + suffix + unit
    needed = None
    if verdict.outcome == Outcome.INCONCLUSIVE:
        needed = boots_needed(comp_a.means, comp_b.means, direction, threshold, found.confidence)
    return BootPair(label_a, label_b, found, Verdict(verdict.outcome, verdict.benefit_ci,
                                                     verdict.threshold, text),
                    needed)  # fmt: skip
