"""Effects of a replicated 2^k factorial design: sign-table estimates, intervals, shares.

Follows Jain, The Art of Computer Systems Performance Analysis, ch. 17-18: effects are
estimated from the sign table, each term's share of the variation is SS_term / SST,
and intervals use the t quantile with 2^k (r - 1) error degrees of freedom.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from scipy import stats


@dataclass(frozen=True)
class Effect:
    term: str
    estimate: float
    ci: tuple[float, float]
    share: float


def _terms(factors: list[str]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for size in range(1, len(factors) + 1):
        out.extend(itertools.combinations(factors, size))
    return out


def effects_2k(
    factors: list[str],
    cells: dict[tuple[int, ...], list[float]],
    confidence: float = 0.90,
) -> list[Effect]:
    """Effects of a full 2^k design; cells map a level tuple (-1/+1 per factor) to its
    r replications. Returns the mean term 'I' first, then main effects, interactions."""
    k = len(factors)
    runs = list(itertools.product((-1, 1), repeat=k))
    reps = {len(cells[run]) for run in runs}
    if len(reps) != 1:
        raise ValueError("every cell needs the same number of replications")
    r = reps.pop()
    n = 2**k
    means = {run: sum(cells[run]) / r for run in runs}
    sse = sum((y - means[run]) ** 2 for run in runs for y in cells[run])
    grand = sum(means.values()) / n
    sst = sum((y - grand) ** 2 for run in runs for y in cells[run])
    dof = n * (r - 1)
    s_q = math.sqrt(sse / dof) / math.sqrt(n * r) if dof > 0 else math.nan
    half = float(stats.t.ppf(0.5 + confidence / 2, dof)) * s_q if dof > 0 else math.nan
    out = [Effect("I", grand, (grand - half, grand + half), math.nan)]
    index = {name: i for i, name in enumerate(factors)}
    for term in _terms(factors):
        q = sum(math.prod(run[index[f]] for f in term) * means[run] for run in runs) / n
        share = n * r * q * q / sst if sst > 0 else math.nan
        out.append(
            Effect(
                "".join(term) if all(len(f) == 1 for f in term) else ":".join(term),
                q,
                (q - half, q + half),
                share,
            )
        )
    return out
