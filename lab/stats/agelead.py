"""How much of one level's difference from another comes from the host's age (issue 42): the
interaction of a two-level factor with a two-level ``age``, as a ratio of ratios.

From the fit of log values in sum-to-zero coding (:mod:`lab.stats.effects`), with q_X the
half-change of factor X and q_XA its interaction with age, X's ratio (high over low level) is
exp(2q_X + 2q_XA) on the aged host and exp(2q_X − 2q_XA) on the fresh one: the age multiplies
X's ratio by exp(4q_XA), the square of the interaction's ``ratio`` (exp(2q_XA)), its interval
the square of the interaction's (a monotone map keeps the coverage). 1 means the host's age
changes nothing of X's difference; with 1 GiB pages against THP, a ratio of times below 1
means more of 1g's lead over thp shows on the aged host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.stats.effects import FactorialEffects

AGE = "age"


@dataclass(frozen=True)
class AgeLead:
    factor: str  # X, e.g. page
    low: str  # X's low level (thp), the ratio's denominator
    high: str  # X's high level (1g)
    young: str  # age's low level (fresh)
    old: str  # age's high level (f80)
    at_young: float  # X's ratio high/low at the young level
    at_old: float  # ... and at the old one
    change: float  # at_old / at_young: what the host's age multiplies X's ratio by
    change_ci: tuple[float, float]

    def sentence(self, confidence: float) -> str:
        low, high = self.change_ci
        return (
            f"{self.factor} × {AGE}: {self.high}/{self.low} is {self.at_young:.3g} at"
            f" {self.young} and {self.at_old:.3g} at {self.old}; the host's age multiplies it"
            f" by {self.change:.3g} ({confidence * 100:g} % interval {low:.3g}–{high:.3g}):"
            f" that is how much of {self.high}'s difference from {self.low} comes from the"
            f" host's age (1: none)"
        )


def age_leads(
    factors: Sequence[str], orders: Mapping[str, Sequence[str]], e: FactorialEffects | None
) -> list[AgeLead]:
    """Each two-level factor's interaction with a two-level ``age`` in the fit ``e`` of
    ``factors``, whose levels ``orders`` gives low first."""
    if e is None or AGE not in factors or len(orders[AGE]) != 2:
        return []
    young, old = orders[AGE]
    by_term = {x.term: x for x in e.effects}
    found = []
    for factor in factors:
        if factor == AGE or len(orders[factor]) != 2:
            continue
        main = by_term.get(factor)
        both = by_term.get(f"{factor}:{AGE}") or by_term.get(f"{AGE}:{factor}")
        if main is None or both is None or main.ratio is None or both.ratio is None:
            continue
        assert both.ratio_ci is not None
        low, high = orders[factor]
        found.append(AgeLead(
            factor, low, high, young, old, main.ratio / both.ratio, main.ratio * both.ratio,
            both.ratio**2, (both.ratio_ci[0] ** 2, both.ratio_ci[1] ** 2),
        ))  # fmt: skip
    return found


def to_json(lead: AgeLead) -> dict[str, Any]:
    return {"factor": lead.factor, "low": lead.low, "high": lead.high, "young": lead.young,
            "old": lead.old, "at_young": lead.at_young, "at_old": lead.at_old,
            "change": lead.change, "change_ci": list(lead.change_ci)}  # fmt: skip
