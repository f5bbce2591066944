"""Adjusted p-values for a family of m tests: Holm's step-down and Benjamini–Hochberg's step-up.

A claim of the family stands at level α when its adjusted p is at most α.

- **Holm** (1979) controls the family-wise error rate, the chance of any false claim, at α,
  for any dependence between the tests, and never claims less than Bonferroni: sorted
  p₍₁₎ ≤ … ≤ p₍ₘ₎ become max over j ≤ i of min(1, (m − j + 1)·p₍ⱼ₎).
- **Benjamini–Hochberg** (1995) controls the false discovery rate, the expected share of
  false claims among those made, at α (for independent or positively dependent tests):
  p₍ᵢ₎ become min over j ≥ i of min(1, m·p₍ⱼ₎/j). It claims more than Holm where many
  claims are true, at the price of a weaker promise.

tests/unit/test_sweep_stats.py checks both against statsmodels' ``multipletests``.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import numpy as np


class Correction(StrEnum):
    HOLM = "holm"
    BH = "bh"

    @property
    def method(self) -> str:
        return "Holm" if self is Correction.HOLM else "Benjamini–Hochberg"

    @property
    def promise(self) -> str:
        """What the correction holds at α, in a few words."""
        if self is Correction.HOLM:
            return "the chance of any false verdict among them at most α (family-wise)"
        return (
            "the expected share of false verdicts among those made at most α (false discovery rate)"
        )


def holm(p: Sequence[float]) -> tuple[float, ...]:
    """Holm's step-down adjusted p-values, in the order given."""
    values = np.asarray(p, dtype=np.float64)
    m = values.size
    order = np.argsort(values, kind="stable")
    scaled = np.minimum(1.0, values[order] * (m - np.arange(m)))
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return tuple(float(q) for q in adjusted)


def benjamini_hochberg(p: Sequence[float]) -> tuple[float, ...]:
    """Benjamini–Hochberg's step-up adjusted p-values, in the order given."""
    values = np.asarray(p, dtype=np.float64)
    m = values.size
    order = np.argsort(values, kind="stable")
    scaled = values[order] * m / np.arange(1, m + 1)
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return tuple(float(q) for q in adjusted)


def adjust(p: Sequence[float], correction: Correction) -> tuple[float, ...]:
    return holm(p) if correction is Correction.HOLM else benjamini_hochberg(p)
